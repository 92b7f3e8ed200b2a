#!/usr/bin/env python
"""How often the LLM grader says CORRECT where the metrics flatly contradict it, in logged runs.

`JudgeConfig.contradiction` decides such a verdict: the grader said CORRECT but the answer shares
no token with any gold answer (EM 0, F1 0, no cover match). `llm` keeps the grader's word (for a
paraphrase such as "JFK" for "John F. Kennedy"), `metrics` grades it by the metrics. This reads
the per-question logs of `mia eval` runs (no model call) and lists every such verdict, so that a
person can tell paraphrases from a grader's mistakes.

    python bench/judge/bench_contradiction.py results/hotpotqa-qwen-*/*/ bench/e2e/*-run/ bench/e2e/*-run/*/
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def contradicted(run_dirs: list[Path]) -> tuple[int, list[dict]]:
    """(LLM-graded verdicts read, the ones the metrics flatly contradict)."""
    from mia.app.evaluation import runlog
    from mia.graph.judge.metrics import cover_match, shares_nothing

    graded, found = 0, []
    for run in run_dirs:
        for r in runlog.read_results(run):
            if r.judge_correct is None:
                continue
            graded += 1
            if r.judge_correct and shares_nothing(r.em, r.f1, cover_match(r.answer, r.gold_answers)):
                found.append({"run": str(run), "id": r.id, "question": r.question, "answer": r.answer,
                              "gold": r.gold_answers, "grader": r.judge_grade})
    return graded, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="`mia eval` run folders (with results.jsonl)")
    parser.add_argument("--out", type=Path, default=HERE / "contradiction.md")
    args = parser.parse_args()
    runs = [d for d in args.runs if (d / "results.jsonl").exists()]
    graded, found = contradicted(runs)
    lines = ["# The grader's CORRECT against the metrics, in logged runs", "",
             "Command: `python bench/judge/bench_contradiction.py results/hotpotqa-qwen-*/*/ bench/e2e/*-run/ "
             "bench/e2e/*-run/*/` (the folders without a results.jsonl are passed over). "
             f"{graded} LLM-graded verdicts in {len(runs)} run folders; **{len(found)}** of them are CORRECT with "
             "EM 0, F1 0 and no cover match (the verdicts `JudgeConfig.contradiction` decides).", "",
             "Run folders read: " + ", ".join(f"`{d}`" for d in runs) + ".", "",
             "| run | question | answer | gold |", "|---|---|---|---|"]
    cell = lambda text: str(text).replace("|", "/").replace("\n", " ")  # noqa: E731
    lines += [f"| {cell(f['run'])} | {cell(f['question'])} | {cell(f['answer'])} | {cell(' / '.join(f['gold']))} |"
              for f in found]
    text = "\n".join(lines) + "\n"
    args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
