"""Executor SFT stage: a LoRA executor learns from its own right plan-following episodes
(rejection sampling, mia.training.sft_data) with TRL's SFTTrainer, the loss on its turns only.

This is the paper's first stage done the cheap way: GRPO needs rollouts (minutes a step on a CPU),
SFT needs one forward and backward pass per logged turn. The adapter continues into the executor
GRPO stage (`alternate`) or is served as is (`llamacpp:<base>+<adapter>`).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from mia.training.artifacts import (
    LOSS_CURVE_FILE,
    METRICS_FILE,
    metrics_callback,
    plot_reward_curve,
    read_metrics,
    reward_series,
    time_limit_callback,
    write_adapter_meta,
)
from mia.training.config import TrainConfig
from mia.training.sft_data import Episode, read_episodes, sft_rows
from mia.training.trainer_setup import StageResult, latest_checkpoint, make_policy, save_adapter

log = logging.getLogger(__name__)
STAGE = "executor-sft"


def read_sft_episodes(cfg: TrainConfig, root: Path | None = None) -> tuple[list[Episode], list[str]]:
    """The episodes of `sft.episodes` and the questions of `sft.exclude` (read before any model
    loads, so a bad pattern fails in a second)."""
    if not cfg.sft.episodes:
        raise ValueError("sft.episodes names no episode files: list results.jsonl(.gz) or trajectories.jsonl globs")
    banned = [e.question for e in read_episodes(cfg.sft.exclude, root)] if cfg.sft.exclude else []
    return read_episodes(cfg.sft.episodes, root), banned


def sft_dataset_rows(
    cfg: TrainConfig, tokenizer: Any, episodes: list[Episode], banned: list[str]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows the stage trains on, and what was kept and dropped (written beside the adapter)."""
    settings = cfg.sft
    rows = sft_rows(
        episodes,
        exclude_questions=banned,
        plans_only=settings.plans_only,
        max_tool_calls=settings.max_tool_calls,
    )
    kept, too_long = [], 0
    for row in rows:
        n = len(
            tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=True, return_dict=True)[
                "input_ids"
            ]
        )
        if n > settings.max_length:
            too_long += 1
            continue
        kept.append({**row, "tokens": n})
    if settings.limit is not None:
        kept = kept[: settings.limit]
    if not kept:
        raise ValueError(f"no SFT rows: {len(episodes)} episodes gave none that is right, usable and short enough")
    stats = {
        "episodes": len(episodes),
        "excluded_questions": len(set(banned)),
        "rows": len(kept),
        "questions": len({r["question"] for r in kept}),
        "rows_with_plan": sum(1 for r in kept if r["planned"]),
        "dropped_too_long": too_long,
        "tokens_mean": round(sum(r["tokens"] for r in kept) / len(kept), 1),
    }
    return kept, stats


def train_executor_sft(
    cfg: TrainConfig,
    *,
    resume: bool = True,
    max_steps: int | None = None,
    output_dir: Path | None = None,
    root: Path | None = None,
) -> StageResult:
    """Run the SFT stage; returns a StageResult (adapter folder, steps; `final_reward` is None)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import SFTTrainer

    out = Path(output_dir or cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    episodes, banned = read_sft_episodes(cfg, root)
    model, tokenizer, peft_config, base = make_policy(cfg)
    rows, stats = sft_dataset_rows(cfg, tokenizer, episodes, banned)
    log.info("executor SFT on %s", stats)
    (out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2, default=str))
    with (out / "sft_rows.jsonl").open("w", encoding="utf-8") as fh:  # what was trained on, to read back
        for row in rows:
            fh.write(json.dumps({"question": row["question"], "source": row["source"], "tokens": row["tokens"]}) + "\n")
    metrics_path = out / METRICS_FILE
    callbacks = [metrics_callback(metrics_path, STAGE)]
    if cfg.time_limit_minutes:
        callbacks.append(time_limit_callback(cfg.time_limit_minutes))
    tokenizer.padding_side = "right"  # SFT pads on the right (the left padding is for generation)
    trainer = SFTTrainer(
        model=model,
        args=cfg.sft_args(out, max_steps=max_steps),
        train_dataset=Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows]),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
    )
    checkpoint = latest_checkpoint(out) if resume else None
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)

    adapter_dir = out / "adapter"
    save_adapter(trainer, adapter_dir)
    records = read_metrics(metrics_path)
    _, losses = reward_series(records, STAGE, "loss")
    write_adapter_meta(
        adapter_dir,
        base_model=str(base),
        base_spec=cfg.base_model,
        stage=STAGE,
        role="executor",
        data={"episode_files": cfg.sft.episodes, "exclude": cfg.sft.exclude, **stats},
        steps=trainer.state.global_step,
        reward=None,
        loss_first=losses[0] if losses else None,
        loss_last=losses[-1] if losses else None,
        lora={"r": cfg.lora.r, "alpha": cfg.lora.alpha, "target_modules": cfg.lora.target_modules},
        config_name=cfg.name,
    )
    curve = plot_reward_curve(records, out / LOSS_CURVE_FILE, title=f"{cfg.name}: executor SFT loss", key="loss")
    return StageResult(
        STAGE, adapter_dir, base, trainer.state.global_step, None, metrics_path, curve, base_spec=cfg.base_model
    )


__all__ = ["STAGE", "read_sft_episodes", "sft_dataset_rows", "train_executor_sft"]
