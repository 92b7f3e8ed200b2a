"""Entry point of `mia train`: one stage, or the alternating pipeline (executor, then planner;
the executor SFT stage first when the config names episodes).

The paper trains the executor first against a frozen planner, then the planner against the
frozen *trained* executor (mia-reference §5). `alternate` does exactly that, for `rounds`
rounds, each stage in its own sub-folder, each reusing the other's latest adapter.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from mia.training.config import TrainConfig
from mia.training.trainer_setup import StageResult


def run_stage(
    cfg: TrainConfig, stage: str, *, resume: bool = True, max_steps: int | None = None, rounds: int = 1
) -> list[StageResult]:
    """Run `planner`, `executor` or `alternate`; returns the finished stages in order."""
    if stage == "planner":
        from mia.training.planner_stage import train_planner

        return [train_planner(cfg, resume=resume, max_steps=max_steps)]
    if stage == "executor":
        from mia.training.executor_stage import train_executor

        return [train_executor(cfg, resume=resume, max_steps=max_steps)]
    if stage == "executor-sft":
        from mia.training.sft_stage import train_executor_sft

        return [train_executor_sft(cfg, resume=resume, max_steps=max_steps)]
    if stage == "alternate":
        return alternate(cfg, resume=resume, max_steps=max_steps, rounds=rounds)
    raise ValueError(f"unknown stage {stage!r}; expected planner, executor, executor-sft or alternate")


def alternate(
    cfg: TrainConfig, *, resume: bool = True, max_steps: int | None = None, rounds: int = 1
) -> list[StageResult]:
    """Executor first (frozen planner), then planner (frozen trained executor), `rounds` times.
    With `sft.episodes` set, the executor first learns from its right logged episodes (SFT) and
    the executor GRPO stage continues that adapter."""
    from mia.training.executor_stage import train_executor
    from mia.training.planner_stage import train_planner

    root = Path(cfg.output_dir)
    results: list[StageResult] = []
    planner_spec = cfg.executor.planner_model
    executor_cfg, planner_cfg = cfg, cfg
    if cfg.sft.episodes:
        from mia.training.sft_stage import train_executor_sft

        sft = train_executor_sft(cfg, resume=resume, output_dir=root / "executor-sft")
        results.append(sft)
        executor_cfg = with_base(cfg, sft.spec)
    for r in range(1, rounds + 1):
        executor = train_executor(
            executor_cfg,
            planner_spec=planner_spec,
            resume=resume,
            max_steps=max_steps,
            output_dir=root / f"round{r}-executor",
        )
        results.append(executor)
        planner = train_planner(
            planner_cfg,
            executor_spec=executor.spec,
            resume=resume,
            max_steps=max_steps,
            output_dir=root / f"round{r}-planner",
        )
        results.append(planner)
        planner_spec = planner.spec
        # The next round continues both adapters instead of starting fresh LoRAs.
        executor_cfg = with_base(cfg, executor.spec)
        planner_cfg = with_base(cfg, planner.spec)
    return results


def with_base(cfg: TrainConfig, spec: str) -> TrainConfig:
    """The config with another policy base: a stage continues the adapter an earlier stage made."""
    return replace(cfg, base_model=spec)
