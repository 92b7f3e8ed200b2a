"""mia: the Memory Intelligence Agent as a LangGraph application with persistent memory.

The public API is re-exported lazily so that `import mia` stays cheap (no torch, no chromadb)
until a graph is actually built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Context", "Deps", "MiaStore", "MiaWorkflowRetriever", "build_graph", "memory_tools", "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from mia.graph.builder import build_graph
    from mia.graph.context import Context
    from mia.graph.integrations import MiaStore, MiaWorkflowRetriever, memory_tools
    from mia.graph.nodes.deps import Deps

_LAZY = {
    "MiaStore": "mia.graph.integrations.store",
    "MiaWorkflowRetriever": "mia.graph.integrations.retriever",
    "memory_tools": "mia.graph.integrations.tools",
    "Deps": "mia.graph.nodes.deps",
}


def __getattr__(name: str) -> Any:
    if name == "build_graph":
        from mia.graph.builder import build_graph

        return build_graph
    if name == "Context":
        from mia.graph.context import Context

        return Context
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mia' has no attribute {name!r}")
