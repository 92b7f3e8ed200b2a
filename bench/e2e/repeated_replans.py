"""How often a replan only repeats the plan, and what following it did (`adds_nothing`).

    .venv/bin/python bench/e2e/repeated_replans.py --n 100 results/2wiki-qwen-planners/mia-base results/2wiki-qwen-planners/mia-grpo

Reads run folders whose graph followed every replan (the default, the paper's behaviour) and
replays `Context.drop_repeated_replan` on each logged replan: everything up to the replan is what
the graph does with it too, and a dropped replan serves the first answer. So
the first answer against the final one is an exact replay of the rule, scored by EM and cover match
(the judge graded only the final answer). No model is called. Writes bench/e2e/repeated-replans.md.
"""

from __future__ import annotations

from mia.app.evaluation.runlog import read_rows

import argparse
from pathlib import Path
from typing import Any

from mia.graph.judge.metrics import cover_match, exact_match
from mia.graph.nodes.steps import searches_made
from mia.graph.protocol import adds_nothing

HERE = Path(__file__).resolve().parent
EXECUTOR_TURN_ENDS = ("tool_call", "answer")  # each executor turn ends in one of these


def replay(row: dict[str, Any]) -> dict[str, Any] | None:
    """The question's replan, whether the rule drops it, and what it led to; None without one."""
    steps = row["trajectory"]
    at = next((i for i, s in enumerate(steps) if s["kind"] == "replan"), None)
    answers = [s["content"] for s in steps if s["kind"] == "answer"]
    if at is None or not answers:
        return None
    after = steps[at + 1 :]
    return {
        "dropped": adds_nothing(steps[at]["content"], row.get("plan") or "", searches_made(steps[:at])),
        "first": answers[0],
        "final": row["answer"],
        "gold": row["gold_answers"],
        "searches_after": sum(s["kind"] == "tool_call" for s in after),
        "turns_after": sum(s["kind"] in EXECUTOR_TURN_ENDS for s in after),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=HERE / "repeated-replans.md")
    parser.add_argument(
        "--n", type=int, default=None, help="only the first N questions of each run (a run still going on)"
    )
    args = parser.parse_args()
    lines = [
        "| run | questions | replans | adding nothing | of those: right -> wrong | wrong -> right | "
        "other replans: right -> wrong | wrong -> right | searches after a repeated replan (mean) | "
        "executor turns after it (mean) | executor s/turn | EM followed -> dropped | cover followed -> dropped |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in args.runs:
        rows = read_rows(run)[: args.n]
        replayed = [replay(row) for row in rows]
        replays = [r for r in replayed if r is not None]
        dropped = [r for r in replays if r["dropped"]]

        def flips(group: list[dict[str, Any]]) -> tuple[int, int]:
            right = [(cover_match(r["first"], r["gold"]), cover_match(r["final"], r["gold"])) for r in group]
            return sum(a and not b for a, b in right), sum(b and not a for a, b in right)

        executor = [r["usage"].get("executor") or {} for r in rows]
        per_turn = sum(e.get("ms", 0) for e in executor) / 1000 / max(1, sum(e.get("calls", 0) for e in executor))
        kept = [rep["first"] if rep and rep["dropped"] else row["answer"] for row, rep in zip(rows, replayed)]
        em = (
            sum(exact_match(r["answer"], r["gold_answers"]) for r in rows),
            sum(exact_match(a, r["gold_answers"]) for a, r in zip(kept, rows)),
        )
        cover = (
            sum(cover_match(r["answer"], r["gold_answers"]) for r in rows),
            sum(cover_match(a, r["gold_answers"]) for a, r in zip(kept, rows)),
        )
        n = max(1, len(dropped))
        repeated, other = flips(dropped), flips([r for r in replays if not r["dropped"]])
        lines.append(
            f"| {run} | {len(rows)} | {len(replays)} | {len(dropped)} | {repeated[0]} | {repeated[1]} | "
            f"{other[0]} | {other[1]} | "
            f"{sum(r['searches_after'] for r in dropped) / n:.2f} | {sum(r['turns_after'] for r in dropped) / n:.2f} | "
            f"{per_turn:.1f} | {em[0]:.0f} -> {em[1]:.0f} | {cover[0]:.0f} -> {cover[1]:.0f} |"
        )
    text = (
        "# Replans that only repeat the plan (`graph.protocol.adds_nothing`)\n\n"
        f"Command: `python bench/e2e/repeated_replans.py {'--n %d ' % args.n if args.n else ''}{' '.join(map(str, args.runs))}`. No model is called. "
        'Right and wrong are cover match (a gold answer appears in the answer); "followed -> dropped" are '
        "the run's counts as logged and with each replan that adds nothing dropped (its first answer served).\n\n"
        + "\n".join(lines)
        + "\n"
    )
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
