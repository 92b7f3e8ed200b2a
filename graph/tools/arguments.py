"""Lenient reading of tool arguments written by small models.

Why lenient: the paper's own inference accepts `query` and `queries` besides `query_list`, and a
135M model often writes a bare string where a list is asked for. What cannot be read becomes a
`ToolArgumentError` whose message tells the model exactly what to write instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

QUERY_KEYS = ("query_list", "queries", "query")
MAX_QUERIES = 5


class ToolArgumentError(ValueError):
    """Arguments the tool cannot use; str(err) is shown to the model as the observation."""


def query_list(args: Mapping[str, Any], tool: str = "search", max_queries: int = MAX_QUERIES) -> list[str]:
    """The list of queries from `query_list` (or the `queries` / `query` aliases)."""
    example = f'{{"name": "{tool}", "arguments": {{"query_list": ["first complete question", "second one"]}}}}'
    present = [key for key in QUERY_KEYS if args.get(key) not in (None, "", [])]
    present = present or [key for key in QUERY_KEYS if key in args and args[key] is not None]
    if not present:
        got = ", ".join(sorted(map(str, args))) or "no arguments"
        raise ToolArgumentError(
            f'Error: {tool} needs "query_list", a list of complete search queries (got {got}). Call it like {example}'
        )
    value = args[present[0]]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ToolArgumentError(
            f'Error: "{present[0]}" must be a list of query strings, got '
            f"{type(value).__name__} {value!r:.80}. Call it like {example}"
        )
    queries: list[str] = []
    for item in value:
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            item = str(item)
        if not isinstance(item, str):
            raise ToolArgumentError(
                f"Error: every query must be a string, got {type(item).__name__} {item!r:.80}. Call it like {example}"
            )
        if item.strip():
            queries.append(" ".join(item.split()))
    if not queries:
        raise ToolArgumentError(
            f'Error: "{present[0]}" is empty; give at least one complete query. Call it like {example}'
        )
    return queries[:max_queries]
