"""Executor SFT stage: a LoRA executor learns from its own right plan-following episodes
(rejection sampling, mia.training.sft_data), and with `sft.reading` from its wrong answers whose
results held the gold (mia.training.reading_rows), with TRL's SFTTrainer, the loss on its turns only.

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

from mia.training.config import TrainConfig
from mia.training.reading_rows import reading_rows
from mia.training.sft_data import Episode, read_episodes, search_counts, sft_rows
from mia.training.trainer_setup import StageResult, make_policy, stage_callbacks, train_and_save

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
        attempts=settings.attempts,
    )
    if settings.reading:  # after the right rows: never a question they already teach
        rows += reading_rows(episodes, skip_questions=[*banned, *(r["question"] for r in rows)])
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
        "reading_rows": sum(1 for r in kept if r.get("reading")),
        "dropped_too_long": too_long,
        "tokens_mean": round(sum(r["tokens"] for r in kept) / len(kept), 1),
        # the executor's own searches in every right first attempt: one search is all it can learn
        # from its own episodes when every one made one (issue 37)
        "right_first_attempts_by_searches": dict(sorted(search_counts(episodes, banned).items())),
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
    episodes, banned = read_sft_episodes(cfg, root)
    model, tokenizer, peft_config, base = make_policy(cfg)
    rows, stats = sft_dataset_rows(cfg, tokenizer, episodes, banned)
    log.info("executor SFT on %s", stats)
    callbacks = stage_callbacks(cfg, out, STAGE)
    with (out / "sft_rows.jsonl").open("w", encoding="utf-8") as fh:  # what was trained on, to read back
        for row in rows:
            fh.write(
                json.dumps(
                    {
                        "question": row["question"],
                        "source": row["source"],
                        "tokens": row["tokens"],
                        **({"reading": True} if row.get("reading") else {}),
                    }
                )
                + "\n"
            )
    tokenizer.padding_side = "right"  # SFT pads on the right (the left padding is for generation)
    trainer = SFTTrainer(
        model=model,
        args=cfg.sft_args(out, max_steps=max_steps),
        train_dataset=Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows]),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
    )
    data = {"episode_files": cfg.sft.episodes, "exclude": cfg.sft.exclude, **stats}
    return train_and_save(cfg, STAGE, out, trainer, base, resume=resume, data=data, metric="loss", role="executor")


__all__ = ["STAGE", "read_sft_episodes", "sft_dataset_rows", "train_executor_sft"]
