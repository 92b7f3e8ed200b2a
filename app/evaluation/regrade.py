"""Re-grade a finished run's answers with today's ground-truth method, without running the agent again.

Why: the committed runs were graded by the embedded Qwen-1.5B grader alone, which disagrees with
careful reading on 16% of answers (bench/judge/grader-agreement.md); their answers are all in
results.jsonl, so only the grading needs redoing. The answer matcher (mia.graph.judge.matching)
decides what its rules are sure of; the answers it is uncertain about go to the judge model when one
is given (`mia eval-regrade --llm`), else keep their logged grade.

Each record keeps what was logged first (`judge_correct_logged`, `judge_grade_logged`), so re-running
re-grades from the original and is idempotent, and says who graded it now (`grader`: match, llm,
logged). The log is rewritten atomically (a temporary file, fsynced, then renamed) under the run's
writer lock; every line comes back, and a line that is not a JSON record is an error naming the file
and line. The run's summary (summary.json/md, plot.png when present) is rebuilt from the new log.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mia.app.evaluation.runlog import CONFIG, RESULTS, RunDirError, RunLock, expand_results

LOGGED_GRADE, LOGGED_CORRECT = "judge_grade_logged", "judge_correct_logged"


class RegradeError(RunDirError):
    """A results.jsonl that cannot be re-graded safely (a bad line, a missing file)."""


@dataclass
class RegradeReport:
    """What re-grading one run did."""

    run_dir: Path
    records: int = 0
    by: Counter[str] = field(default_factory=Counter)  # grader -> records: match, llm, logged, error, unsure, skipped
    changed: int = 0  # records whose judge_correct differs from the logged one
    first_graded: int = 0  # records logged without a grade (a `--judge metrics` run) that have one now
    correct_before: int = 0
    correct_after: int = 0
    summary_written: bool = False

    def line(self) -> str:
        graded = ", ".join(f"{k} {v}" for k, v in sorted(self.by.items()))
        unsure = self.by.get("unsure", 0)
        first = f"{self.first_graded} graded for the first time; " if self.first_graded else ""
        return (
            f"{self.run_dir}: {self.records} records ({graded}); {self.changed} grades changed; {first}"
            f"judged correct {self.correct_before} -> {self.correct_after}"
            + ("; summary rebuilt" if self.summary_written else "")
            + (f"; {unsure} ungraded answers the matcher is unsure of: --llm grades them" if unsure else "")
        )


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every line of a results.jsonl as a dict; blank lines are dropped, any other bad line raises."""
    if not path.is_file():
        raise RegradeError(f"{path}: no such file (not a `mia eval` run folder?)")
    records: list[dict[str, Any]] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise RegradeError(f"{path}:{lineno}: not a JSON record ({err.msg})") from err
        if not isinstance(record, dict) or not isinstance(record.get("question"), str):
            raise RegradeError(f"{path}:{lineno}: not a result record (no question)")
        records.append(record)
    return records


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    """Replace the file with these records, atomically: a reader sees the old log or the new one."""
    tmp = path.with_name(path.name + ".regrade.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def regrade_record(record: dict[str, Any], model: Any = None) -> str:
    """Re-grade one record in place; returns who graded it (match, llm, logged, error), "unsure" (a run
    that never judged, an answer the matcher cannot decide and no model to ask) or "skipped" (no gold
    answers, or an error the run already graded).

    A `--judge metrics` run's records carry no grade: they are graded here like any other, and a
    question that raised scores incorrect, as `mia eval` scores it when it judges (runner.error_result),
    so a re-graded run and a judged run count the same questions."""
    from mia.graph.judge import JudgeConfig, judge
    from mia.graph.judge.api import clean_golds, prediction_of
    from mia.graph.judge.matching import match_answer

    golds = clean_golds(record.get("gold_answers") or [])
    if not golds or (record.get("error") and record.get(LOGGED_CORRECT, record.get("judge_correct")) is not None):
        return "skipped"
    if LOGGED_GRADE not in record:
        record[LOGGED_GRADE], record[LOGGED_CORRECT] = record.get("judge_grade"), record.get("judge_correct")
    if record.get("error"):
        record["judge_correct"], record["judge_grade"], record["grader"] = False, "error", "error"
        return "error"
    match = match_answer(record["question"], prediction_of(record.get("answer") or ""), golds)
    if match.grader_label is not None:
        record["judge_correct"], record["judge_grade"], record["grader"] = (
            match.decision == "correct",
            match.grader_label,
            "match",
        )
    elif model is not None:
        from mia.app.evaluation.runner import verdict_correct

        verdict = judge(
            model,
            record["question"],
            record.get("answer") or "",
            gold_answers=golds,
            mode="ground_truth",
            config=JudgeConfig(method="match+llm"),
        )
        record["judge_correct"], record["judge_grade"] = verdict_correct(verdict)
        record["grader"] = "llm" if verdict.method == "llm" else verdict.method
    else:
        record["judge_correct"], record["judge_grade"] = record[LOGGED_CORRECT], record[LOGGED_GRADE]
        record["grader"] = "logged" if record[LOGGED_CORRECT] is not None else "unsure"
    return record["grader"]


def regrade_run(run_dir: Path, model: Any = None) -> RegradeReport:
    """Re-grade every record of one run folder (or of the folder of a results.jsonl) and rebuild its summary."""
    run_dir = Path(run_dir)
    if run_dir.name == RESULTS:
        run_dir = run_dir.parent
    path = expand_results(run_dir)
    report = RegradeReport(run_dir)
    if not path.is_file():
        raise RegradeError(f"{path}: no such file (not a `mia eval` run folder?)")
    with RunLock(run_dir):
        records = read_records(path)
        for record in records:
            before = record.get(LOGGED_CORRECT, record.get("judge_correct"))
            report.by[regrade_record(record, model)] += 1
            report.correct_before += bool(before)
            report.correct_after += bool(record.get("judge_correct"))
            after = record.get("judge_correct")
            report.changed += before is not None and after is not None and bool(before) != bool(after)
            report.first_graded += before is None and after is not None
        report.records = len(records)
        write_records(path, records)
        if len(read_records(path)) != len(records):  # never lose a record: read the new file back
            raise RegradeError(f"{path}: the rewritten log does not hold the {len(records)} records it was given")
        report.summary_written = _rebuild_summary(run_dir)
    return report


def _rebuild_summary(run_dir: Path) -> bool:
    """summary.json/md (and plot.png when the run has one) from the new log; False for a warm-up folder."""
    if not (run_dir / CONFIG).is_file():
        return False
    from mia.app.evaluation.report import load_run
    from mia.app.evaluation.summary import write_summary

    summary = load_run(run_dir)
    write_summary(run_dir, summary)
    if (run_dir / "plot.png").is_file():
        from mia.app.evaluation.plot import plot_runs

        plot_runs([summary], run_dir / "plot.png")
    return True


__all__ = [
    "RegradeError",
    "RegradeReport",
    "read_records",
    "write_records",
    "regrade_record",
    "regrade_run",
    "LOGGED_GRADE",
    "LOGGED_CORRECT",
]
