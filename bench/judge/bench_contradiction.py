#!/usr/bin/env python
"""How often the LLM grader's grade is flatly contradicted by the metrics, in logged runs.

`JudgeConfig.contradiction` decides such a verdict: the grader said CORRECT but the answer shares
no token with any gold answer (EM 0, F1 0, no cover match), or it said anything else for an exact
match of a gold answer or its words in another order (F1 1.0, `same_words`). `llm` keeps the grader's word (for a
paraphrase such as "JFK" for "John F. Kennedy"), `metrics` grades it by the metrics. This reads
the per-question logs of `mia eval` runs (no model call) and lists every such verdict, so that a
person can tell paraphrases from a grader's mistakes.

    python bench/judge/bench_contradiction.py results/*-qwen-*/*/ bench/e2e/*-run/ bench/e2e/*-run/*/

A run graded with the `metrics` policy logs the resolved verdict, so its CORRECTs without a shared
token no longer show here.
"""

from __future__ import annotations

from mia.app.evaluation.runlog import read_rows

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def contradicted(run_dirs: list[Path]) -> tuple[int, list[dict]]:
    """(LLM-graded verdicts read, the ones the metrics flatly contradict)."""
    from mia.app.evaluation import runlog
    from mia.graph.judge.metrics import cover_match, same_words, shares_nothing

    graded, found = 0, []
    for run in run_dirs:
        for r in runlog.read_results(run):
            if r.judge_correct is None:
                continue
            graded += 1
            if r.judge_correct and shares_nothing(r.em, r.f1, cover_match(r.answer, r.gold_answers)):
                direction = "CORRECT, no shared token"
            elif r.judge_correct is False and same_words(r.em, r.f1):
                direction = "not CORRECT, exact match" if r.em >= 1.0 else "not CORRECT, gold words reordered (F1 1.0)"
            else:
                continue
            found.append(
                {
                    "run": str(run),
                    "id": r.id,
                    "question": r.question,
                    "answer": r.answer,
                    "gold": r.gold_answers,
                    "grader": r.judge_grade,
                    "direction": direction,
                }
            )
    return graded, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="`mia eval` run folders (with results.jsonl)")
    parser.add_argument("--out", type=Path, default=HERE / "contradiction.md")
    args = parser.parse_args()
    runs = [d for d in args.runs if read_rows(d)]
    graded, found = contradicted(runs)
    lines = [
        "# The grader's verdict against the metrics, in logged runs",
        "",
        "Command: `python bench/judge/bench_contradiction.py results/*-qwen-*/*/ bench/e2e/*-run/ "
        "bench/e2e/*-run/*/` (the folders without a results.jsonl are passed over). "
        f"{graded} LLM-graded verdicts in {len(runs)} run folders; **{len(found)}** of them are flatly contradicted: "
        f"{sum(f['direction'].startswith('CORRECT') for f in found)} CORRECT with EM 0, F1 0 and no cover match, "
        f"{sum(f['direction'].startswith('not') for f in found)} not CORRECT for an exact match or the gold's words reordered (the verdicts "
        "`JudgeConfig.contradiction` decides; runs graded with the `metrics` policy log the resolved verdict).",
        "",
        "Run folders read: " + ", ".join(f"`{d}`" for d in runs) + ".",
        "",
        "| run | grader | question | answer | gold |",
        "|---|---|---|---|---|",
    ]
    cell = lambda text: str(text).replace("|", "/").replace("\n", " ")  # noqa: E731
    lines += [
        f"| {cell(f['run'])} | {f['direction']} | {cell(f['question'])} | {cell(f['answer'])} | {cell(' / '.join(f['gold']))} |"
        for f in found
    ]
    text = "\n".join(lines) + "\n"
    args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
