"""Real runs on CPU with the embedded SmolLM2-135M: the executor SFT stage trains on committed
episodes (loss logged, adapter saved, the executor's output changed), and `mia train alternate`
runs end to end from the command line: SFT, executor GRPO continuing the SFT adapter, then the
planner against the trained executor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mia.training.config import TrainConfig

pytestmark = pytest.mark.real_model
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "training" / "configs" / "test-tiny.yaml"


def test_executor_sft_trains_on_logged_episodes_and_changes_the_executor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from mia.training.artifacts import read_adapter_meta
    from mia.training.policy import load_model, load_tokenizer
    from mia.training.sft_stage import train_executor_sft

    monkeypatch.chdir(ROOT)  # episode globs are relative to the working folder, like data.path
    cfg = TrainConfig.from_yaml(CONFIG, {"output_dir": str(tmp_path / "sft"), "sft.trainer.learning_rate": 5e-3})
    result = train_executor_sft(cfg)
    losses = [r["loss"] for r in map(json.loads, result.metrics_path.read_text().splitlines()) if "loss" in r]
    assert result.steps == 2 and len(losses) == 2 and all(v > 0 for v in losses)
    assert result.curve_path is not None and result.curve_path.name == "loss_curve.png"
    meta = read_adapter_meta(result.adapter_dir)
    assert meta["stage"] == "executor-sft" and meta["role"] == "executor" and meta["data"]["rows"] == 2
    assert meta["spec"] == result.spec and result.spec.startswith("llamacpp:smollm2+")
    assert not (result.adapter_dir / "tokenizer.json").exists()  # the adapter only, not the base's tokenizer
    kept = [json.loads(line) for line in (tmp_path / "sft" / "sft_rows.jsonl").read_text().splitlines()]
    trained_on = [row["question"] for row in kept]
    assert len(kept) == 2 and all(200 < row["tokens"] <= 1024 for row in kept)  # a served prompt is hundreds
    assert meta["data"]["tokens_mean"] == sum(row["tokens"] for row in kept) / 2

    tok = load_tokenizer(result.base_model)
    from mia.training.prompts import executor_messages

    ids = tok.apply_chat_template(
        executor_messages(trained_on[0], "1. Search the question."),
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        before = load_model(result.base_model)(**ids).logits[0, -1]
        after = load_model(result.base_model, result.adapter_dir)(**ids).logits[0, -1]
    assert not torch.allclose(before, after, atol=1e-4)


def test_reading_rows_join_the_right_rows_in_the_stages_data() -> None:
    """`sft.reading` adds a reading row per question the right rows do not teach, with the real
    tokenizer's lengths, counted in the stage's statistics."""
    from mia.training.policy import load_tokenizer
    from mia.training.sft_stage import read_sft_episodes, sft_dataset_rows
    from mia.training.policy import resolve_weights

    overrides = {
        "sft.episodes": ["results/two-searches-2wiki/*/results.jsonl*"],
        "sft.limit": None,
        "sft.max_length": 4096,
    }
    cfg = TrainConfig.from_yaml(CONFIG, {**overrides, "sft.reading": True})
    episodes, banned = read_sft_episodes(cfg, ROOT)
    tokenizer = load_tokenizer(resolve_weights(cfg.base_model)[0])
    rows, stats = sft_dataset_rows(cfg, tokenizer, episodes, banned)
    reading = [r for r in rows if r.get("reading")]
    assert stats["reading_rows"] == len(reading) >= 10 and stats["rows"] == len(rows)
    assert not {r["question"] for r in reading} & {r["question"] for r in rows if not r.get("reading")}
    plain, _ = sft_dataset_rows(TrainConfig.from_yaml(CONFIG, overrides), tokenizer, episodes, banned)
    assert len(plain) == len(rows) - len(reading)


def test_mia_train_alternate_runs_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from mia.app.cli import app
    from mia.training.artifacts import read_adapter_meta

    monkeypatch.chdir(ROOT)
    out = tmp_path / "alternate"
    result = CliRunner().invoke(
        app,
        [
            "train",
            "alternate",
            "--config",
            str(CONFIG),
            "--output-dir",
            str(out),
            "--max-steps",
            "1",
            "--set",
            "data.limit=1",
        ],
    )
    assert result.exit_code == 0, result.output
    sft, executor, planner = (
        read_adapter_meta(out / d / "adapter") for d in ("executor-sft", "round1-executor", "round1-planner")
    )
    assert sft["stage"] == "executor-sft" and executor["stage"] == "executor" and planner["stage"] == "planner"
    assert executor["base_spec"] == sft["spec"]  # the executor's GRPO continued the SFT adapter
    assert planner["frozen_executor"] == executor["spec"]  # the planner trained against the trained executor
    assert "use as:" in result.output and "executor-sft 2 steps" in result.output
