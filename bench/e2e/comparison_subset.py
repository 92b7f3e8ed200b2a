"""The comparison questions ("..., A or B?") of a run folder, as a dataset file, and how often its
answers name neither candidate.

    .venv/bin/python bench/e2e/comparison_subset.py results/2wiki-qwen-defaults/none --dataset 2wiki \
        --write /tmp/2wiki-comparison.jsonl
    .venv/bin/mia eval --dataset /tmp/2wiki-comparison.jsonl --memory none --max-tool-calls 4 \
        --out results/2wiki-comparison-candidates/none
    .venv/bin/python bench/e2e/comparison_subset.py results/2wiki-qwen-defaults/none \
        results/2wiki-comparison-candidates/none --out results/2wiki-comparison-candidates/candidates.md

The file holds the run's comparison questions as the bundled set stores them (paragraphs
included), so a later run answers exactly those and `mia eval-report` pairs them with the earlier
run. No model is called here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mia.app.evaluation.datasets import read_examples, resolve
from mia.app.evaluation.runlog import latest_by_id, read_results
from mia.graph.judge.metrics import cover_match
from mia.graph.protocol import question_options


def comparison_results(run: Path) -> dict:
    """The run's answers to comparison questions, by question id."""
    return {i: r for i, r in latest_by_id(read_results(run)).items() if question_options(r.question)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--dataset", help="with --write: the dataset the first run answered (name or path)")
    parser.add_argument("--write", type=Path, help="write the first run's comparison questions here (JSONL)")
    parser.add_argument("--out", type=Path, help="write the table here (markdown) as well as printing it")
    args = parser.parse_args()
    if args.write:
        if not args.dataset:
            parser.error("--write needs --dataset")
        ids = set(comparison_results(args.runs[0]))
        path, _ = resolve(args.dataset)
        chosen = [ex for ex in read_examples(path) if ex.id in ids]
        args.write.write_text("".join(ex.model_dump_json(exclude_none=True) + "\n" for ex in chosen), encoding="utf-8")
        print(f"{len(chosen)} comparison questions -> {args.write}")
    runs = {run: comparison_results(run) for run in args.runs}
    common = set.intersection(*(set(found) for found in runs.values()))
    lines = [
        "| run | comparison questions | answer names a candidate | judge correct | EM | F1 (sum) |",
        "|---|---|---|---|---|---|",
    ]
    for run, found in runs.items():
        rows = [found[i] for i in sorted(common)]
        named = sum(cover_match(r.answer, question_options(r.question)) for r in rows)  # a candidate, token-wise
        lines.append(
            f"| {run} | {len(rows)} | {named} | {sum(bool(r.judge_correct) for r in rows)} | "
            f"{sum(r.em for r in rows):.0f} | {sum(r.f1 for r in rows):.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(
            f"Command: `python bench/e2e/comparison_subset.py {' '.join(map(str, args.runs))}`\n\n" + table + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
