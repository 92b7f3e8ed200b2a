"""mia.graph: the MIA agent as a LangGraph graph (plus model backends, tools and the judge in
subpackages). `build_graph` and `Context` are the entry points; imports stay lazy."""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:  # pragma: no cover
    from mia.graph.builder import build_graph
    from mia.graph.context import Context

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__, submod_attrs={"builder": ["build_graph"], "context": ["Context"], "result": ["RunResult", "run_question"]}
)
