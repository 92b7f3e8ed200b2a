"""Turning graph state into a `mia.memory.Trajectory` (for reflection, judging and memory)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mia.graph.context import Context
from mia.graph.state import given

if TYPE_CHECKING:
    from mia.memory.trajectory import Trajectory


def build_trajectory(state: Mapping[str, Any], context: Context, **overrides: Any) -> Trajectory:
    """The episode so far as a Trajectory (steps, plan, replan, answer, usage, used memories)."""
    from mia.memory.trajectory import Trajectory

    existing = state.get("trajectory") or {}
    values: dict[str, Any] = {
        "namespace": context.namespace,
        "question": state.get("question", ""),
        "caption": given(state, "caption") or "",
        "plan": state.get("plan") or "",
        "replan": state.get("replan") or "",
        "steps": [s for s in state.get("steps") or [] if isinstance(s, dict)],
        "answer": state.get("answer") or "",
        "gold_answers": list(given(state, "gold_answers") or []),
        "used_memory_ids": list(state.get("used_memory_ids") or []),
        "usage": state.get("usage") or {},
        "source": f"mia.graph:{context.memory_mode}",
    }
    if existing.get("id"):
        values["id"] = existing["id"]
    values.update(overrides)
    return Trajectory(**values)
