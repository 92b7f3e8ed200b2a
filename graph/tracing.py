"""Which role made a model call, for LangSmith and any callback handler.

Several roles may share one loaded model (the planner and the judge both default to the same
GGUF), so the role cannot live on the model object. Each node runs inside a LangSmith tracing
context that adds the tag `role:<role>` and the metadata `{"role": <role>}`; langchain-core puts
both on every run started inside it (model calls, the judge's and the compressor's included),
whether or not tracing is on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from langsmith.run_helpers import get_tracing_context, tracing_context


def role_tag(role: str) -> str:
    """The tag of one role's runs (filter on it in LangSmith)."""
    return f"role:{role}"


def in_role(fn: Callable[..., Any], role: str) -> Callable[..., Any]:
    """`fn` (a graph node) running with its role's tag and metadata added to the current ones.
    The signature is kept (functools.wraps), so LangGraph still injects `runtime`."""

    @functools.wraps(fn)
    def node(*args: Any, **kwargs: Any) -> Any:
        current = get_tracing_context()
        tags = [*(current.get("tags") or []), role_tag(role)]
        metadata = {**(current.get("metadata") or {}), "role": role}
        with tracing_context(**{**current, "tags": tags, "metadata": metadata}):
            return fn(*args, **kwargs)

    return node
