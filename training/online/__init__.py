"""mia.training.online: test-time learning, the planner keeps learning while it answers.

The answer path hands each answered question to an `OnlineLearner` (a background thread) through
a durable `EpisodeQueue`; every K questions the learner samples n plans per question, scores them
(ground truth, or the reviewer panel without it), takes a GRPO step on the planner LoRA, saves a
new version in the `AdapterRegistry` (with rollback) and swaps it into the served planner; the
`MemoryLoop` turns the rollouts into memories. `LearningSession` wires it all to the graph.
Heavy imports (torch, peft) happen only when a policy is built.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "OnlineConfig": "config",
    "is_closed_model": "config",
    "OnlineEpisode": "episodes",
    "EpisodeQueue": "episodes",
    "AdapterRegistry": "registry",
    "RollbackPolicy": "registry",
    "OnlineLearner": "learner",
    "GRPOBatchTrainer": "trainer",
    "MemoryOnlyTrainer": "trainer",
    "BatchResult": "trainer",
    "RolloutScorer": "rollouts",
    "Rollout": "rollouts",
    "MemoryLoop": "memory_loop",
    "PlannerPolicy": "policy",
    "LearningSession": "session",
    "MEMORY_ONLY_NOTICE": "session",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"mia.training.online.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'mia.training.online' has no attribute {name!r}")
