"""mia.graph: the MIA agent as a LangGraph graph (plus model backends, tools and the judge in
subpackages). `build_graph` and `Context` are the entry points; imports stay lazy."""

from __future__ import annotations

from typing import Any

__all__ = ["Context", "RunResult", "build_graph", "run_question"]


def __getattr__(name: str) -> Any:
    if name == "build_graph":
        from mia.graph.builder import build_graph

        return build_graph
    if name == "Context":
        from mia.graph.context import Context

        return Context
    if name in ("RunResult", "run_question"):
        from mia.graph import result

        return getattr(result, name)
    raise AttributeError(f"module 'mia.graph' has no attribute {name!r}")
