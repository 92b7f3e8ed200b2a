"""MIA's memory for other LangGraph / LangChain apps: a `BaseStore` (`MiaStore`), tools
(`memory_tools`) and a retriever (`MiaWorkflowRetriever`). Imports stay lazy so that importing
the package costs nothing until one of them is used."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from mia.graph.integrations.retriever import MiaWorkflowRetriever
    from mia.graph.integrations.store import MiaStore
    from mia.graph.integrations.tools import memory_tools

_LAZY = {
    "MiaStore": "mia.graph.integrations.store",
    "MiaWorkflowRetriever": "mia.graph.integrations.retriever",
    "memory_tools": "mia.graph.integrations.tools",
}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mia.graph.integrations' has no attribute {name!r}")
