"""How related are the memories a run showed its planner to the question they were shown for?

    .venv/bin/python bench/memory/relatedness.py results/hotpotqa-qwen-n100/mia results/hotpotqa-qwen-defaults/mia \
        --dataset hotpotqa --dataset 2wiki --dataset musique --n 100

Reads each run folder's results.jsonl (no model is called) and embeds with the store's own
embedder (MiniLM, `embed_text`) the questions and the questions of the memories each answer
lists. Two figures per run:

- nearest earlier question: for question i, the highest cosine to questions 1..i-1 of the same
  run, which bounds what an online memory built from the run itself can offer;
- shown memories: the cosine between each question and the question of every memory retrieved
  for it (positives and negatives), which is what the planner was actually given.

Retrieval min-max normalises similarity over the candidate pool (MIA's rule, memory/scoring.py),
so a memory is shown however unrelated the best candidate is; these cosines say how often that
is the case. `--dataset NAME --n N` adds the first figure for the seeded sample `mia eval
--dataset NAME --n N` would answer, in its order, before any run: what online memory could offer
on that set.

`--pair MEMORY_RUN:BASELINE_RUN` tests whether the memory helps where it is related: the
questions both runs answered are split by the highest cosine of a memory shown for them (above
`--related` or not), and each part gets both runs' judge accuracy and an exact McNemar test.
Output: bench/memory/relatedness.md (or `--out`).
"""

from __future__ import annotations

from mia.app.evaluation.runlog import read_rows

import argparse
import json
from pathlib import Path

import numpy as np

from mia.memory.embeddings import default_embedder
from mia.memory.records import embed_text

HERE = Path(__file__).resolve().parent
THRESHOLDS = (0.5, 0.6, 0.7)


def describe(values: np.ndarray) -> dict[str, float | int]:
    out: dict[str, float | int] = {"n": int(values.size)}
    if values.size:
        out.update(median=float(np.median(values)), p90=float(np.percentile(values, 90)), max=float(values.max()))
        out.update({f"above_{t}": int((values > t).sum()) for t in THRESHOLDS})
    return out


def nearest_earlier(questions: list[str], embedder) -> tuple[np.ndarray, np.ndarray]:
    """(question vectors, highest cosine of each question to the ones before it)."""
    vectors = embedder.embed_documents([embed_text(q) for q in questions])
    sims = vectors @ vectors.T
    return vectors, np.array([sims[i, :i].max() for i in range(1, len(questions))])


def dataset_figures(name: str, n: int, seed: int, embedder) -> dict[str, dict]:
    from mia.app.evaluation.datasets import load_examples

    examples, _ = load_examples(name, n=n, seed=seed)
    _, nearest = nearest_earlier([ex.question for ex in examples], embedder)
    return {"nearest_earlier": describe(nearest), "shown": describe(np.zeros(0)), "questions": len(examples)}


def shown_cosines(rows: list[dict], vectors: np.ndarray, embedder) -> tuple[list[int], np.ndarray]:
    """(row index, cosine) of every memory shown: the logged `similarity` where the run has it
    (since the typed result keeps it), else the questions embedded again."""
    shown = [(i, m) for i, r in enumerate(rows) for m in r.get("memories") or [] if m.get("question")]
    if not shown:
        return [], np.zeros(0)
    if all("similarity" in m for _, m in shown):
        return [i for i, _ in shown], np.array([float(m["similarity"]) for _, m in shown])
    memory_vectors = embedder.embed_documents([embed_text(m["question"]) for _, m in shown])
    return [i for i, _ in shown], np.einsum("ij,ij->i", vectors[[i for i, _ in shown]], memory_vectors)


def run_figures(folder: Path, embedder) -> dict[str, dict]:
    rows = read_rows(folder)
    vectors, nearest = nearest_earlier([r["question"] for r in rows], embedder)
    _, shown = shown_cosines(rows, vectors, embedder)
    return {"nearest_earlier": describe(nearest), "shown": describe(shown), "questions": len(rows)}


