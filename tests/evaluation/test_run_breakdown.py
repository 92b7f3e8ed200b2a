"""bench/e2e/run_breakdown.py on real run folders (results.jsonl written as `mia eval` writes it):
the figures the HotpotQA README quotes come from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mia.app.evaluation.records import QuestionResult

ROOT = Path(__file__).resolve().parents[2]


def row(
    qid: str,
    qtype: str,
    right: bool,
    first: str | None = None,
    final: str = "",
    plan: str | None = None,
    gold: str = "Paris",
) -> QuestionResult:
    steps: list[dict] = []
    if first is not None:
        steps = [
            {"kind": "answer", "content": first},
            {"kind": "reflection", "content": "yes" if first != final else "no"},
        ]
        if first != final:
            steps += [{"kind": "replan", "content": "1. Search again."}, {"kind": "answer", "content": final}]
    return QuestionResult(
        id=qid,
        question="Capital of France?",
        gold_answers=[gold],
        type=qtype,
        answer=final,
        plan=plan,
        trajectory=steps,
        judge_correct=right,
    )


def write(run: Path, rows: list[QuestionResult]) -> Path:
    run.mkdir()
    (run / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
    return run


def test_splits_the_discordant_questions_by_what_the_replan_did(tmp_path: Path) -> None:
    none = write(
        tmp_path / "none",
        [
            row("a", "bridge", True, final="Paris"),
            row("b", "bridge", True, final="Paris"),
            row("c", "comparison", False, final="Lyon"),
            row("d", "comparison", False, final="Lyon"),
        ],
    )
    mia = write(
        tmp_path / "mia",
        [
            row("a", "bridge", False, "Paris", "France", plan='1. Search "France capital".\n2. Answer.'),  # broken
            row("b", "bridge", False, "Lyon", "Lyon", plan="1. Search.\n\n2. Answer."),  # wrong from the start
            row("c", "comparison", True, "Lyon", "Paris", plan="1. Search."),  # fixed by the replan
            row("d", "comparison", True, "Paris", "Paris", plan="1. Search."),  # right from the start
        ],
    )
    out = tmp_path / "breakdown.md"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench/e2e/run_breakdown.py"),
            str(none),
            str(mia),
            "--against",
            str(none),
            "--base-plans",
            str(mia),
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    text = out.read_text()
    assert "| none | 2/2 | 0/2 |" in text and "| mia | 0/2 | 2/2 |" in text  # bridge, comparison
    assert "| mia | 4 | 1.5 |  |" in text  # 2 + 2 + 1 + 1 steps, blank lines not counted
    assert "| mia | 2 | 1 | 2 | 1 |" in text
    assert f"--out {out}" in text


def test_against_must_be_one_of_the_runs(tmp_path: Path) -> None:
    run = write(tmp_path / "mia", [row("a", "bridge", True, final="Paris")])
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench/e2e/run_breakdown.py"),
            str(run),
            "--against",
            str(tmp_path / "none"),
            "--out",
            str(tmp_path / "o.md"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "is not one of the runs" in done.stderr
