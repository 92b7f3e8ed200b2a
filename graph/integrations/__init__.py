"""MIA's memory for other LangGraph / LangChain apps: a `BaseStore` (`MiaStore`), tools
(`memory_tools`) and a retriever (`MiaWorkflowRetriever`). Imports stay lazy so that importing
the package costs nothing until one of them is used."""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:  # pragma: no cover
    from mia.graph.integrations.retriever import MiaWorkflowRetriever
    from mia.graph.integrations.store import MiaStore
    from mia.graph.integrations.tools import memory_tools

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__, submod_attrs={"store": ["MiaStore"], "retriever": ["MiaWorkflowRetriever"], "tools": ["memory_tools"]}
)