def paired_strata(memory_run: Path, baseline: Path, related: float, embedder) -> list[dict]:
    """The questions both runs answered, split by whether a memory shown for them had a cosine
    above `related`: in each part, both runs' judge accuracy and McNemar (b: only the baseline
    right, c: only the memory run right)."""
    from mia.app.evaluation.stats import mcnemar_exact

    rows = read_rows(memory_run)
    vectors = embedder.embed_documents([embed_text(r["question"]) for r in rows])
    best = np.full(len(rows), -1.0)
    for i, cos in zip(*shown_cosines(rows, vectors, embedder), strict=True):
        best[i] = max(best[i], cos)
    base = {r["id"]: r for r in read_rows(baseline)}
    parts: dict[str, list[tuple[bool, bool]]] = {f"a shown memory above {related}": [], f"none above {related}": []}
    for row, cos in zip(rows, best, strict=True):
        if (
            row["id"] in base
            and row.get("judge_correct") is not None
            and base[row["id"]].get("judge_correct") is not None
        ):
            key = list(parts)[0 if cos > related else 1]
            parts[key].append((bool(base[row["id"]]["judge_correct"]), bool(row["judge_correct"])))
    out = []
    for label, pairs in parts.items():
        m = mcnemar_exact([b for b, _ in pairs], [a for _, a in pairs])
        out.append(
            {
                "questions": label,
                "n": len(pairs),
                "baseline_correct": sum(b for b, _ in pairs),
                "memory_correct": sum(a for _, a in pairs),
                "only_baseline": m.b,
                "only_memory": m.c,
                "p_value": m.p_value,
            }
        )
    return out


def strata_table(pairs: dict[str, list[dict]]) -> str:
    lines = [
        "| memory run : baseline | questions | n | baseline right | memory right | only baseline | only memory | McNemar p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for pair, parts in pairs.items():
        for p in parts:
            lines.append(
                f"| {pair} | {p['questions']} | {p['n']} | {p['baseline_correct']} | {p['memory_correct']} | "
                f"{p['only_baseline']} | {p['only_memory']} | {p['p_value']:.3f} |"
            )
    return "\n".join(lines)


def table(results: dict[str, dict]) -> str:
    head = "| run | questions | figure | n | median | p90 | max | " + " | ".join(f"> {t}" for t in THRESHOLDS) + " |"
    lines = [head, "|" + "---|" * (7 + len(THRESHOLDS))]
    for run, figures in results.items():
        for key, label in (("nearest_earlier", "nearest earlier question"), ("shown", "shown memories")):
            f = figures[key]
            if not f["n"]:
                continue
            cells = [f"{f[k]:.2f}" if k in f else "-" for k in ("median", "p90", "max")]
            counts = [str(f.get(f"above_{t}", "-")) for t in THRESHOLDS]
            lines.append(
                f"| {run} | {figures['questions']} | {label} | {f['n']} | " + " | ".join(cells + counts) + " |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path, help="run folders with a results.jsonl")
    parser.add_argument("--dataset", action="append", default=[], help="a dataset of `mia eval` (repeatable)")
    parser.add_argument("--n", type=int, default=100, help="questions sampled per --dataset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--pair",
        action="append",
        default=[],
        metavar="MEMORY_RUN:BASELINE_RUN",
        help="accuracy of both runs where the shown memories were related or not (repeatable)",
    )
    parser.add_argument("--related", type=float, default=0.5, help="the cosine above which a memory counts as related")
    parser.add_argument("--out", type=Path, default=HERE / "relatedness.md")
    args = parser.parse_args()
    embedder = default_embedder()
    results = {str(run): run_figures(run, embedder) for run in args.runs}
    results.update(
        {
            f"{name} (n {args.n}, seed {args.seed})": dataset_figures(name, args.n, args.seed, embedder)
            for name in args.dataset
        }
    )
    pairs = {}
    for pair in args.pair:
        memory_run, _, baseline = pair.partition(":")
        if not baseline:
            parser.error(f"--pair {pair!r}: give MEMORY_RUN:BASELINE_RUN")
        pairs[pair] = paired_strata(Path(memory_run), Path(baseline), args.related, embedder)
    command = "python bench/memory/relatedness.py " + " ".join(
        [str(r) for r in args.runs]
        + [f"--dataset {d}" for d in args.dataset]
        + ([f"--n {args.n}"] if args.dataset else [])
        + [f"--pair {p}" for p in args.pair]
        + ([f"--related {args.related}"] if args.pair else [])
        + ([f"--out {args.out}"] if args.out != HERE / "relatedness.md" else [])
    )
    text = (
        "# Relatedness of the memories shown to the planner (MiniLM cosine of the questions)\n\n"
        f"Command: `{command}`. No model is called.\n" + (f"\n{table(results)}\n" if results else "")
    )
    if pairs:
        text += (
            "\n## Where the shown memories were related, and where not (judge accuracy, paired)\n\n"
            f"{strata_table(pairs)}\n"
        )
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps({"runs": results, "pairs": pairs}, indent=2) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
