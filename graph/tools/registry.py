"""Which tools the executor gets, and their JSON schemas for a text (ReAct) prompt.

Why one builder: the graph, the trainer and the CLI all configure tools from the same few knobs
(corpus, web search on/off, top-k), and must agree on names and argument shapes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from mia.graph.tools.corpus import Corpus, corpus_from_paragraphs
from mia.graph.tools.search_tool import DEFAULT_MAX_CHARS, SearchTool

log = logging.getLogger(__name__)


def build_tools(
    corpus: Corpus | str | Path | Sequence[Mapping[str, Any]] | None = "demo",
    *,
    web_search: bool = False,
    top_k: int = 3,
    max_chars: int = DEFAULT_MAX_CHARS,
    tavily_api_key: str | None = None,
    tavily_base_url: str | None = None,
    tavily_client: Any = None,
    visit: bool = True,
    data_dir: str | Path | None = None,
) -> list[BaseTool]:
    """The executor's tools.

    - `corpus`: a `Corpus`, a list of `{title, text}` paragraphs (sandbox), `"demo"`, a path or an
      index name (see `load_corpus`), or None for no local search.
    - `web_search`: add `web_search` (Tavily) and `visit` when a Tavily key is available (argument,
      or TAVILY_API_KEY); without a key a warning is logged and only local search is offered.
    Raises ValueError when this leaves no tool at all.
    """
    tools: list[BaseTool] = []
    if corpus is not None:
        if isinstance(corpus, (str, Path)):
            from mia.graph.tools.loading import load_corpus

            corpus = load_corpus(str(corpus), data_dir=data_dir)
        elif not isinstance(corpus, Corpus):
            corpus = corpus_from_paragraphs(corpus)
        tools.append(SearchTool(corpus, top_k=top_k, max_chars=max_chars))
    if web_search:
        key = tavily_api_key or _tavily_key()
        if key or tavily_client is not None:
            from mia.graph.tools.visit import VisitTool
            from mia.graph.tools.web_search import WebSearchTool

            tools.append(
                WebSearchTool(
                    top_k=top_k, max_chars=max_chars, api_key=key, base_url=tavily_base_url, client=tavily_client
                )
            )
            if visit:
                tools.append(
                    VisitTool(
                        max_chars=max(max_chars, 2000), api_key=key, base_url=tavily_base_url, client=tavily_client
                    )
                )
        else:
            log.warning("web search was requested but TAVILY_API_KEY is not set; using local search only")
    if not tools:
        raise ValueError("no tools configured: give a corpus, or enable web_search with TAVILY_API_KEY set")
    return tools


def tool_schemas(tools: Sequence[BaseTool]) -> list[dict[str, Any]]:
    """OpenAI-style function schemas ({"type": "function", "function": {...}}), one per tool."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return [convert_to_openai_tool(tool) for tool in tools]


def render_tool_schemas(tools: Sequence[BaseTool]) -> str:
    """One JSON schema per line, the Qwen `<tools>` block format the paper's prompt uses."""
    return "\n".join(json.dumps(schema, ensure_ascii=False) for schema in tool_schemas(tools))


def _tavily_key() -> str | None:
    """TAVILY_API_KEY from the environment or `.env` (the settings)."""
    from mia.graph.models.settings import read_settings

    secret = read_settings().tavily_api_key
    return secret.get_secret_value() if secret is not None else None
