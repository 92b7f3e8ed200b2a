"""`mia eval-regrade`: finished runs graded again by the answer matcher (the model only with --llm),
the first logged grade kept, idempotent, atomic, every record kept; and the judge options of `mia eval`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from typer.testing import CliRunner

from mia.app.cli import app
from mia.app.evaluation import harness
from mia.app.evaluation.harness import build_context
from mia.app.evaluation.records import QuestionResult
from mia.app.evaluation.regrade import RegradeError, regrade_run
from mia.app.evaluation.runner import GraphRunner

from .fakes import ScriptedGraph, write_tiny


class RecordingGrader(FakeListChatModel):
    """Replies from a list and keeps every prompt it was sent."""

    prompts: list[str] = []

    def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
        self.prompts.append(str(messages[-1].content))
        return super()._call(messages, stop, run_manager, **kwargs)


TOEWS = "Jonathan Toews is a Canadian professional ice hockey centre who plays for the Chicago Blackhawks."


def record(qid: str, question: str, answer: str, gold: str, correct: bool | None, **extra: Any) -> str:
    grade = None if correct is None else ("CORRECT" if correct else "INCORRECT")
    return QuestionResult(
        id=qid, question=question, gold_answers=[gold], answer=answer, judge_correct=correct, judge_grade=grade, **extra
    ).model_dump_json()


def write_run(folder: Path, judge: str, lines: list[str]) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps({"dataset": "tiny", "memory_mode": "none", "judge": judge, "seed": 0})
    )
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n\n")
    return folder


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    return write_run(
        tmp_path / "run",
        "llm",
        [
            record("q1", "What nationality is the composer?", "American", "America", False),  # the grader's miss
            record(
                "q2", "In which city was the tower built?", "Paris Hilton", "Paris", True
            ),  # the grader's false pass
            record("q3", "What sport do they have in common?", TOEWS, "ice hockey", True),  # the matcher is unsure
            record("q4", "Who wrote Hamlet?", "", "Shakespeare", False, error="RuntimeError: boom"),
            record("q5", "Who wrote Hamlet?", "Shakespeare", "William Shakespeare", None),  # a --judge metrics line
        ],
    )


def rows(run: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in map(json.loads, (run / "results.jsonl").read_text().splitlines())}


def test_regrade_rewrites_grades_keeps_the_logged_ones_and_rebuilds_the_summary(run_dir: Path) -> None:
    report = regrade_run(run_dir)
    got = rows(run_dir)
    assert len(got) == 5 and report.records == 5
    assert (got["q1"]["judge_correct"], got["q1"]["judge_grade"], got["q1"]["grader"]) == (True, "CORRECT", "match")
    assert (got["q1"]["judge_grade_logged"], got["q1"]["judge_correct_logged"]) == ("INCORRECT", False)
    assert (got["q2"]["judge_correct"], got["q2"]["grader"]) == (False, "match")
    assert (got["q3"]["judge_correct"], got["q3"]["grader"]) == (True, "logged")  # no --llm: the logged grade
    assert "grader" not in got["q4"] and got["q4"]["judge_grade"] == "INCORRECT"  # an error already graded
    assert (got["q5"]["judge_correct"], got["q5"]["grader"]) == (True, "match")  # a line that was never judged
    assert (report.changed, report.first_graded, report.correct_before, report.correct_after) == (2, 1, 2, 3)
    assert report.by == {"match": 3, "logged": 1, "skipped": 1} and report.summary_written
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["accuracy"]["value"] == pytest.approx(3 / 5) and summary["n"] == 5


@pytest.fixture()
def metrics_run(tmp_path: Path) -> Path:
    """A `--judge metrics` run: no record carries a grade, one question raised."""
    return write_run(
        tmp_path / "metrics",
        "metrics",
        [
            record("m1", "What nationality is the composer?", "American", "America", None),
            record("m2", "What sport do they have in common?", TOEWS, "ice hockey", None),  # the matcher is unsure
            record("m3", "Who wrote Hamlet?", "", "Shakespeare", None, error="RuntimeError: boom"),
        ],
    )


def test_a_metrics_run_is_graded_an_error_scores_incorrect_and_the_unsure_wait_for_the_model(metrics_run: Path) -> None:
    report = regrade_run(metrics_run)
    got = rows(metrics_run)
    assert (got["m1"]["judge_correct"], got["m1"]["grader"]) == (True, "match")
    assert (got["m2"]["judge_correct"], got["m2"]["grader"]) == (None, "unsure")
    assert (got["m3"]["judge_correct"], got["m3"]["judge_grade"], got["m3"]["grader"]) == (False, "error", "error")
    assert report.first_graded == 2 and report.changed == 0
    assert "1 ungraded answers the matcher is unsure of: --llm grades them" in report.line()
    model = RecordingGrader(responses=["A"], prompts=[])
    report = regrade_run(metrics_run, model)
    got = rows(metrics_run)
    assert len(model.prompts) == 1 and "ice hockey centre" in model.prompts[0]
    assert (got["m2"]["judge_correct"], got["m2"]["grader"]) == (True, "llm") and got["m2"][
        "judge_grade_logged"
    ] is None
    assert report.by == {"match": 1, "llm": 1, "error": 1} and "ungraded" not in report.line()
    summary = json.loads((metrics_run / "summary.json").read_text())
    assert summary["accuracy"]["value"] == pytest.approx(2 / 3) and summary["n"] == 3


def test_regrade_is_idempotent(run_dir: Path) -> None:
    regrade_run(run_dir)
    first = (run_dir / "results.jsonl").read_text()
    regrade_run(run_dir)
    assert (run_dir / "results.jsonl").read_text() == first
    assert rows(run_dir)["q1"]["judge_grade_logged"] == "INCORRECT"  # still the first logged grade


def test_regrade_with_the_model_sends_only_the_uncertain_answers(run_dir: Path) -> None:
    model = RecordingGrader(responses=["B"], prompts=[])
    report = regrade_run(run_dir / "results.jsonl", model)
    got = rows(run_dir)
    assert len(model.prompts) == 1 and "ice hockey centre" in model.prompts[0]
    assert (got["q3"]["judge_correct"], got["q3"]["judge_grade"], got["q3"]["grader"]) == (False, "INCORRECT", "llm")
    assert report.by["llm"] == 1


def test_a_bad_line_is_an_error_naming_the_file_and_line_and_nothing_is_written(run_dir: Path) -> None:
    path = run_dir / "results.jsonl"
    text = path.read_text().replace("\n", "\n{not json\n", 1)
    path.write_text(text)
    with pytest.raises(RegradeError, match=r"results\.jsonl:2: not a JSON record"):
        regrade_run(run_dir)
    assert path.read_text() == text and not list(run_dir.glob("*.tmp"))
    res = CliRunner().invoke(app, ["eval-regrade", str(run_dir)])
    assert res.exit_code == 1 and "results.jsonl:2: not a JSON record" in res.output.replace("\n", "")  # rich wraps


def test_cli_eval_regrade(run_dir: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["eval-regrade", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert "5 records" in res.output and "2 grades changed; 1 graded for the first time" in res.output
    missing = CliRunner().invoke(app, ["eval-regrade", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "no such file" in missing.output


def test_cli_eval_judge_options_reach_the_context_and_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tiny = write_tiny(tmp_path / "tiny.jsonl")
    seen: dict[str, Any] = {}

    def fake_factory(config: dict[str, Any], setting: str) -> GraphRunner:
        seen["ctx"] = build_context(config, setting)
        return GraphRunner(graph=ScriptedGraph(), context=seen["ctx"], setting=setting, judge=config["judge"])

    monkeypatch.setattr(harness, "graph_runner_factory", fake_factory)
    out = tmp_path / "run"
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "--dataset",
            str(tiny),
            "--n",
            "1",
            "--memory",
            "none",
            "--executor-model",
            "local:smollm2",
            "--judge-contradiction",
            "llm",
            "--judge-method",
            "llm",
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output
    assert (seen["ctx"].judge_contradiction, seen["ctx"].judge_method) == ("llm", "llm")
    assert seen["ctx"].judge_config().contradiction == "llm"
    overrides = json.loads((out / "config.json").read_text())["context_overrides"]
    assert (overrides["judge_contradiction"], overrides["judge_method"]) == ("llm", "llm")
    for option, value in (("--judge-contradiction", "maybe"), ("--judge-method", "vibes")):
        bad = CliRunner().invoke(app, ["eval", "--dataset", str(tiny), option, value, "--out", str(tmp_path / "bad")])
        assert bad.exit_code == 1 and f"{option} must be" in bad.output and repr(value) in bad.output
        assert not (tmp_path / "bad").exists()
