"""What a training run leaves behind: metrics.jsonl, reward_curve.png and the adapter folder with
its mia_adapter.json, so that `hf:<base>+<adapter>` works in every other command."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ADAPTER_META = "mia_adapter.json"
METRICS_FILE = "metrics.jsonl"
CURVE_FILE = "reward_curve.png"
LOSS_CURVE_FILE = "loss_curve.png"


def metrics_callback(path: Path, stage: str) -> Any:
    """A transformers TrainerCallback that appends every log record to a JSONL file."""
    from transformers import TrainerCallback

    class _JsonlMetrics(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            if not logs:
                return
            record = {"stage": stage, "step": state.global_step, "time": round(time.time(), 1)}
            record.update({k: v for k, v in logs.items() if isinstance(v, (int, float, str))})
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")

    return _JsonlMetrics()


def time_limit_callback(minutes: float) -> Any:
    """Stop training after `minutes` (saving a checkpoint), for runs that must fit a time slot."""
    from transformers import TrainerCallback

    class _TimeLimit(TrainerCallback):
        def __init__(self) -> None:
            self.deadline = time.time() + minutes * 60

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if time.time() >= self.deadline:
                control.should_training_stop = True
                control.should_save = True

    return _TimeLimit()


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl; a torn last line (a killed run) is skipped."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def reward_series(
    records: Sequence[dict[str, Any]], stage: str | None = None, key: str = "reward"
) -> tuple[list[int], list[float]]:
    """(steps, value) of one logged quantity (the mean GRPO reward; `key="loss"` for SFT),
    deduplicated by step (last wins)."""
    by_step: dict[int, float] = {}
    for rec in records:
        if stage and rec.get("stage") != stage:
            continue
        value = rec.get(key)
        if isinstance(value, (int, float)) and not math.isnan(value):
            by_step[int(rec["step"])] = float(value)
    steps = sorted(by_step)
    return steps, [by_step[s] for s in steps]


def plot_reward_curve(
    records: Sequence[dict[str, Any]], out: Path, title: str = "GRPO reward", window: int = 5, key: str = "reward"
) -> Path | None:
    """Reward per step (and a moving average) for every stage in the log; None if nothing logged.
    `key="loss"` draws an SFT run's training loss the same way."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = sorted({r.get("stage", "") for r in records if key in r})
    if not stages:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for stage in stages:
        steps, rewards = reward_series(records, stage, key)
        if not steps:
            continue
        ax.plot(steps, rewards, marker=".", alpha=0.45, label=f"{stage} {key}")
        if len(rewards) >= window:
            avg = [
                sum(rewards[max(0, i - window + 1) : i + 1]) / len(rewards[max(0, i - window + 1) : i + 1])
                for i in range(len(rewards))
            ]
            ax.plot(steps, avg, linewidth=2, label=f"{stage} moving avg ({window})")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("mean reward of the group" if key == "reward" else key)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out, dpi=110)
    plt.close(fig)
    return out


def save_figure(fig: Any, path: Path, dpi: int) -> Path:
    """Write a matplotlib figure as a 256-colour PNG: line and bar charts lose nothing visible, and
    the file is a third of matplotlib's RGBA one, which matters for plots committed beside results."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    buf.seek(0)
    with Image.open(buf) as image:
        image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


def adapter_spec(base_spec: str, base_folder: str | Path, adapter_dir: Path) -> str:
    """The model spec that serves a trained adapter. On an embedded base it is served the way the
    defaults are, by llama.cpp (`llamacpp:<name>+<adapter>`, converted to a GGUF LoRA on first
    load); on any other base by transformers (`hf:<base>+<adapter>`)."""
    from mia.graph.models.errors import UnknownBackendError
    from mia.graph.models.spec import parse_model_spec

    try:
        parsed = parse_model_spec(base_spec)
    except UnknownBackendError:  # a bare model folder
        parsed = None
    if parsed is not None and parsed.embedded:
        return f"llamacpp:{parsed.model}+{adapter_dir.resolve()}"
    return f"hf:{base_folder}+{adapter_dir.resolve()}"


def write_adapter_meta(adapter_dir: Path, **meta: Any) -> Path:
    """Write mia_adapter.json (base model, data, steps, reward, ...) next to the adapter weights."""
    from mia import __version__

    record = {"format": 1, "mia_version": __version__, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    record.update(meta)
    record["spec"] = adapter_spec(str(meta.get("base_spec") or meta["base_model"]), meta["base_model"], adapter_dir)
    path = adapter_dir / ADAPTER_META
    path.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def read_adapter_meta(adapter_dir: str | Path) -> dict[str, Any]:
    """The adapter's metadata; a clear error when the folder is not a mia adapter."""
    path = Path(adapter_dir) / ADAPTER_META
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: not an adapter saved by `mia train`")
    return json.loads(path.read_text(encoding="utf-8"))
