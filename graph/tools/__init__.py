"""mia.graph.tools: the agent's tools (local hybrid search, Tavily web search, page visits) and the
corpora they search. Names are imported lazily so that `import mia.graph.tools` stays cheap."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Corpus": "mia.graph.tools.corpus",
    "Hit": "mia.graph.tools.corpus",
    "corpus_from_paragraphs": "mia.graph.tools.corpus",
    "load_demo_corpus": "mia.graph.tools.loading",
    "load_corpus": "mia.graph.tools.loading",
    "index_path": "mia.graph.tools.loading",
    "read_documents": "mia.graph.tools.documents",
    "SearchTool": "mia.graph.tools.search_tool",
    "WebSearchTool": "mia.graph.tools.web_search",
    "VisitTool": "mia.graph.tools.visit",
    "build_tools": "mia.graph.tools.registry",
    "tool_schemas": "mia.graph.tools.registry",
    "render_tool_schemas": "mia.graph.tools.registry",
    "format_hits": "mia.graph.tools.formatting",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mia.graph.tools' has no attribute {name!r}")
