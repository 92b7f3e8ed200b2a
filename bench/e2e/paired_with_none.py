"""A MIA row against plain ReAct on the questions both have answered, read from their logs: right
answers, discordant pairs (exact McNemar), agent prompt tokens, and what happened inside the MIA
row (first answer against final answer; evidence corrections, `args.settled`; late plans followed).
For a row still running, where `mia eval-report` would wait for the end.

    python bench/e2e/paired_with_none.py results/ladder/2wiki/none results/ladder/2wiki/default

Writes <mia row>/paired-with-none.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from scipy.stats import binomtest

from mia.app.evaluation.reflection import first_answer
from mia.app.evaluation.runlog import read_rows
from mia.graph.judge.matching import match_answer

AGENT = ("planner", "executor")


def _replans(steps: list[dict], key: str) -> bool:
    """A followed replan step with `key` in its args (an evidence round's search, args.unread, is not
    a correction: it is counted as `unread`)."""
    return any(
        s.get("kind") == "replan"
        and (s.get("args") or {}).get(key)
        and not (s.get("args") or {}).get("dropped")
        and (key == "unread" or not (s.get("args") or {}).get("unread"))
        for s in steps
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("none", type=Path)
    ap.add_argument("mia", type=Path)
    args = ap.parse_args()
    base = {r["id"]: r for r in read_rows(args.none) if not r.get("error")}
    rows = [r for r in read_rows(args.mia) if not r.get("error") and r["id"] in base]
    c = dict.fromkeys(
        ["both", "only_mia", "only_none", "fixed", "broken", "settled", "settled_fixed", "late", "unread"], 0
    )
    tokens = {"mia": 0, "none": 0}
    for r in rows:
        mine, theirs = bool(r["judge_correct"]), bool(base[r["id"]]["judge_correct"])
        c["both"] += mine and theirs
        c["only_mia"] += mine and not theirs
        c["only_none"] += theirs and not mine
        steps = r.get("trajectory") or []
        first = match_answer(r["question"], first_answer(steps) or "", r["gold_answers"]).decision == "correct"
        c["fixed"] += mine and not first
        c["broken"] += first and not mine
        settled = _replans(steps, "settled")
        c["settled"] += settled
        c["settled_fixed"] += settled and mine and not first
        c["late"] += _replans(steps, "first_plan")
        c["unread"] += _replans(steps, "unread")
        for key, row in (("mia", r), ("none", base[r["id"]])):
            tokens[key] += sum((row.get("usage") or {}).get(role, {}).get("input_tokens", 0) for role in AGENT)
    n = len(rows)
    discordant = c["only_mia"] + c["only_none"]
    p = binomtest(min(c["only_mia"], c["only_none"]), discordant, 0.5).pvalue if discordant else 1.0
    lines = [
        f"# {args.mia} against {args.none}, on the {n} questions both answered",
        "",
        f"Command: `python bench/e2e/paired_with_none.py {args.none} {args.mia}`.",
        "",
        "| | n | right: none / MIA | only none / only MIA | exact McNemar p | agent prompt tokens/q: none / MIA |",
        "|---|---|---|---|---|---|",
        f"| paired | {n} | {c['both'] + c['only_none']} / {c['both'] + c['only_mia']} | {c['only_none']} / {c['only_mia']} | "
        f"{p:.3f} | {tokens['none'] / max(n, 1):,.0f} / {tokens['mia'] / max(n, 1):,.0f} "
        f"({tokens['mia'] / max(tokens['none'], 1):.2f}x) |",
        "",
        f"Inside the MIA row: the final answer fixed {c['fixed']} wrong first answers and broke {c['broken']} right ones "
        f"(first answers graded by the matcher); evidence corrections on {c['settled']} questions "
        f"({c['settled_fixed']} of them fixed a wrong first answer); late plans followed on {c['late']}"
        + (f"; evidence rounds (the unread names searched) on {c['unread']}." if c["unread"] else "."),
    ]
    (args.mia / "paired-with-none.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
