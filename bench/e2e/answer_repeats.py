"""How many logged answers loop, and what cutting the loop (`drop_repeats`) does to their metrics.

    .venv/bin/python bench/e2e/answer_repeats.py results/hotpotqa-qwen-defaults/none results/hotpotqa-qwen-defaults/mia

Reads run folders written before the graph cut looping answers and applies the protocol's
`drop_repeats` to every answer (no model is called). Writes bench/e2e/answer-repeats.md.
"""

from __future__ import annotations

from mia.app.evaluation.runlog import read_rows

import argparse
from pathlib import Path

from mia.graph.judge.metrics import cover_match, exact_match, f1_score
from mia.graph.protocol import drop_repeats

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=HERE / "answer-repeats.md")
    args = parser.parse_args()
    lines = [
        "| run | answers | looping | characters before -> after | EM | F1 | cover |",
        "|---|---|---|---|---|---|---|",
    ]
    examples: list[str] = []
    for run in args.runs:
        rows = read_rows(run)
        cut = [(r, a) for r, a in ((r, drop_repeats(r["answer"])) for r in rows) if a != r["answer"]]
        cells = []
        for metric in (exact_match, f1_score, cover_match):
            before = sum(float(metric(r["answer"], r["gold_answers"])) for r, _ in cut)
            after = sum(float(metric(answer, r["gold_answers"])) for r, answer in cut)
            cells.append(f"{before:.2f} -> {after:.2f}")
        chars = f"{sum(len(r['answer']) for r, _ in cut)} -> {sum(len(a) for _, a in cut)}"
        lines.append(f"| {run} | {len(rows)} | {len(cut)} | {chars} | " + " | ".join(cells) + " |")
        examples += [
            f'- {run.name}: "{r["question"]}" ({len(r["answer"])} -> {len(a)} characters): "{a}"' for r, a in cut
        ]
    text = (
        "# Answers that loop, cut by `drop_repeats`\n\n"
        f"Command: `python bench/e2e/answer_repeats.py {' '.join(map(str, args.runs))}`. No model is called; "
        "EM, F1 and cover are sums over the looping answers, before -> after.\n\n"
        + "\n".join(lines)
        + "\n\n"
        + "\n".join(examples)
        + "\n"
    )
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
