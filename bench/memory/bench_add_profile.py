"""Where the time of one `memorise` goes, at a given store size (issue 12.5).

    nice .venv/bin/python bench/memory/bench_add_profile.py --size 20000 --adds 40

It builds (or reuses, in --workdir) an embedded store with SIZE memories and SIZE indexed
trajectories (random unit 384-d vectors, precomputed), then runs ADDS single adds along
memorise's own path, timing each stage separately:

- log:     append the raw trajectory to trajectories.jsonl (write + fsync, under the file lock);
- traj:    upsert its question into the trajectory index (a Chroma write);
- screen:  the workflow screening (regexes);
- dedup:   the duplicate query (ANN top-8 of the outcome collection, with documents, metadata
           and vectors);
- put:     upsert the record into its outcome collection (a Chroma write).

Embedding is left out (precomputed vectors; a MiniLM query embedding is ~15 ms on its own).
Results go to bench/memory/add_profile.json (merged by size) and add_profile.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from mia.memory import MemoryRecord, MemoryStore, Trajectory, TrajectoryStep
from mia.memory.chroma_collections import HNSW_SYNC_THRESHOLD
from mia.memory.embeddings import PrecomputedEmbedder
from mia.memory.index import TRAJECTORY_BUCKET

HERE = Path(__file__).resolve().parent
DIM = 384
STAGES = ("log", "traj", "screen", "dedup", "put")


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vec = rng.standard_normal((n, DIM)).astype(np.float32)
    return vec / np.linalg.norm(vec, axis=1, keepdims=True)


def build(store: MemoryStore, size: int) -> None:
    have = store.count("bench")
    rng = np.random.default_rng(have)
    for start in range(have, size, 2000):
        n = min(2000, size - start)
        vec = unit(rng, n)
        recs = [MemoryRecord(id=f"m{start + i}", namespace="bench", question=f"question {start + i}",
                             workflow="1. Search the entity (query -> result)\n2. Answer (evidence -> answer)",
                             outcome="correct") for i in range(n)]
        store.add_many(recs, vec)
        store.index.put("bench", TRAJECTORY_BUCKET, [f"t{start + i}" for i in range(n)], vec,
                        ['{"offset": 0, "outcome": "correct", "created_at": 0.0}'] * n)
        print(f"built {start + n}/{size}", flush=True)


def profile(store: MemoryStore, adds: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(12345)
    times: dict[str, list[float]] = {stage: [] for stage in (*STAGES, "total")}
    for i in range(adds):
        vector = unit(rng, 1)[0]
        trajectory = Trajectory(namespace="bench", question=f"new question {i} {time.time()}", outcome="correct",
                                steps=[TrajectoryStep(kind="tool_call", tool="search", args={"query_list": ["x"]}),
                                       TrajectoryStep(kind="observation", content="evidence " * 50)], answer="a")
        record = MemoryRecord(namespace="bench", question=trajectory.question, outcome="correct",
                              workflow="1. Search the entity (query \"x\" -> evidence)\n2. Answer (evidence -> a)")
        t0 = time.perf_counter()
        offsets = store.trajectory_log.append_many([trajectory])
        t1 = time.perf_counter()
        store.trajectories.put([(trajectory, offsets[0])], vector[None, :])
        t2 = time.perf_counter()
        record = store._screened(record)  # noqa: SLF001
        t3 = time.perf_counter()
        with store._write_lock():  # noqa: SLF001
            store._duplicate_of(record, vector)  # noqa: SLF001
            t4 = time.perf_counter()
            store._put(record, vector)  # noqa: SLF001
        t5 = time.perf_counter()
        for stage, value in zip((*STAGES, "total"), (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0)):
            times[stage].append(value * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--adds", type=int, default=40)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/mia-bench-add"))
    args = parser.parse_args()
    folder = args.workdir / f"store-{args.size}"
    with MemoryStore.open(folder, embedder=PrecomputedEmbedder(DIM, "random384")) as store:
        t0 = time.perf_counter()
        build(store, args.size)
        build_s = time.perf_counter() - t0
        profile(store, 3)  # warm-up: first writes after open replay the write-ahead log
        load_before = os.getloadavg()[0]
        times = profile(store, args.adds)
        load_after = os.getloadavg()[0]
    row = {stage: {"p50_ms": float(np.percentile(v, 50)), "p95_ms": float(np.percentile(v, 95)),
                   "mean_ms": float(np.mean(v))} for stage, v in times.items()}
    out = HERE / "add_profile.json"
    data = json.loads(out.read_text()) if out.exists() else {}
    data[f"{args.size}/{HNSW_SYNC_THRESHOLD}"] = {
        "size": args.size, "sync_threshold": HNSW_SYNC_THRESHOLD, "adds": args.adds, "stages": row,
        "build_s": round(build_s, 1), "load_1min": [round(load_before, 2), round(load_after, 2)],
        "machine": platform.processor() or platform.machine(),
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out.write_text(json.dumps(data, indent=2) + "\n")
    lines = ["# Where one add goes (`bench_add_profile.py`)", "",
             "Regenerate: `nice .venv/bin/python bench/memory/bench_add_profile.py --size N --adds 40`.",
             "Milliseconds per single add, p50 (p95), embedding excluded; mean of the total too (a write that",
             "crosses the HNSW sync threshold pays for persisting); 2-core shared machine. Rows with a sync",
             "threshold of 100,000 were measured with mia's former bulk-load option (since removed).", "",
             "| memories | HNSW sync_threshold | " + " | ".join(STAGES) + " | total | total mean | build s | load avg |",
             "|---" * (len(STAGES) + 6) + "|"]
    for _, entry in sorted(data.items(), key=lambda kv: (kv[1]["size"], kv[1]["sync_threshold"])):
        cells = [f"{entry['stages'][s]['p50_ms']:.1f} ({entry['stages'][s]['p95_ms']:.1f})" for s in (*STAGES, "total")]
        load = ", ".join(str(x) for x in entry.get("load_1min", [])) or "5-12 (not recorded)"
        lines.append(f"| {entry['size']:,} | {entry['sync_threshold']:,} | " + " | ".join(cells)
                     + f" | {entry['stages']['total']['mean_ms']:.1f} | {entry.get('build_s', '')} | {load} |")
    (HERE / "add_profile.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
