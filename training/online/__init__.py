"""mia.training.online: test-time learning, the planner keeps learning while it answers.

The answer path hands each answered question to an `OnlineLearner` (a background thread) through
a durable `EpisodeQueue`; every K questions the learner samples n plans per question, scores them
(ground truth, or the reviewer panel without it), takes a GRPO step on the planner LoRA, saves a
new version in the `AdapterRegistry` (with rollback) and swaps it into the served planner; the
`MemoryLoop` turns the rollouts into memories. `LearningSession` wires it all to the graph.
Heavy imports (torch, peft) happen only when a policy is built.
"""

from __future__ import annotations

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "config": ["OnlineConfig", "is_closed_model"],
        "episodes": ["OnlineEpisode", "EpisodeQueue"],
        "registry": ["AdapterRegistry", "RollbackPolicy"],
        "learner": ["OnlineLearner"],
        "trainer": ["GRPOBatchTrainer", "MemoryOnlyTrainer", "BatchResult"],
        "rollouts": ["RolloutScorer", "Rollout"],
        "memory_loop": ["MemoryLoop"],
        "policy": ["PlannerPolicy"],
        "session": ["LearningSession", "MEMORY_ONLY_NOTICE"],
    },
)
