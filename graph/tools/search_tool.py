"""`SearchTool`: the agent's `search` over a local `Corpus` (offline; the paper's wiki retriever)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from mia.graph.tools.arguments import query_list
from mia.graph.tools.base import Observation, ObservationTool, unique_sources
from mia.graph.tools.corpus import Corpus
from mia.graph.tools.formatting import format_results

DEFAULT_MAX_CHARS = 4096  # the paper truncates tool text to 4096 characters in training

QUERY_LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query_list": {
            "type": "array",
            "items": {"type": "string"},
            "description": "One or more complete, self-contained search queries (full questions or "
            "phrases naming the entity), searched one by one.",
        }
    },
    "required": ["query_list"],
}


class SearchTool(ObservationTool):
    """Hybrid (BM25 + embedding) search over the configured corpus; top-k paragraphs per query."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "search"
    description: str = (
        "Search the knowledge corpus. Give a list of complete queries; each returns the "
        "top matching paragraphs as numbered 'Doc i (Title: ...) text' lines."
    )
    args_schema: Any = QUERY_LIST_SCHEMA
    primary_arg: str = "query_list"
    corpus: Corpus
    top_k: int = 3
    max_chars: int = DEFAULT_MAX_CHARS

    def __init__(self, corpus: Corpus, **kwargs: Any) -> None:
        super().__init__(corpus=corpus, **kwargs)

    def observe(self, args: dict[str, Any]) -> Observation:
        queries = query_list(args, self.name)
        results = self.corpus.search(queries, k=self.top_k)
        return Observation(
            format_results(queries, results, self.max_chars),
            unique_sources(hit.title for hits in results for hit in hits),
        )
