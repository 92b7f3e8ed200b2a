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
        recs = [
            MemoryRecord(
                id=f"m{start + i}",
                namespace="bench",
                question=f"question {start + i}",
                workflow="1. Search the entity (query -> result)\n2. Answer (evidence -> answer)",
                outcome="correct",
            )
            for i in range(n)
        ]
        store.add_many(recs, vec)
        store.index.put(
            "bench",
            TRAJECTORY_BUCKET,
            [f"t{start + i}" for i in range(n)],
            vec,
            ['{"offset": 0, "outcome": "correct", "created_at": 0.0}'] * n,
        )
        print(f"built {start + n}/{size}", flush=True)


def profile(store: MemoryStore, adds: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(12345)
    times: dict[str, list[float]] = {stage: [] for stage in (*STAGES, "total")}
    for i in range(adds):
        vector = unit(rng, 1)[0]
        trajectory = Trajectory(
            namespace="bench",
            question=f"new question {i} {time.time()}",
            outcome="correct",
            steps=[
                TrajectoryStep(kind="tool_call", tool="search", args={"query_list": ["x"]}),
                TrajectoryStep(kind="observation", content="evidence " * 50),
            ],
            answer="a",
        )
        record = MemoryRecord(
            namespace="bench",
            question=trajectory.question,
            outcome="correct",
            workflow='1. Search the entity (query "x" -> evidence)\n2. Answer (evidence -> a)',
        )
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
    t_open = time.perf_counter()
    with MemoryStore.open(folder, embedder=PrecomputedEmbedder(DIM, "random384")) as store:
        open_s = time.perf_counter() - t_open
        t0 = time.perf_counter()
        built = store.count("bench") < args.size
        build(store, args.size)
        build_s = round(time.perf_counter() - t0, 1) if built else None  # None: a store built earlier, reused
        warmup = profile(store, 3)["total"]  # the first writes after open replay the write-ahead log
        load_before = os.getloadavg()[0]
        times = profile(store, args.adds)
        load_after = os.getloadavg()[0]
    row = {
        stage: {
            "p50_ms": float(np.percentile(v, 50)),
            "p95_ms": float(np.percentile(v, 95)),
            "mean_ms": float(np.mean(v)),
        }
        for stage, v in times.items()
    }
    out = HERE / "add_profile.json"
    data = json.loads(out.read_text()) if out.exists() else {}
    data[f"{args.size}/{HNSW_SYNC_THRESHOLD}/{args.adds}"] = {
        "size": args.size,
        "sync_threshold": HNSW_SYNC_THRESHOLD,
        "adds": args.adds,
        "stages": row,
        "build_s": build_s,
        "open_s": round(open_s, 2),
        "first_adds_ms": [round(t, 1) for t in warmup],
        "max_ms": round(max(times["total"]), 1),
        "load_1min": [round(load_before, 2), round(load_after, 2)],
        "machine": platform.processor() or platform.machine(),
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    out.write_text(json.dumps(data, indent=2) + "\n")
    print(write_report(data))


def write_report(data: dict) -> str:
    """add_profile.md from every entry of add_profile.json (rows of earlier runs included)."""
    lines = [
        "# Where one add goes (`bench_add_profile.py`)",
        "",
        "Regenerate: `nice .venv/bin/python bench/memory/bench_add_profile.py --size N --adds 40` (the store is",
        "kept in --workdir and reused). Milliseconds per single add, p50 (p95), embedding excluded; then the",
        "mean and the slowest add (a write that crosses the HNSW sync threshold persists the index), and the",
        "first add after opening (it replays Chroma's write-ahead log). 2-core shared machine. Rows with a sync",
        "threshold of 100,000 were measured with mia's former bulk-load option (since removed). Where the load",
        "average was not recorded it was 5-12 (20k, 50k) and about 4-5 (1M, 40 adds: a training run and an",
        "evaluation shared the cores).",
        "",
        "| memories | HNSW sync_threshold | adds | "
        + " | ".join(STAGES)
        + " | total | total mean | slowest | first add after open | load avg | measured |",
        "|---" * (len(STAGES) + 9) + "|",
    ]
    for _, e in sorted(data.items(), key=lambda kv: (kv[1]["size"], kv[1]["sync_threshold"], kv[1]["adds"])):
        cells = [f"{e['stages'][s]['p50_ms']:.1f} ({e['stages'][s]['p95_ms']:.1f})" for s in (*STAGES, "total")]
        load = ", ".join(str(x) for x in e.get("load_1min", [])) or "not recorded"
        first = f"{e['first_adds_ms'][0]:,.1f}" if e.get("first_adds_ms") else "—"
        lines.append(
            f"| {e['size']:,} | {e['sync_threshold']:,} | {e['adds']} | "
            + " | ".join(cells)
            + f" | {e['stages']['total']['mean_ms']:.1f} | {e.get('max_ms', '—')} | {first} | {load} | "
            + f"{e.get('measured_at', '—')} |"
        )
    text = "\n".join(lines) + "\n"
    (HERE / "add_profile.md").write_text(text)
    return text


if __name__ == "__main__":
    main()
