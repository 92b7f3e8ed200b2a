"""The learning section of `mia eval-report` for test-time learning runs: windows, versions,
rollbacks and the learner's lag, from the run folder's own files."""

from __future__ import annotations

import json
from pathlib import Path

from mia.app.evaluation import runlog
from mia.app.evaluation.learning_report import learning_report, render_learning
from mia.app.evaluation.records import QuestionResult
from mia.app.evaluation.report import compare

T0 = 1_000_000.0


def make_run(tmp: Path, *, tracked: bool = True, rolled_back: bool = False) -> Path:
    run = tmp / "ttl"
    run.mkdir()
    runlog.write_config(
        run,
        {
            "dataset": "hotpotqa",
            "memory_mode": "mia",
            "label": "ttl",
            "test_time_learning": True,
            "judge": "llm",
            "seed": 0,
            "setting": "distractor",
        },
    )
    # 10 answers, one every 10 s; v0001 (learned from answers 1-4) published at t=65, so answers
    # 5 and 6 were given meanwhile and answer 7 is its first; v0002 (answers 5-8) at t=125
    versions = ["base"] * 6 + ["v0001"] * 6 if not rolled_back else ["base"] * 6 + ["v0001"] * 2 + ["base"] * 4
    for i in range(10):
        runlog.append_result(
            run,
            QuestionResult(
                id=f"q{i}",
                question="Q?",
                gold_answers=["Paris"],
                answer="Paris" if i % 2 else "Lyon",
                judge_correct=bool(i % 2),
                finished_at=T0 + 10 * (i + 1) if tracked else None,
                served_version=versions[i] if tracked else None,
            ),
        )
    online = run / "store" / "online" / "default"
    online.mkdir(parents=True)
    events = [
        {"batch": 1, "started": T0 + 40, "ended": T0 + 65, "episodes": 4, "version": "v0001"},
        {"batch": 2, "started": T0 + 80, "ended": T0 + 125, "episodes": 4, "version": "v0002"},
    ]
    (online / "learner.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events) + '{"torn', encoding="utf-8")
    adapters = run / "store" / "adapters" / "planner" / "default"
    adapters.mkdir(parents=True)
    registry = {
        "current": "v0001",
        "versions": {
            "base": {"parent": None, "status": "active", "rewards": [0.0] * 6},
            "v0001": {"parent": "base", "status": "active", "rewards": [0.0] * 4},
            "v0002": {"parent": "v0001", "status": "rolled_back" if rolled_back else "active", "rewards": []},
        },
    }
    (adapters / "registry.json").write_text(json.dumps(registry), encoding="utf-8")
    return run


def test_windows_versions_and_lag_from_timestamps(tmp_path: Path) -> None:
    report = learning_report(make_run(tmp_path), window=4)
    assert report is not None and report.n == 10 and report.scored_by == "judge"
    assert [(w.start, w.end, w.correct, w.versions) for w in report.windows] == [
        (1, 4, 2, ["base"]),
        (5, 8, 2, ["base", "v0001"]),
        (9, 10, 1, ["v0001"]),
    ]
    assert report.served == {"base": 6, "v0001": 4} and report.rolled_back == []
    first, second = report.batches
    assert (first.learned_through, first.lag_answers, first.lag_s, first.first_served, first.seconds) == (
        4,
        2,
        25.0,
        7,
        25.0,
    )
    assert (second.learned_through, second.lag_answers, second.lag_s, second.first_served) == (8, 2, 45.0, None)
    text = render_learning(report)
    assert "| 1 | v0001 | 4 | 25 | 2 | 25 | 7 |" in text and "| 2 | v0002 | 8 | 45 | 2 | 45 | never |" in text
    assert "median of 2 answers (max 2)" in text


def test_runs_without_timestamps_use_the_registry_order(tmp_path: Path) -> None:
    report = learning_report(make_run(tmp_path, tracked=False), window=5)
    assert report is not None and not report.tracked
    assert report.served == {"base": 6, "v0001": 4} and all(w.versions == [] for w in report.windows)
    first, second = report.batches
    assert (first.first_served, first.lag_answers, first.lag_s) == (7, 2, None)
    assert (second.first_served, second.lag_answers) == (None, None)  # published after the last answer
    assert "counted from the registry" in render_learning(report)


def test_a_rollback_is_reported_and_the_registry_order_is_not_trusted(tmp_path: Path) -> None:
    report = learning_report(make_run(tmp_path, tracked=False, rolled_back=True))
    assert report is not None and report.rolled_back == ["v0002"]
    assert all(b.first_served is None and b.lag_answers is None for b in report.batches)
    assert "Rolled back: v0002" in render_learning(report)
    assert report.missing == [] and "Lost" not in render_learning(report)


def test_versions_that_lost_their_files_are_reported(tmp_path: Path) -> None:
    """The registry (training.online.registry) marks such versions missing on load; the report names them."""
    from mia.training.online.registry import AdapterRegistry

    run = make_run(tmp_path)
    AdapterRegistry(run / "store" / "adapters" / "planner" / "default")  # v0001 and v0002 have no folders
    report = learning_report(run)
    assert report is not None and report.missing == ["v0001", "v0002"]
    assert (
        "Lost (adapter files missing; their newest intact ancestor was served instead): v0001, v0002."
        in render_learning(report)
    )


def test_eval_report_adds_the_section_only_for_learning_runs(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    runlog.write_config(plain, {"dataset": "hotpotqa", "memory_mode": "mia", "label": "plain", "judge": "llm"})
    for i in range(10):
        runlog.append_result(
            plain, QuestionResult(id=f"q{i}", question="Q?", gold_answers=["Paris"], answer="Paris", judge_correct=True)
        )
    assert learning_report(plain) is None
    _, md = compare([plain, run], window=5)
    assert md.count("### Test-time learning") == 1 and "| 6-10 | 3 |" in md


def test_eval_report_plots_the_learning_run_beside_the_others(tmp_path: Path, monkeypatch) -> None:
    """learning.png: the learning run's accuracy so far and a plain run's on the same questions."""
    from mia.app.evaluation import plot

    run = make_run(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    runlog.write_config(plain, {"dataset": "hotpotqa", "memory_mode": "mia", "label": "plain", "judge": "llm"})
    for i in reversed(range(10)):  # logged in another order: matched by question id, not position
        runlog.append_result(
            plain,
            QuestionResult(id=f"q{i}", question="Q?", gold_answers=["Paris"], answer="Paris", judge_correct=i < 5),
        )
    report = learning_report(run)
    assert report is not None and report.answer_ids == [f"q{i}" for i in range(10)]
    assert report.answer_correct == [bool(i % 2) for i in range(10)]
    assert plot._cumulative([True, None, False, True]) == [1.0, 1.0, 0.5, 2 / 3]
    assert report.answer_versions == ["base"] * 6 + ["v0001"] * 4
    assert plot._returns_to_older(["base", "v0001", "v0002", "v0001", "v0001", "v0003", "base"]) == [4, 7]
    drawn: list[tuple[str, list[str], dict[str, bool]]] = []
    real = plot.plot_learning

    def spy(rep, others, path, title=""):
        drawn.append((rep.label, list(others), others["plain"]))
        return real(rep, others, path, title)

    monkeypatch.setattr(plot, "plot_learning", spy)
    out = tmp_path / "out"
    compare([plain, run], out_dir=out, window=5)
    assert (out / "learning.png").stat().st_size > 10_000
    assert drawn == [("ttl", ["plain"], {f"q{i}": i < 5 for i in range(10)})]


def test_a_resumed_learner_log_is_numbered_in_order_and_failed_tries_learn_nothing(tmp_path: Path) -> None:
    """The committed 2Wiki TTL log restarts at batch 1 after a resume, and its first batch of each
    segment updated nothing (tied groups): rows must neither repeat numbers nor read "failed";
    a failed try is retried on the same episodes, so it moves `learned_through` by nothing."""
    run = make_run(tmp_path)
    log = next((run / "store" / "online").glob("*/learner.jsonl"))
    events = [
        {"batch": 1, "started": T0 + 40, "ended": T0 + 45, "episodes": 4, "version": None, "stats": {}},
        {
            "batch": 1,
            "started": T0 + 50,
            "ended": T0 + 55,
            "episodes": 4,
            "version": None,
            "error": "RuntimeError: boom",
        },
        {"batch": 1, "started": T0 + 60, "ended": T0 + 65, "episodes": 4, "version": "v0001"},
        {
            "batch": 1,
            "started": T0 + 66,
            "ended": T0 + 66,
            "episodes": 0,
            "version": "base",
            "stats": {"rollback": 1.0},
        },
        {
            "batch": 1,
            "started": T0 + 80,
            "ended": T0 + 80,
            "episodes": 0,
            "version": None,
            "stats": {"skipped": 2.0},
            "error": "skipped",
        },
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    report = learning_report(run, window=4)
    assert report is not None
    rows = [(b.batch, b.kind, b.learned_through) for b in report.batches]
    assert rows == [(1, "step", 4), (2, "failed", 4), (2, "step", 8), (2, "rollback", 8), (3, "skipped", 10)]
    text = render_learning(report)
    assert "| 1 | no update (tied groups) | 4 |" in text and "| 2 | failed (RuntimeError: boom) | 4 |" in text
    assert "| 2 | rollback to base | 8 |" in text and "| 3 | skipped after retries | 10 |" in text
