"""Memory store benchmark: add and retrieve latency at 1k..1M memories, against the paper's
brute-force NumPy scan, with an exactness check of the returned scores.

    nice .venv/bin/python bench/memory/bench_store.py --sizes 1000 10000 100000 1000000
    .venv/bin/python bench/memory/bench_store.py --report-only      # rewrite results.md from the json

Vectors are random unit-normalised 384-d (MiniLM's size), precomputed: the store is opened with a
`PrecomputedEmbedder`, so the figures are the store's own cost; the MiniLM query embedding is
timed separately and stated beside them. Stores are kept in --workdir and a run resumes a
partial build (ids and vectors are deterministic), so the 1M build can be spread over runs.
Results are merged into results.json (one entry per size) and rendered to results.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from mia.memory import MemoryRecord, MemoryStore
from mia.memory.embeddings import PrecomputedEmbedder

HERE = Path(__file__).resolve().parent
DIM = 384
WORKFLOW = " ".join(
    [
        "1. Identify the entities in the question (question -> entity names)",
        '2. Search each entity (query "entity founded" -> dates)',
        '3. Cross-check the dates with a second search (query "entity history" -> confirmation)',
        "4. Compare and answer (dates -> earlier entity; judged correct)",
    ]
)  # ~45 words, a typical workflow


def vectors(n: int, seed: int = 0, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Deterministic unit vectors, generated in blocks of 100k so a resumed build gets the same ones."""
    stop = n if stop is None else stop
    out = []
    block = 100_000
    for b in range(start // block, (stop - 1) // block + 1):
        rng = np.random.default_rng(seed * 1_000_003 + b)
        chunk = rng.standard_normal((block, DIM)).astype(np.float32)
        chunk /= np.linalg.norm(chunk, axis=1, keepdims=True)
        lo, hi = max(start, b * block), min(stop, (b + 1) * block)
        out.append(chunk[lo - b * block : hi - b * block])
    return np.vstack(out)


def demo_vectors() -> np.ndarray:
    """Real MiniLM vectors: the shipped demo corpus embeddings (21,633 Wikipedia paragraphs),
    unit-normalised. Sentence embeddings cluster by topic, unlike random vectors."""
    from mia.graph.tools.loading import DEMO_EMBEDDINGS

    E = np.load(DEMO_EMBEDDINGS, allow_pickle=False).astype(np.float32)
    return E / np.linalg.norm(E, axis=1, keepdims=True)


def demo_queries(count: int) -> np.ndarray:
    """MiniLM embeddings of real questions (the committed HotpotQA evaluation set)."""
    import gzip

    from mia.app.evaluation import datasets
    from mia.memory.embeddings import default_embedder

    path = Path(datasets.__file__).parent / "hotpotqa.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line, _ in zip(fh, range(count))]
    Q = np.asarray(default_embedder().embed_documents(questions), dtype=np.float32)
    return Q / np.linalg.norm(Q, axis=1, keepdims=True)


class Source:
    """Where the memories' vectors and the queries come from: 'random' (any n) or 'demo' (real)."""

    def __init__(self, name: str, n: int) -> None:
        self.name, self.n = name, n
        self._demo = demo_vectors() if name == "demo" else None
        if self._demo is not None:
            self.n = min(n, len(self._demo))

    @property
    def key(self) -> str:
        return str(self.n) if self.name == "random" else f"{self.n}-{self.name}"

    def vectors(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        if self._demo is not None:
            return self._demo[start : self.n if stop is None else stop]
        return vectors(self.n, start=start, stop=stop)

    def queries(self, E: np.ndarray, count: int) -> np.ndarray:
        if self._demo is not None:
            return demo_queries(count)
        # queries near stored memories (a paraphrase lands near its original), plus noise
        rng = np.random.default_rng(12345)
        Q = E[rng.integers(0, len(E), count)] + rng.standard_normal((count, DIM)).astype(np.float32) * 0.05
        return Q / np.linalg.norm(Q, axis=1, keepdims=True)


def counts(i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic usage/success counts per record index (a third never used)."""
    usage = (i * 7919) % 9
    usage[i % 3 == 0] = 0
    success = (i * 104729) % (usage + 1)
    return usage, success


def record(i: int, usage: int, success: int, now: float) -> MemoryRecord:
    return MemoryRecord(
        id=f"b{i}",
        namespace="bench",
        question=f"benchmark question number {i}?",
        workflow=WORKFLOW,
        outcome="correct" if i % 2 == 0 else "incorrect",
        usage_count=int(usage),
        success_count=int(success),
        created_at=now,
        trace_tokens=1500,
        workflow_tokens=70,
    )


def build(store: MemoryStore, source: Source, batch: int = 5000, budget_s: float | None = None) -> dict[str, float]:
    """Add the missing memories in batches; stop early once `budget_s` is spent (the next run
    resumes from there)."""
    from tqdm import tqdm

    n = source.n
    have = store.count("bench")
    start = have - have % batch if have < n else n
    now = time.time()
    t0 = time.perf_counter()
    added = 0
    with tqdm(total=n, initial=start, desc=f"build {n:,}", unit="mem", file=sys.stderr) as bar:
        for lo in range(start, n, batch):
            hi = min(n, lo + batch)
            idx = np.arange(lo, hi)
            usage, success = counts(idx)
            recs = [record(int(i), u, s, now) for i, u, s in zip(idx, usage, success)]
            store.add_many(recs, source.vectors(lo, hi))
            added += hi - lo
            bar.update(hi - lo)
            if budget_s is not None and time.perf_counter() - t0 > budget_s:
                break
    seconds = time.perf_counter() - t0
    log_path = Path(store.location) / "build_log.jsonl"
    if added:
        with log_path.open("a") as fh:  # a build spread over several runs: the rate is over all of them
            fh.write(json.dumps({"added": added, "seconds": seconds, "loadavg": os.getloadavg()[0]}) + "\n")
    runs = [json.loads(line) for line in log_path.read_text().splitlines()] if log_path.exists() else []
    total_added, total_s = sum(r["added"] for r in runs), sum(r["seconds"] for r in runs)
    return {
        "resumed_from": start,
        "added": added,
        "build_s": total_s or seconds,
        "build_per_s": total_added / total_s if total_s else None,
        "built": start + added,
        "build_runs": len(runs),
        "build_loadavg": [r["loadavg"] for r in runs],
    }


def brute_force(
    E: np.ndarray, usage: np.ndarray, success: np.ndarray, positive: np.ndarray, q: np.ndarray, k: int = 2
) -> tuple[list[int], list[int]]:
    """The paper's method: cosine against every memory of the bucket, min-max over all of them,
    0.7 * s + 0.3 * win rate, top k per label (here with the same Laplace prior as the store)."""
    sims = E @ q
    s = (sims - sims.min()) / (sims.max() - sims.min() + 1e-8)
    scores = 0.7 * s + 0.3 * (success + 1.0) / (usage + 2.0)
    pos_scores = np.where(positive, scores, -np.inf)
    neg_scores = np.where(~positive, scores, -np.inf)
    top_p = np.argpartition(-pos_scores, k)[:k]
    top_n = np.argpartition(-neg_scores, k)[:k]
    return (
        [int(i) for i in top_p[np.argsort(-pos_scores[top_p])]],
        [int(i) for i in top_n[np.argsort(-neg_scores[top_n])]],
    )


def rescore_candidates(
    E: np.ndarray, usage: np.ndarray, success: np.ndarray, idx: np.ndarray, q: np.ndarray
) -> np.ndarray:
    """Independent re-implementation of the store's scoring over a candidate set (float64)."""
    cand = E[idx].astype(np.float64)
    sims = cand @ q.astype(np.float64) / (np.linalg.norm(cand, axis=1) * np.linalg.norm(q))
    s = (sims - sims.min()) / (sims.max() - sims.min() + 1e-8)
    return 0.7 * s + 0.3 * (success[idx] + 1.0) / (usage[idx] + 2.0)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000.0, q))


def open_store(source: Source, workdir: Path, n_candidates: int = 50) -> MemoryStore:
    folder = workdir / (f"n{source.n}" if source.name == "random" else f"n{source.n}-{source.name}")
    return MemoryStore.open(
        folder, embedder=PrecomputedEmbedder(DIM, f"bench-{source.name}-384"), n_candidates=n_candidates
    )


def bench_size(
    source: Source, workdir: Path, queries: int, n_candidates: int, budget_s: float | None = None, warmup: int = 100
) -> dict:
    store = open_store(source, workdir, n_candidates)
    built = build(store, source, budget_s=budget_s)
    target, n = source.n, store.count("bench")  # a budgeted build measures the size it reached
    E = source.vectors(0, n)
    idx_all = np.arange(n)
    usage, success = counts(idx_all)
    positive = idx_all % 2 == 0
    Q = source.queries(E, queries)

    # Warm up as a serving process would be: the first queries fault a 1M index's pages in from
    # disk (p99 in the tens of ms); a running agent's store is hot. Warm-up queries are separate
    # random directions, not the measured ones.
    warm = np.random.default_rng(777).standard_normal((warmup, DIM)).astype(np.float32)
    for q in warm / np.linalg.norm(warm, axis=1, keepdims=True):
        store.retrieve("", "bench", query_embedding=q)
    ann_t, ann_cpu, bf_t, bf_cpu = [], [], [], []
    max_diff, same_rank, agree, recall = 0.0, 0, 0, 0.0
    answers = []
    for q in Q:  # retrievals back to back: a full scan in between would flush the caches each time
        t, c = time.perf_counter(), time.process_time()
        answers.append(store.retrieve("", "bench", query_embedding=q))
        ann_t.append(time.perf_counter() - t)
        ann_cpu.append(time.process_time() - c)
    for q, got in zip(Q, answers):
        t, c = time.perf_counter(), time.process_time()
        bf_pos, bf_neg = brute_force(E, usage, success, positive, q)
        bf_t.append(time.perf_counter() - t)
        bf_cpu.append(time.process_time() - c)
        # exactness: rescore the candidate set independently, compare scores and ranks
        cand = np.array([int(c[1:]) for c in got.candidate_ids])
        ref = rescore_candidates(E, usage, success, cand, q)
        ref_of = dict(zip(cand.tolist(), ref.tolist()))
        mine = [(int(m.record.id[1:]), m.score) for m in got.positives + got.negatives]
        max_diff = max(max_diff, max(abs(ref_of[i] - s) for i, s in mine))
        pos_c = [i for i in cand if i % 2 == 0]
        neg_c = [i for i in cand if i % 2 == 1]
        want_pos = sorted(pos_c, key=lambda i: -ref_of[i])[:2]
        want_neg = sorted(neg_c, key=lambda i: -ref_of[i])[:2]
        same_rank += [i for i, _ in mine] == want_pos + want_neg
        agree += len(set(i for i, _ in mine) & set(bf_pos + bf_neg))
        # ANN recall: the exact 10 nearest of each label, found among the candidates?
        sims = E @ q
        exact = np.concatenate(
            [
                np.argpartition(-np.where(positive, sims, -np.inf), 10)[:10],
                np.argpartition(-np.where(~positive, sims, -np.inf), 10)[:10],
            ]
        )
        recall += len(set(exact.tolist()) & set(cand.tolist())) / 20

    adds = []
    now = time.time()
    extra = vectors(1000, seed=99)
    for j in range(30):
        rec = MemoryRecord(
            id=f"extra{j}", namespace="bench", question="extra", workflow=WORKFLOW, outcome="correct", created_at=now
        )
        t = time.perf_counter()
        store.add(rec, extra[j])
        adds.append(time.perf_counter() - t)
    store.delete([f"extra{j}" for j in range(30)], namespace="bench")
    disk = sum(f.stat().st_size for f in Path(store.location).rglob("*") if f.is_file())
    store.close()
    return {
        "n": n,
        "vectors": source.name,
        "warmup_queries": warmup,
        "target_n": target,
        "partial_build": n < target,
        **built,
        "queries": queries,
        "n_candidates_per_label": n_candidates,
        "retrieve_p50_ms": pct(ann_t, 50),
        "retrieve_p95_ms": pct(ann_t, 95),
        "retrieve_p99_ms": pct(ann_t, 99),
        "retrieve_cpu_p50_ms": pct(ann_cpu, 50),
        "bruteforce_cpu_p50_ms": pct(bf_cpu, 50),
        "bruteforce_p50_ms": pct(bf_t, 50),
        "bruteforce_p95_ms": pct(bf_t, 95),
        "add_one_p50_ms": pct(adds, 50),
        "add_one_p95_ms": pct(adds, 95),
        "candidate_rescoring_max_abs_diff": max_diff,
        "candidate_rescoring_same_ranking": same_rank / queries,
        "topk_agreement_with_full_scan": agree / (4 * queries),
        "ann_recall_at_10": recall / queries,
        "disk_bytes": disk,
        "disk_bytes_per_memory": disk / n,
        "loadavg": os.getloadavg(),
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }


def bench_bruteforce_only(n: int, queries: int) -> dict:
    """Only the paper's scan at size n (when the Chroma store could not be built in time)."""
    E = vectors(n)
    idx_all = np.arange(n)
    usage, success = counts(idx_all)
    positive = idx_all % 2 == 0
    rng = np.random.default_rng(12345)
    Q = E[rng.integers(0, n, queries)] + rng.standard_normal((queries, DIM)).astype(np.float32) * 0.05
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    wall, cpu = [], []
    for q in Q:
        t, c = time.perf_counter(), time.process_time()
        brute_force(E, usage, success, positive, q)
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return {
        "n": n,
        "bruteforce_only": True,
        "queries": queries,
        "bruteforce_p50_ms": pct(wall, 50),
        "bruteforce_p95_ms": pct(wall, 95),
        "bruteforce_cpu_p50_ms": pct(cpu, 50),
        "matrix_bytes": int(E.nbytes),
        "loadavg": os.getloadavg(),
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }


def embed_query_ms(repeats: int = 30) -> float | None:
    try:
        from mia.memory.embeddings import default_embedder

        emb = default_embedder()
        emb.embed_query("warm up")
        times = []
        for i in range(repeats):
            t = time.perf_counter()
            emb.embed_query(f"Which magazine was started first, Arthur's Magazine or First for Women? ({i})")
            times.append(time.perf_counter() - t)
        return pct(times, 50)
    except Exception as err:  # noqa: BLE001
        print("query embedding not measured:", err, file=sys.stderr)
        return None


def render(results: dict) -> str:
    meta = results.get("machine", {})
    emb = results.get("embed_query_p50_ms")
    lines = [
        "# Memory store benchmark",
        "",
        f"Machine: {meta.get('cpus')} CPUs ({meta.get('platform')}), Python {meta.get('python')}. "
        "The machine is shared: each row gives the load average while it ran.",
        "",
        "Store: Chroma embedded (PersistentClient), one collection per (namespace, outcome), HNSW cosine, "
        f"ef_search 128; retrieval = ANN top-{results.get('n_candidates', 50)} of the positive and of the "
        "negative collection (looked up side by side on two threads), then exact rescoring (0.7 min-max cosine + 0.3 Laplace win rate), top 2 + 2. "
        "Baseline: the paper's brute-force NumPy scan over every memory of the bucket (float32 matrix in RAM, "
        "BLAS on all cores). Vectors: random unit 384-d, precomputed (queries: stored vectors plus noise).",
        "",
        "| memories | build (mem/s) | add one p50 / p95 ms | retrieve p50 / p95 / p99 ms | retrieve CPU p50 ms "
        "| brute force p50 / p95 ms | brute force CPU p50 ms "
        "| candidate rescoring max abs diff | same ranking | ANN recall@10 | top-k agreement with full scan | disk / memory | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(results["sizes"], key=lambda k: (int(k.split("-")[0]), k)):
        r = results["sizes"][key]
        if r.get("bruteforce_only"):
            lines.append(
                f"| {r['n']:,} | not built (see notes) | - | - | - | {r['bruteforce_p50_ms']:.1f} / "
                f"{r['bruteforce_p95_ms']:.1f} | {r['bruteforce_cpu_p50_ms']:.1f} | - | - | - | - | "
                f"{r['matrix_bytes'] / r['n'] / 1024:.1f} KiB (matrix only) | {r['loadavg'][0]:.1f} |"
            )
            continue
        build = f"{r['build_per_s']:.0f}" if r.get("build_per_s") else "reused"
        size = f"{r['n']:,}" + (f" (partial build towards {r['target_n']:,})" if r.get("partial_build") else "")
        if r.get("vectors", "random") != "random":
            size += " **real MiniLM vectors**"
        lines.append(
            f"| {size} | {build} | {r['add_one_p50_ms']:.1f} / {r['add_one_p95_ms']:.1f} "
            f"| {r['retrieve_p50_ms']:.1f} / {r['retrieve_p95_ms']:.1f} / {r['retrieve_p99_ms']:.1f} "
            f"| {r.get('retrieve_cpu_p50_ms', float('nan')):.1f} "
            f"| {r['bruteforce_p50_ms']:.1f} / {r['bruteforce_p95_ms']:.1f} | {r.get('bruteforce_cpu_p50_ms', float('nan')):.1f} "
            f"| {r['candidate_rescoring_max_abs_diff']:.1e} | {r['candidate_rescoring_same_ranking']:.0%} "
            f"| {r.get('ann_recall_at_10', float('nan')):.0%} "
            f"| {r['topk_agreement_with_full_scan']:.0%} | {r['disk_bytes_per_memory'] / 1024:.1f} KiB "
            f"| {r['loadavg'][0]:.1f} |"
        )
    lines += [
        "",
        f"Query embedding (MiniLM-L6, one sentence, CPU): p50 {emb:.1f} ms; add it to the retrieve column "
        "for the latency of a retrieval from question text."
        if emb
        else "Query embedding: not measured.",
        "",
    ]
    lines += [
        "*CPU* columns are the process CPU time per call (all threads): on a machine this loaded the wall "
        "clock mostly measures waiting for a core; CPU time is close to the latency on an idle machine.",
        "",
    ]
    lines += [
        "Columns: *candidate rescoring* compares the scores the store returns with an independent NumPy "
        "rescoring of the same candidate set (the exactness check; the store takes the cosine that hnswlib computed, in float32, for each returned point); *ANN recall@10* is the share of the exact 10 nearest memories of each label that are in the candidate pool; *top-k agreement* is the share of the "
        "2 + 2 memories that the paper's full scan (min-max over the whole bucket) also returns: the two "
        "differ mainly by design: the pool's min-max range is narrower than the whole bucket's, so similarity "
        "keeps its 0.7 weight among the candidates however large the store grows (see docs/memory.md).",
        "",
    ]
    if results.get("notes"):
        lines += ["Notes:", ""] + [f"- {note}" for note in results["notes"]] + [""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000, 1000000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--n-candidates", type=int, default=50)
    parser.add_argument(
        "--warmup", type=int, default=100, help="Unmeasured retrievals first (a serving process is warm)."
    )
    parser.add_argument("--workdir", type=Path, default=Path(os.environ.get("MIA_BENCH_DIR", "/tmp/mia-bench-memory")))
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--note", action="append", default=[])
    parser.add_argument(
        "--bruteforce-only",
        type=int,
        nargs="*",
        default=[],
        help="Sizes at which only the brute-force scan is measured.",
    )
    parser.add_argument(
        "--build-budget-s",
        type=float,
        default=None,
        help="Stop building after this long and measure at the size reached (resumable).",
    )
    parser.add_argument(
        "--vectors",
        choices=["random", "demo"],
        default="random",
        help="random: unit 384-d vectors (any size); demo: the real MiniLM vectors of the shipped "
        "demo corpus (21,633) with real questions as queries, for ANN recall on real embeddings.",
    )
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="Only build (or resume building) the stores; measure them in a later, quieter run.",
    )
    args = parser.parse_args()
    if args.build_only:
        for n in args.sizes:
            source = Source(args.vectors, n)
            store = open_store(source, args.workdir, args.n_candidates)
            print(json.dumps({"n": n, **build(store, source, budget_s=args.build_budget_s)}), flush=True)
            store.close()
        return
    results = json.loads(args.out.read_text()) if args.out.exists() else {"sizes": {}}
    results.setdefault("notes", [])
    results["notes"] += [n for n in args.note if n not in results["notes"]]
    if not args.report_only:
        results["machine"] = {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        }
        results["n_candidates"] = args.n_candidates
        results["embed_query_p50_ms"] = embed_query_ms()
        for n in args.sizes:
            source = Source(args.vectors, n)
            print(f"== {source.n:,} memories ({source.name} vectors)", file=sys.stderr, flush=True)
            row = bench_size(source, args.workdir, args.queries, args.n_candidates, args.build_budget_s, args.warmup)
            old = results["sizes"].get(source.key, {})
            if not row["added"] and old.get("build_per_s"):  # a re-measure of a reused store keeps its build rate
                row.update({key: old[key] for key in ("build_s", "build_per_s") if key in old})
            results["sizes"][source.key] = row
            args.out.write_text(json.dumps(results, indent=2))
            (args.out.with_suffix(".md")).write_text(render(results))
            print(json.dumps(results["sizes"][source.key], indent=1), file=sys.stderr, flush=True)
        for n in args.bruteforce_only:
            print(f"== brute force only, {n:,} memories", file=sys.stderr, flush=True)
            results["sizes"][str(n)] = bench_bruteforce_only(n, args.queries)
            args.out.write_text(json.dumps(results, indent=2))
    args.out.with_suffix(".md").write_text(render(results))
    print(render(results))


if __name__ == "__main__":
    main()
