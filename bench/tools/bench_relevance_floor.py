"""Choose the demo corpus's relevance floor: the dense (MiniLM cosine) similarity below which a hit
is not shown, so that a query the corpus cannot answer returns "no relevant passage" instead of
the top-k of unrelated paragraphs (issue 38: "Arthur's Magazine" found a Century Magazine paragraph
and the executor answered from it).

Relevant hits: HotpotQA dev questions (the demo corpus holds their paragraphs), queried as the
executor queries (the question, and each supporting paragraph's title as a keyword query); the
cosine of every supporting paragraph found in the top 5. Unrelated queries: SimpleQA questions,
whose facts the corpus does not hold (their own web paragraphs are not in it). The floor is chosen
on the first half of each set (the tuning half) as the highest value that keeps 99% of the
relevant hits, and reported on the other half.

    .venv/bin/python bench/tools/bench_relevance_floor.py [--n 400]   # writes bench/tools/relevance-floor.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
OUT = Path(__file__).with_name("relevance-floor.md")
KEEP = 0.99  # share of relevant hits the floor must keep on the tuning half
CANDIDATES = [round(x, 2) for x in np.arange(0.10, 0.61, 0.05)]


def read(path: Path, n: int) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rows.append(json.loads(line))
            if len(rows) >= n:
                break
    return rows


def measure(n: int) -> dict:
    from tqdm import tqdm

    from mia.graph.tools import embedder, load_demo_corpus

    corpus = load_demo_corpus()
    corpus.min_relevance = None  # measure every hit; the floor is what this chooses
    titles = [p["title"] for p in corpus.paragraphs]
    position = {p["id"]: j for j, p in enumerate(corpus.paragraphs)}
    hotpot = read(DATA / "hotpotqa" / "hotpotqa_dev_distractor.jsonl", n)
    simple = read(DATA / "simpleqa" / "simpleqa_robustrag500.jsonl", n)
    relevant: list[tuple[int, float]] = []  # (question index, cosine of a supporting hit)
    for i, row in enumerate(tqdm(hotpot, desc="relevant")):
        wanted = set(row["supporting_titles"])
        queries = [row["question"], *sorted(wanted)]
        vectors = embedder.embed(queries)
        for _query, vector, hits in zip(queries, vectors, corpus.search(queries, k=5), strict=True):
            for hit in hits:
                if hit.title in wanted:
                    idx = position[hit.id]
                    relevant.append((i, float(vector @ corpus.embeddings[idx])))
    unrelated: list[tuple[int, float]] = []  # (question index, the best hit's cosine)
    for i, row in enumerate(tqdm(simple, desc="unrelated")):
        vector = embedder.embed([row["question"]])[0]
        unrelated.append((i, float(np.max(corpus.embeddings @ vector))))
    return {"n": n, "relevant": relevant, "unrelated": unrelated, "corpus": len(titles)}


def table(got: dict) -> str:
    half = got["n"] // 2
    rel_tune = np.array([c for i, c in got["relevant"] if i < half])
    rel_test = np.array([c for i, c in got["relevant"] if i >= half])
    unr_tune = np.array([c for i, c in got["unrelated"] if i < half])
    unr_test = np.array([c for i, c in got["unrelated"] if i >= half])
    floor = max(f for f in CANDIDATES if (rel_tune >= f).mean() >= KEEP)
    lines = [
        "| floor | relevant hits kept (tuning) | unrelated queries refused (tuning) | relevant kept (held out) | unrelated refused (held out) |",
        "|---|---|---|---|---|",
    ]
    for f in CANDIDATES:
        mark = " **(chosen)**" if f == floor else ""
        lines.append(
            f"| {f:.2f}{mark} | {(rel_tune >= f).mean():.3f} | {(unr_tune < f).mean():.3f} | "
            f"{(rel_test >= f).mean():.3f} | {(unr_test < f).mean():.3f} |"
        )
    pct = lambda a: ", ".join(f"{q}%: {np.percentile(a, q):.2f}" for q in (1, 5, 50, 95))  # noqa: E731
    return "\n".join(
        [
            "# The demo corpus's relevance floor (issue 38)",
            "",
            f"Measured by `.venv/bin/python bench/tools/bench_relevance_floor.py --n {got['n']}` over the demo corpus "
            f"({got['corpus']:,} paragraphs) with MiniLM-L6.",
            "",
            f"- Relevant: the first {got['n']} HotpotQA dev questions, queried as the question and as each supporting "
            f"title; the cosine of every supporting paragraph in the top 5 ({len(got['relevant'])} hits). Percentiles: "
            f"{pct(np.array([c for _, c in got['relevant']]))}.",
            f"- Unrelated: the first {got['n']} SimpleQA questions (facts the corpus does not hold); the best hit's "
            f"cosine. Percentiles: {pct(np.array([c for _, c in got['unrelated']]))}.",
            f"- Chosen on the first {half} of each (tuning): the highest floor that keeps {KEEP:.0%} of the relevant "
            f"hits; the held-out columns are the other {got['n'] - half}.",
            "",
            *lines,
            "",
            f"Chosen floor: **{floor:.2f}** (`mia.graph.tools.corpus.OPEN_CORPUS_MIN_RELEVANCE`).",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    args = parser.parse_args()
    OUT.write_text(table(measure(args.n)), encoding="utf-8")
    print(OUT.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
