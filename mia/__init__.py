"""mia: the Memory Intelligence Agent as a LangGraph application with persistent memory.

The public API is re-exported lazily so that `import mia` stays cheap (no torch, no chromadb)
until a graph is actually built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover
    from mia.graph.builder import build_graph
    from mia.graph.chat import build_chat_graph
    from mia.graph.context import Context
    from mia.graph.integrations import MiaStore, MiaWorkflowRetriever, memory_tools
    from mia.graph.nodes.deps import Deps

# The one lazy-import mechanism of the project (every package __init__ uses lazy_loader.attach).
__getattr__, __dir__, _lazy = lazy_loader.attach(
    __name__,
    submod_attrs={
        "graph.builder": ["build_graph"],
        "graph.context": ["Context"],
        "graph.chat": ["build_chat_graph"],
        "graph.integrations.store": ["MiaStore"],
        "graph.integrations.retriever": ["MiaWorkflowRetriever"],
        "graph.integrations.tools": ["memory_tools"],
        "graph.nodes.deps": ["Deps"],
    },
)
__all__ = [*_lazy, "__version__"]
