"""The graph end to end with the real embedded default models (offline): `mia ask` answers a
HotpotQA question in its paragraph sandbox, judges it, writes a memory, and a second, similar
question retrieves that memory. Budgets are tight so that it stays fast on two CPU cores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mia.app.cli import app

pytestmark = pytest.mark.real_model
SAMPLE = Path(__file__).parent / "data" / "hotpotqa_sample.json"
TIGHT = ["--max-tokens", "24", "--namespace", "real-test", "--json", "--plan-when", "start"]  # every role runs


def _last_json(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def test_ask_real_model_memorises_then_retrieves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for role in ("PLANNER", "EXECUTOR", "MANAGER", "JUDGE"):
        monkeypatch.delenv(f"MIA_{role}_MODEL", raising=False)
    record = json.loads(SAMPLE.read_text())[0]
    paragraphs = tmp_path / "paragraphs.json"
    paragraphs.write_text(json.dumps(record["paragraphs"]))
    runner = CliRunner()

    first = runner.invoke(
        app,
        [
            "ask",
            record["question"],
            "--paragraphs",
            str(paragraphs),
            "--gold",
            record["answer"],
            "--data-dir",
            str(tmp_path),
            "--max-tool-calls",
            "1",
            *TIGHT,
        ],
    )
    assert first.exit_code == 0, first.output
    out = _last_json(first.stdout)
    assert isinstance(out["answer"], str) and out["plan"]
    assert out["judgement"]["outcome"] in ("correct", "incorrect") and out["judgement"]["mode"] == "ground_truth"
    assert out["memory_id"], out.get("warnings")
    assert out["usage"]["planner"]["calls"] >= 1 and out["usage"]["executor"]["calls"] >= 1
    # the answer matcher grades what its rules are sure of without a model call, the judge model the rest;
    # min_tool_calls=1 spends the one tool call, and SmolLM2's forced answer after it may be empty (no call)
    verdict = out["judgement"]
    assert verdict["method"] in ("match", "llm", "fallback", "metrics"), verdict
    if verdict["method"] == "match" or not verdict["prediction"]:
        assert out["usage"]["judge"]["calls"] == 0
    elif verdict["method"] in ("llm", "fallback"):
        assert out["usage"]["judge"]["calls"] >= 1
    # the default manager is `extractive`: the memory is written without a model call
    assert out["usage"]["manager"]["calls"] == 0 and out["tool_calls"] == 1
    log = tmp_path / "memory" / "trajectories.jsonl"
    assert log.is_file() and json.loads(log.read_text().splitlines()[0])["question"] == record["question"]

    similar = record["question"].replace("was published first", "came out earlier")
    second = runner.invoke(
        app,
        [
            "ask",
            similar,
            "--paragraphs",
            str(paragraphs),
            "--data-dir",
            str(tmp_path),
            "--judge-mode",
            "off",
            "--no-memorise",
            "--max-tool-calls",
            "0",
            "--max-replans",
            "0",
            *TIGHT,
        ],
    )
    assert second.exit_code == 0, second.output
    out2 = _last_json(second.stdout)
    assert out2["used_memory_ids"] == [out["memory_id"]]
    assert isinstance(out2["answer"], str) and out2["usage"]["planner"]["calls"] == 1
    assert out2["stop_reason"] == "forced:budget" and out2["usage"]["executor"]["calls"] == 1
