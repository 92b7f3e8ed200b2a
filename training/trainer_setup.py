"""What every training stage shares: the policy (base + LoRA), the trainer's callbacks,
resumption and the artifacts written when a stage ends (both GRPO stages and the executor SFT)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mia.training.artifacts import (
    CURVE_FILE,
    LOSS_CURVE_FILE,
    adapter_spec,
    METRICS_FILE,
    metrics_callback,
    plot_reward_curve,
    read_metrics,
    reward_series,
    time_limit_callback,
    write_adapter_meta,
)
from mia.training.config import TrainConfig
from mia.training.policy import load_model, load_tokenizer, resolve_weights

log = logging.getLogger(__name__)


@dataclass
class StageResult:
    """Where a finished stage put its adapter, and what it measured."""

    stage: str
    adapter_dir: Path
    base_model: Path
    steps: int
    final_reward: float | None
    metrics_path: Path
    curve_path: Path | None
    base_spec: str = ""

    @property
    def spec(self) -> str:
        """The model spec that serves this adapter (see artifacts.adapter_spec)."""
        return adapter_spec(self.base_spec or str(self.base_model), self.base_model, self.adapter_dir)


def lora_config(cfg: TrainConfig) -> Any:
    """peft LoraConfig from the run's `lora:` section."""
    from peft import LoraConfig

    return LoraConfig(
        r=cfg.lora.r,
        lora_alpha=cfg.lora.alpha,
        lora_dropout=cfg.lora.dropout,
        target_modules=cfg.lora.target_modules,
        task_type="CAUSAL_LM",
    )


def make_policy(cfg: TrainConfig) -> tuple[Any, Any, Any, Path]:
    """(model, tokenizer, peft_config or None, base folder). A `+adapter` base continues training
    that adapter (no new LoRA); otherwise a fresh LoRA is added by the trainer."""
    import torch

    if cfg.device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(
            f"config {cfg.name!r} asks for device {cfg.device!r} but no CUDA GPU is available; "
            "use a CPU config (training/configs/cpu-smollm2.yaml) or --set device=cpu"
        )
    torch.manual_seed(cfg.seed)
    if cfg.torch_threads:
        torch.set_num_threads(int(cfg.torch_threads))
    base, adapter = resolve_weights(cfg.base_model)
    tokenizer = load_tokenizer(base)
    if adapter is not None:
        model = load_model(base, adapter, dtype=cfg.dtype, device=cfg.device, trainable_adapter=True)
        return model, tokenizer, None, base
    from transformers import AutoModelForCausalLM

    from mia.training.policy import torch_dtype

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch_dtype(cfg.dtype, cfg.device))
    return model, tokenizer, lora_config(cfg), base


def save_adapter(trainer: Any, adapter_dir: Path) -> None:
    """The LoRA weights and their config only: `trainer.save_model` also writes the tokenizer (11 MB
    for Qwen) and the training arguments, which an adapter served on its base never reads."""
    trainer.accelerator.unwrap_model(trainer.model).save_pretrained(str(adapter_dir))


def latest_checkpoint(output_dir: Path) -> Path | None:
    """The newest checkpoint-N folder of a run, to resume from."""
    found = [p for p in output_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return max(found, key=lambda p: int(p.name.split("-")[-1])) if found else None


def stage_callbacks(cfg: TrainConfig, output_dir: Path, stage: str) -> list[Any]:
    """Every stage's start: its folder, the config it ran with, and the trainer callbacks (the
    metrics log, the time limit)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2, default=str))
    callbacks = [metrics_callback(output_dir / METRICS_FILE, stage)]
    if cfg.time_limit_minutes:
        callbacks.append(time_limit_callback(cfg.time_limit_minutes))
    return callbacks


def train_and_save(
    cfg: TrainConfig,
    stage: str,
    output_dir: Path,
    trainer: Any,
    base: Path,
    *,
    resume: bool,
    data: dict[str, Any],
    metric: str = "reward",
    **meta: Any,
) -> StageResult:
    """Every stage's end: train (from the newest checkpoint when resuming), save the adapter, its
    metadata and the curve of `metric` (GRPO's mean reward, whose last 5 steps are the stage's
    final reward; SFT's loss)."""
    checkpoint = latest_checkpoint(output_dir) if resume else None
    if checkpoint is not None:
        log.info("resuming %s from %s", stage, checkpoint)
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)

    adapter_dir = output_dir / "adapter"
    save_adapter(trainer, adapter_dir)
    metrics_path = output_dir / METRICS_FILE
    records = read_metrics(metrics_path)
    _, values = reward_series(records, stage, metric)
    tail = values[-5:]
    final_reward = sum(tail) / len(tail) if tail and metric == "reward" else None
    write_adapter_meta(
        adapter_dir,
        base_model=str(base),
        base_spec=cfg.base_model,
        stage=stage,
        data=data,
        steps=trainer.state.global_step,
        reward=final_reward,
        **{f"{metric}_first": values[0] if values else None, f"{metric}_last": values[-1] if values else None},
        lora={"r": cfg.lora.r, "alpha": cfg.lora.alpha, "target_modules": cfg.lora.target_modules},
        config_name=cfg.name,
        **meta,
    )
    kind = "GRPO reward" if metric == "reward" else f"{metric}"
    curve = plot_reward_curve(
        records,
        output_dir / (CURVE_FILE if metric == "reward" else LOSS_CURVE_FILE),
        title=f"{cfg.name}: {stage} {kind}",
        key=metric,
    )
    return StageResult(
        stage, adapter_dir, base, trainer.state.global_step, final_reward, metrics_path, curve, base_spec=cfg.base_model
    )


def run_trainer(
    cfg: TrainConfig,
    stage: str,
    output_dir: Path,
    *,
    reward_funcs: list[Callable],
    dataset: Any,
    model: Any,
    tokenizer: Any,
    peft_config: Any,
    base: Path,
    resume: bool = True,
    rollout_func: Callable | None = None,
    max_steps: int | None = None,
    extra_meta: dict[str, Any] | None = None,
) -> StageResult:
    """Train one stage with GRPOTrainer, then save the adapter, its metadata and the curve."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOTrainer

    callbacks = stage_callbacks(cfg, output_dir, stage)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,  # type: ignore[arg-type]  # TRL types the list invariantly
        args=cfg.grpo_args(output_dir, max_steps=max_steps),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        rollout_func=rollout_func,
        callbacks=callbacks,
    )
    for fn in reward_funcs:  # rewards that run the live policy (planner reflection) get the trainer's model
        bind = getattr(fn, "bind_trainer", None)
        if callable(bind):
            bind(trainer)
    data_path = str(Path(cfg.data.path).expanduser().resolve()) if cfg.data.path else None
    data = {
        "path": data_path,
        "offset": cfg.data.offset,
        "limit": cfg.data.limit,
        "trajectories": cfg.data.trajectories,
    }
    return train_and_save(cfg, stage, output_dir, trainer, base, resume=resume, data=data, **(extra_meta or {}))
