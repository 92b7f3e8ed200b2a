"""mia.training: offline alternating GRPO for the planner and the executor (TRL + PEFT).

Light at import time: the trainers (torch, transformers, trl, peft) load only inside the stage
modules. Public entry points:

- `mia.training.rewards`: the planner and executor reward functions (plain, tested functions).
- `mia.training.data`: QA JSONL -> GRPO datasets; `mia.training.trajectory_data`: the memory's
  trajectory log -> training data (the memory-to-weights half of the loop).
- `mia.training.config.TrainConfig.from_yaml(path)` and `mia.training.run.run_stage(...)`.
"""

from __future__ import annotations

__all__ = ["TrainConfig", "run_stage"]


def __getattr__(name: str):  # lazy: keep `import mia.training` cheap
    if name == "TrainConfig":
        from mia.training.config import TrainConfig

        return TrainConfig
    if name == "run_stage":
        from mia.training.run import run_stage

        return run_stage
    raise AttributeError(f"module 'mia.training' has no attribute {name!r}")
