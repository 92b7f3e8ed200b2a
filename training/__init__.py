"""mia.training: offline alternating GRPO for the planner and the executor (TRL + PEFT).

Light at import time: the trainers (torch, transformers, trl, peft) load only inside the stage
modules. Public entry points:

- `mia.training.rewards`: the planner and executor reward functions (plain, tested functions).
- `mia.training.data`: QA JSONL -> GRPO datasets; `mia.training.trajectory_data`: the memory's
  trajectory log -> training data (the memory-to-weights half of the loop).
- `mia.training.config.TrainConfig.from_yaml(path)` and `mia.training.run.run_stage(...)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:  # pragma: no cover
    from mia.training.config import TrainConfig
    from mia.training.run import run_stage

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__, submod_attrs={"config": ["TrainConfig"], "run": ["run_stage"]}
)
