"""Merging runs into one table and plot, and the `mia eval` / `mia eval-report` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mia.app.evaluation import harness
from mia.app.evaluation.harness import EvalConfig, build_context, run_evaluation
from mia.app.evaluation.report import compare
from mia.app.evaluation.runlog import RunDirError
from mia.app.evaluation.runner import GraphRunner

from mia.graph.models.defaults import ROLES

from .fakes import ScriptedGraph, write_tiny


async def _run(tiny: Path, out: Path, memory: str, fail: set[str] | None = None):
    def make(config, setting):
        return GraphRunner(graph=ScriptedGraph(fail=fail), context=None, setting=setting, judge=config["judge"])

    cfg = EvalConfig(dataset=str(tiny), memory_mode=memory, models=dict.fromkeys(ROLES, "local:smollm2"))
    return await run_evaluation(cfg, out, runner_factory=make, progress=False)


async def test_compare_merges_runs(tmp_path: Path):
    tiny = write_tiny(tmp_path / "tiny.jsonl")
    await _run(tiny, tmp_path / "none", "none", fail={"q1", "q2"})
    await _run(tiny, tmp_path / "mia", "mia")
    summaries, md = compare([tmp_path / "none", tmp_path / "mia"], tmp_path / "cmp", title="T")
    assert [s.accuracy.value for s in summaries] == [0.0, 0.5]
    assert "| none · local:smollm2 | 4 (2 err) (1 warn) | 0.000 [0.000, 0.490]" in md
    assert "| mia · local:smollm2 | 4 (1 warn) | 0.500 [0.150, 0.850]" in md
    data = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert [d["run_dir"] for d in data] == [str(tmp_path / "none"), str(tmp_path / "mia")]
    png = (tmp_path / "cmp" / "comparison.png").read_bytes()
    assert png[:4] == b"\x89PNG" and len(png) > 10_000
    with pytest.raises(RunDirError, match="not a `mia eval` output"):
        compare([tmp_path / "nowhere"])


def test_context_of_each_configuration():
    base = {
        "models": {
            "planner": "local:smollm2",
            "executor": "openai:gpt-4.1-mini",
            "manager": "local:smollm2",
            "judge": "local:smollm2",
        },
        "namespace": "eval-x",
        "judge": "llm",
        "max_tool_calls": 4,
        "context_overrides": {"executor_max_tokens": 64},
    }
    ctx = build_context({**base, "memory_mode": "mia"}, "distractor")
    assert (ctx.memory_mode, ctx.memorise, ctx.judge_mode, ctx.namespace) == ("mia", True, "ground_truth", "eval-x")
    assert ctx.executor_model == "openai:gpt-4.1-mini" and ctx.max_tool_calls == 4 and ctx.executor_max_tokens == 64
    none = build_context({**base, "memory_mode": "none", "judge": "metrics"}, "open")
    assert (none.memorise, none.judge_mode) == (False, "off")
    assert none.corpus.endswith("2wiki-open-corpus.jsonl.gz") and Path(none.corpus).is_file()


def test_cli_eval_and_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from mia.app.cli import app

    tiny = write_tiny(tmp_path / "tiny.jsonl")
    seen = {}

    def fake_factory(config, setting):
        seen["ctx"] = build_context(config, setting)
        return GraphRunner(graph=ScriptedGraph(), context=seen["ctx"], setting=setting, judge=config["judge"])

    monkeypatch.setattr(harness, "graph_runner_factory", fake_factory)
    runner = CliRunner()
    out = tmp_path / "run"
    res = runner.invoke(
        app,
        [
            "eval",
            "--dataset",
            str(tiny),
            "--n",
            "3",
            "--memory",
            "trajectory-rag",
            "--executor-model",
            "local:smollm2",
            "--max-tool-calls",
            "2",
            "--executor-max-tokens",
            "48",
            "--min-similarity",
            "0.4",
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "judge accuracy" in res.output and (out / "summary.md").is_file()
    assert (seen["ctx"].memory_mode, seen["ctx"].max_tool_calls, seen["ctx"].executor_max_tokens) == (
        "trajectory-rag",
        2,
        48,
    )
    assert seen["ctx"].min_similarity == 0.4
    # resuming with another memory mode is refused with a clear message, nothing is lost
    res = runner.invoke(
        app,
        [
            "eval",
            "--dataset",
            str(tiny),
            "--n",
            "3",
            "--memory",
            "none",
            "--out",
            str(out),
            "--executor-model",
            "local:smollm2",
            "--max-tool-calls",
            "2",
            "--min-similarity",
            "0.4",
            "--no-progress",
        ],
    )
    assert res.exit_code == 1 and "different run" in res.output
    res = runner.invoke(app, ["eval", "--dataset", "nope", "--out", str(tmp_path / "x")])
    assert res.exit_code == 1 and "unknown dataset" in res.output
    res = runner.invoke(app, ["eval-report", str(out), "--out", str(tmp_path / "cmp")])
    assert res.exit_code == 0 and (tmp_path / "cmp" / "comparison.png").is_file()
    assert "--memory-from" in runner.invoke(app, ["eval", "--help"]).output


async def test_compare_restricts_to_common_questions(tmp_path: Path):
    tiny = write_tiny(tmp_path / "tiny.jsonl")

    def make(config, setting):
        return GraphRunner(graph=ScriptedGraph(), context=None, setting=setting, judge=config["judge"])

    full = EvalConfig(dataset=str(tiny), memory_mode="mia", concurrency=1)
    part = EvalConfig(dataset=str(tiny), memory_mode="none", n=2, concurrency=1)
    await run_evaluation(full, tmp_path / "a", runner_factory=make, progress=False)
    await run_evaluation(part, tmp_path / "b", runner_factory=make, progress=False)
    summaries, md = compare([tmp_path / "a", tmp_path / "b"])
    assert [s.n for s in summaries] == [2, 2] and "the 2 questions all runs answered" in md
    summaries, _ = compare([tmp_path / "a", tmp_path / "b"], common=False)
    assert [s.n for s in summaries] == [4, 2]


def test_real_verdict_objects_are_read():
    from mia.graph.judge import Verdict
    from mia.app.evaluation.runner import verdict_correct

    v = Verdict(
        outcome="correct", score=1.0, mode="ground_truth", method="llm", prediction="Paris", grader_label="CORRECT"
    )
    assert verdict_correct(v) == (True, "CORRECT")
    bad = Verdict(outcome="unknown", score=0.0, mode="ground_truth", method="fallback", prediction="")
    assert verdict_correct(bad) == (False, "fallback")
    assert verdict_correct(None) == (False, "missing")


def test_cli_fails_fast_on_a_missing_api_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from mia.app.cli import app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "")
    tiny = write_tiny(tmp_path / "tiny.jsonl")
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "--dataset",
            str(tiny),
            "--memory",
            "none",
            "--executor-model",
            "openai:gpt-4.1-mini",
            "--judge",
            "metrics",
            "--out",
            str(tmp_path / "r"),
            "--no-progress",
        ],
    )
    assert res.exit_code == 1 and "OPENAI_API_KEY" in res.output and "--executor-model" in res.output
    assert (tmp_path / "r" / "results.jsonl").exists() is False


def test_cli_refuses_n_0_without_a_warmup(tmp_path: Path):
    """`--n 0` builds a warm-up memory only; without `--warmup` there is nothing to do: a clear error,
    and no run folder is written."""
    from mia.app.cli import app

    tiny = write_tiny(tmp_path / "tiny.jsonl")
    res = CliRunner().invoke(app, ["eval", "--dataset", str(tiny), "--n", "0", "--out", str(tmp_path / "r")])
    assert res.exit_code == 1 and "--warmup" in res.output
    assert not (tmp_path / "r").exists()
