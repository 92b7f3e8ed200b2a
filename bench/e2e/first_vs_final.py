"""What the planner added on top of the executor's own attempt, within one run: each question's
first answer (before any replan: plain ReAct's answer under `plan_when="failure"`) against its
final one, on the same questions, so no other run's prompts or machine enter the comparison.

    python bench/e2e/first_vs_final.py results/ladder-tune/2wiki/plan-on-failure results/ladder-tune/hotpotqa/plan-on-failure

The first answer is graded by the answer matcher (mia.graph.judge.matching; "uncertain" counts as
not right), the final one by the run's judge (`judge_correct`), except that an unreplanned answer
keeps one grade (first = final). Writes bench/e2e/first-vs-final.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mia.app.evaluation.reflection import first_answer
from mia.app.evaluation.runlog import read_rows
from mia.app.evaluation.stats import mcnemar_exact
from mia.graph.judge.matching import match_answer

OUT = Path(__file__).with_name("first-vs-final.md")


def compare(run: Path) -> dict[str, float]:
    rows = [r for r in read_rows(run) if not r.get("error")]
    first, final, replanned, planner_tokens, agent_tokens = [], [], 0, 0, 0
    for row in rows:
        steps = row.get("trajectory") or []
        followed = [s for s in steps if s.get("kind") == "replan" and not (s.get("args") or {}).get("dropped")]
        right = bool(row.get("judge_correct"))
        if followed:
            replanned += 1
            answer = first_answer(steps) or ""
            first.append(match_answer(row["question"], answer, row["gold_answers"]).decision == "correct")
        else:
            first.append(right)
        final.append(right)
        usage = row.get("usage") or {}
        planner_tokens += int((usage.get("planner") or {}).get("input_tokens") or 0)
        agent_tokens += sum(int((usage.get(r) or {}).get("input_tokens") or 0) for r in ("planner", "executor"))
    test = mcnemar_exact(first, final)
    n = len(rows) or 1
    return {
        "n": len(rows),
        "first": sum(first),
        "final": sum(final),
        "replanned": replanned,
        "broken": test.b,
        "fixed": test.c,
        "p": test.p_value,
        "planner_tokens": planner_tokens / n,
        "agent_tokens": agent_tokens / n,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    lines = [
        "# First answer against final answer, within each run",
        "",
        f"Command: `python bench/e2e/first_vs_final.py {' '.join(map(str, args.runs))}`.",
        "",
        "| run | n | first right | final right | replanned (followed) | fixed / broken | McNemar p | planner prompt tokens/q | agent prompt tokens/q |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in args.runs:
        c = compare(run)
        lines.append(
            f"| {run} | {c['n']} | {c['first']} | {c['final']} | {c['replanned']} | {c['fixed']} / {c['broken']} | "
            f"{c['p']:.3g} | {c['planner_tokens']:,.0f} | {c['agent_tokens']:,.0f} |"
        )
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
