"""Replay the evidence checks (mia.graph.nodes.evidence) on logged first answers: how many right
and wrong first answers to "..., A or B?" and yes/no questions would they contradict, and is what
the years or countries pick the gold answer? And for first answers given before the results held
both names' own paragraphs (`unread`): how often are they right, and what would the evidence round
(Context.evidence_search: the graph searches the unread names in one call) and checking again change?

    python bench/e2e/comparison_check_replay.py results/2wiki-qwen-planners/none results/hotpotqa-qwen-planners/none

No model is called. A logged observation keeps only its first 2,000 characters, so each first
attempt's searches are run again, with the run's search settings, over the question's own
paragraphs (the distractor setting is deterministic): the check reads what the executor read.
Writes bench/e2e/comparison-check-replay.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mia.app.evaluation.datasets import read_examples, resolve
from mia.app.evaluation.reflection import first_answer
from mia.app.evaluation.runlog import read_rows
from mia.graph.context import Context
from mia.graph.judge.matching import match_answer
from mia.graph.nodes.evidence import contradiction, unread
from mia.graph.protocol import is_yes_no_question, question_options
from mia.graph.tools.registry import build_tools

OUT = Path(__file__).with_name("comparison-check-replay.md")


def replay(run: Path) -> tuple[dict[str, int], list[str]]:
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    examples = {e.id: e for e in read_examples(resolve(config["dataset"])[0])}
    top_k = int((config.get("context_overrides") or {}).get("search_top_k") or Context().search_top_k)
    counts = {"questions": 0, "right": 0, "wrong": 0, "contradicted_right": 0, "contradicted_wrong": 0, "picks_gold": 0}
    counts |= {"one_sided_right": 0, "one_sided_wrong": 0, "then_right": 0, "then_wrong": 0, "then_gold": 0}
    fired: list[str] = []
    for row in read_rows(run):
        steps = row.get("trajectory") or []
        cut = next((i for i, s in enumerate(steps) if s.get("kind") == "answer"), None)
        question = row["question"]
        if cut is None or row.get("error") or not (question_options(question) or is_yes_no_question(question)):
            continue
        (search,) = build_tools([p.model_dump() for p in examples[row["id"]].paragraphs], top_k=top_k)
        seen = [str(search.invoke(s.get("args") or {})) for s in steps[:cut] if s.get("kind") == "tool_call"]
        answer = first_answer(steps) or ""
        right = match_answer(row["question"], answer, row["gold_answers"]).decision == "correct"
        key = "right" if right else "wrong"
        counts["questions"] += 1
        counts[key] += 1
        found = contradiction(row["question"], answer, seen)
        if missing := (unread(question, seen) if not found else []):
            counts[f"one_sided_{key}"] += 1
            more = [*seen, str(search.invoke({"query_list": missing}))]  # the evidence round's one call
            if then := contradiction(question, answer, more):
                counts[f"then_{key}"] += 1
                counts["then_gold"] += match_answer(question, then.expected, row["gold_answers"]).decision == "correct"
        if found:
            counts[f"contradicted_{key}"] += 1
            gold = match_answer(row["question"], found.expected, row["gold_answers"]).decision == "correct"
            counts["picks_gold"] += gold
            fired.append(
                f"| {run.name} | {row['question']} | {answer} | {found.facts} | {found.expected} | {'yes' if gold else 'no'} |"
            )
    return counts, fired


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    args = ap.parse_args()
    lines = [
        "# The evidence checks replayed on logged first answers",
        "",
        f"Command: `python bench/e2e/comparison_check_replay.py {' '.join(map(str, args.runs))}`. "
        "Questions that name two candidates, and yes/no questions; first answers graded by the matcher "
        "(uncertain counts as wrong). "
        "A correction can only help a wrong first answer and only hurt a right one.",
        "",
        "| run | questions | right first answers | wrong | contradicted right / wrong | the facts pick the gold "
        "| answered before both were read: right / wrong | after searching the unread: contradicted right / wrong "
        "| they pick the gold |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    details: list[str] = []
    total: dict[str, int] = {}
    for run in args.runs:
        c, fired = replay(run)
        details += fired
        lines.append(
            f"| {run} | {c['questions']} | {c['right']} | {c['wrong']} | "
            f"{c['contradicted_right']} / {c['contradicted_wrong']} | {c['picks_gold']} | "
            f"{c['one_sided_right']} / {c['one_sided_wrong']} | {c['then_right']} / {c['then_wrong']} | {c['then_gold']} |"
        )
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    c = total
    lines.append(
        f"| all | {c['questions']} | {c['right']} | {c['wrong']} | {c['contradicted_right']} / "
        f"{c['contradicted_wrong']} | {c['picks_gold']} | {c['one_sided_right']} / {c['one_sided_wrong']} | "
        f"{c['then_right']} / {c['then_wrong']} | {c['then_gold']} |"
    )
    lines += [
        "",
        "| run | question | first answer | facts read | they pick | gold? |",
        "|---|---|---|---|---|---|",
        *details,
    ]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
