"""mia.graph.tools: the agent's tools (local hybrid search, Tavily web search, page visits) and the
corpora they search. Names are imported lazily so that `import mia.graph.tools` stays cheap."""

from __future__ import annotations

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "corpus": ["Corpus", "Hit", "corpus_from_paragraphs"],
        "loading": ["load_demo_corpus", "load_corpus", "index_path"],
        "documents": ["read_documents"],
        "search_tool": ["SearchTool"],
        "web_search": ["WebSearchTool"],
        "visit": ["VisitTool"],
        "registry": ["build_tools", "tool_schemas", "render_tool_schemas"],
        "formatting": ["format_hits"],
    },
)
