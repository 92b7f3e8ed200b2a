"""Replay the failure rule (`Context.replan_when = "failure"`) on logged runs: on how many right and
wrong first answers would it have replanned, against the planner's yes/no that the runs logged?

    python bench/e2e/failure_rule_replay.py results/hotpotqa-qwen-planners/mia-base results/2wiki-qwen-planners/mia-base

No model is called: the first attempt is the logged trajectory up to its first answer, graded by the
matcher (mia.graph.judge.matching). Writes bench/e2e/failure-rule-replay.md.
"""

from __future__ import annotations

from mia.app.evaluation.runlog import read_rows

import argparse
from pathlib import Path

from mia.app.evaluation.reflection import first_answer
from mia.graph.judge.matching import match_answer
from mia.graph.nodes.failure import shown_failure

OUT = Path(__file__).with_name("failure-rule-replay.md")


def replay(run: Path) -> dict[str, int]:
    counts = {"right": 0, "wrong": 0, "rule_right": 0, "rule_wrong": 0, "planner_right": 0, "planner_wrong": 0}
    for row in read_rows(run):
        steps = row.get("trajectory") or []
        cut = next((i for i, s in enumerate(steps) if s.get("kind") == "answer"), None)
        if cut is None or row.get("error"):
            continue
        answer = first_answer(steps) or ""
        right = match_answer(row["question"], answer, row["gold_answers"]).decision == "correct"
        key = "right" if right else "wrong"
        counts[key] += 1
        replanned = any(s.get("kind") == "replan" for s in steps)
        stop = "answered" if replanned else (row.get("stop_reason") or "answered")  # logged for the last attempt
        if shown_failure(steps[: cut + 1], answer, stop, row["question"]):
            counts[f"rule_{key}"] += 1
        if any(s.get("kind") == "reflection" and s.get("content") == "yes" for s in steps):
            counts[f"planner_{key}"] += 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    args = ap.parse_args()
    lines = [
        "# The failure rule replayed on logged first attempts",
        "",
        f"Command: `python bench/e2e/failure_rule_replay.py {' '.join(map(str, args.runs))}`. First answers graded by "
        "the matcher (uncertain counts as wrong). A replan can only help a wrong first answer and only hurt a right one.",
        "",
        "| run | right first answers | wrong | rule replans right / wrong | planner's yes/no replanned right / wrong |",
        "|---|---|---|---|---|",
    ]
    for run in args.runs:
        c = replay(run)
        lines.append(
            f"| {run} | {c['right']} | {c['wrong']} | {c['rule_right']} / {c['rule_wrong']} | "
            f"{c['planner_right']} / {c['planner_wrong']} |"
        )
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
