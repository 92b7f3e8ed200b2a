"""Where MIA rows win and lose against a baseline: judged right by question type, the first plans,
and, for the questions only one side got right, whether the MIA row's answer was decided before or
by its replan.

    .venv/bin/python bench/e2e/run_breakdown.py results/hotpotqa-qwen-planners/none \
        results/hotpotqa-qwen-planners/trajectory-rag results/hotpotqa-qwen-planners/mia-base \
        results/hotpotqa-qwen-planners/mia-grpo --against results/hotpotqa-qwen-planners/none \
        --base-plans results/hotpotqa-qwen-planners/mia-base --out bench/e2e/breakdown-hotpotqa.md

`mia eval-report` says how many questions each side alone got right; this says which ones. The
first answer (before any replan) is scored by cover match, as `mia eval-report`'s reflection line
scores it. No model is called.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from mia.app.evaluation.records import QuestionResult
from mia.app.evaluation.reflection import first_answer
from mia.app.evaluation.runlog import latest_by_id, read_results
from mia.graph.judge.metrics import cover_match
from mia.memory.compression import step_text


def plan_steps(plan: str) -> int:
    """Lines of the plan that hold a step (numbering and blank lines aside)."""
    return sum(1 for line in plan.splitlines() if step_text(line).strip())


def first_right(r: QuestionResult) -> bool:
    first = first_answer(r.trajectory)
    return bool(first) and cover_match(first, r.gold_answers)


def by_type(runs: dict[str, dict[str, QuestionResult]], ids: list[str]) -> list[str]:
    types = sorted({runs[next(iter(runs))][i].type or "untyped" for i in ids})
    lines = ["| run | " + " | ".join(types) + " |", "|---" * (len(types) + 1) + "|"]
    for name, rows in runs.items():
        right = Counter((rows[i].type or "untyped") for i in ids if rows[i].judge_correct)
        total = Counter((rows[i].type or "untyped") for i in ids)
        lines.append(f"| {name} | " + " | ".join(f"{right[t]}/{total[t]}" for t in types) + " |")
    return lines


def plans(runs: dict[str, dict[str, QuestionResult]], ids: list[str], base: str | None) -> list[str]:
    lines = ["| run | plans | mean plan steps | first plans the same as the base row's |", "|---|---|---|---|"]
    for name, rows in runs.items():
        planned = [i for i in ids if rows[i].plan]
        if not planned:
            continue
        steps = sum(plan_steps(rows[i].plan or "") for i in planned) / len(planned)
        same = sum(1 for i in planned if base and runs[base][i].plan == rows[i].plan) if base and base != name else None
        lines.append(f"| {name} | {len(planned)} | {steps:.1f} | {'' if same is None else same} |")
    return lines


def replan_changed(r: QuestionResult) -> bool:
    """The final answer is not the first one: a replan answered again, differently."""
    first = first_answer(r.trajectory)
    return first is not None and first != r.answer


def discordant(runs: dict[str, dict[str, QuestionResult]], ids: list[str], against: str) -> list[str]:
    """For each run that reflects, the questions only one side got right, split by what the replan did."""
    lines = [
        f"| run | only `{against}` right | of which the first answer was right and the replan changed it "
        f"| only the run right | of which the first answer was wrong and the replan changed it |",
        "|---|---|---|---|---|",
    ]
    ref = runs[against]
    for name, rows in runs.items():
        if name == against or not any(s.get("kind") == "reflection" for i in ids for s in rows[i].trajectory):
            continue
        lost = [i for i in ids if ref[i].judge_correct and not rows[i].judge_correct]
        won = [i for i in ids if rows[i].judge_correct and not ref[i].judge_correct]
        broken = sum(1 for i in lost if first_right(rows[i]) and replan_changed(rows[i]))
        fixed = sum(1 for i in won if not first_right(rows[i]) and replan_changed(rows[i]))
        lines.append(f"| {name} | {len(lost)} | {broken} | {len(won)} | {fixed} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path, nargs="+", help="run folders (results.jsonl), on the same questions")
    ap.add_argument("--against", type=Path, required=True, help="the baseline run, one of the runs")
    ap.add_argument("--base-plans", type=Path, help="the run whose first plans the others are compared with")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("breakdown.md"))
    args = ap.parse_args()
    runs = {r.name: latest_by_id(read_results(r)) for r in args.runs}
    if args.against.name not in runs:
        ap.error(f"--against {args.against} is not one of the runs")
    ids = sorted(set.intersection(*(set(rows) for rows in runs.values())))
    if not ids:
        ap.error("the runs share no question")
    command = (
        "python bench/e2e/run_breakdown.py "
        + " ".join(map(str, args.runs))
        + f" --against {args.against}"
        + (f" --base-plans {args.base_plans}" if args.base_plans else "")
        + ("" if args.out == ap.get_default("out") else f" --out {args.out}")
    )
    text = "\n".join(
        [
            "# Where the rows win and lose",
            "",
            f"Command: `{command}`. No model is called. "
            f"{len(ids)} questions that every run answered; judged right by the LLM judge.",
            "",
            "## Judged right by question type",
            "",
            *by_type(runs, ids),
            "",
            "## First plans",
            "",
            *plans(runs, ids, args.base_plans.name if args.base_plans else None),
            "",
            f"## The questions only one side got right, against `{args.against.name}`",
            "",
            "The first answer (before any replan) is scored by cover match; only runs that reflect are listed.",
            "",
            *discordant(runs, ids, args.against.name),
            "",
        ]
    )
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
