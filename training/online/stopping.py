"""Stopping the learner part-way through a batch.

A batch is minutes on a CPU (plan sampling, rollouts, a GRPO step). Closing the learner (Ctrl-C,
the end of a run) sets its stop flag, and each unit of a batch polls it, so the thread ends within
one unit instead of running on into interpreter shutdown, where a thread still inside torch or
llama.cpp aborts the process. A stopped batch saves and publishes nothing; its episodes stay
pending, and a resumed run learns from them from the start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Polled between the units of a batch: True once the learner is closing.
ShouldStop = Callable[[], bool]


class LearningStopped(Exception):  # noqa: N818 - a stop on request, not an error
    """A batch left part-way because the learner was closed (nothing saved, episodes pending)."""


def check_stop(should_stop: ShouldStop | None) -> None:
    """Raise `LearningStopped` when the learner asked to stop."""
    if should_stop is not None and should_stop():
        raise LearningStopped


def stopping_criteria(should_stop: ShouldStop | None) -> Any:
    """A transformers `StoppingCriteriaList` that ends `generate` at the next token once
    `should_stop()` (None without a flag)."""
    if should_stop is None:
        return None
    stop = should_stop  # the closure below does not keep the narrowing
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _Stop(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return torch.full((input_ids.shape[0],), bool(stop()), dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([_Stop()])
