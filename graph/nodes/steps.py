"""Reading the trajectory steps a run logged (plain dicts in state or in results.jsonl)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def searches_made(steps: Iterable[Any]) -> list[str]:
    """Every search query of these steps (state or logged step dicts), in order."""
    return [
        str(query)
        for step in steps
        if isinstance(step, dict) and step.get("kind") == "tool_call"
        for query in (step.get("args") or {}).get("query_list") or []
    ]


__all__ = ["searches_made"]
