"""mia: the Memory Intelligence Agent as a LangGraph application with persistent memory.

The public API is re-exported lazily so that `import mia` stays cheap (no torch, no chromadb)
until a graph is actually built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Context", "build_graph", "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from mia.graph.builder import build_graph
    from mia.graph.context import Context


def __getattr__(name: str) -> Any:
    if name == "build_graph":
        from mia.graph.builder import build_graph

        return build_graph
    if name == "Context":
        from mia.graph.context import Context

        return Context
    raise AttributeError(f"module 'mia' has no attribute {name!r}")
