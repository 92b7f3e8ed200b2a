"""Add-one latency through MemoryStore, on each MemoryIndex, at a given store size (issue 12.5).

    nice .venv/bin/python bench/memory/bench_index_add.py --size 10000 --adds 50

For each index (NumPy in memory, Chroma embedded) it fills a fresh store with SIZE memories
and SIZE trajectory-index entries (random unit 384-d vectors, precomputed, one namespace),
then times ADDS single adds along memorise's store path: `log_trajectory` (JSONL append +
trajectory-index upsert) then `add_deduplicated` (screen, the dedup query, the upsert).
Embedding and compression are left out (precomputed vectors, a fixed workflow). The machine's
load average is recorded with each run, since the machine is shared.
Results go to bench/memory/index_add.json (merged by index and size) and index_add.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from mia.memory import MemoryRecord, MemoryStore, Trajectory, TrajectoryStep
from mia.memory.embeddings import PrecomputedEmbedder
from mia.memory.index import TRAJECTORY_BUCKET

HERE = Path(__file__).resolve().parent
DIM = 384
WORKFLOW = '1. Search the entity (query "x" -> evidence)\n2. Answer (evidence -> a)'


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vec = rng.standard_normal((n, DIM)).astype(np.float32)
    return vec / np.linalg.norm(vec, axis=1, keepdims=True)


def open_store(kind: str, folder: Path) -> MemoryStore:
    embedder = PrecomputedEmbedder(DIM, "random384")
    if kind == "numpy":
        return MemoryStore.in_memory(embedder=embedder, log_dir=folder)
    return MemoryStore.open(folder, embedder=embedder)


def build(store: MemoryStore, size: int) -> None:
    rng = np.random.default_rng(0)
    for start in range(0, size, 2000):
        n = min(2000, size - start)
        vec = unit(rng, n)
        store.add_many(
            [
                MemoryRecord(
                    id=f"m{start + i}",
                    namespace="bench",
                    question=f"question {start + i}",
                    workflow=WORKFLOW,
                    outcome="correct",
                )
                for i in range(n)
            ],
            vec,
        )
        store.index.put(
            "bench",
            TRAJECTORY_BUCKET,
            [f"t{start + i}" for i in range(n)],
            vec,
            ['{"offset": 0, "outcome": "correct", "created_at": 0.0}'] * n,
        )


def time_adds(store: MemoryStore, adds: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    times = []
    for i in range(adds):
        vector = unit(rng, 1)[0]
        trajectory = Trajectory(
            namespace="bench",
            question=f"new question {seed}-{i}",
            outcome="correct",
            steps=[
                TrajectoryStep(kind="tool_call", tool="search", args={"query_list": ["x"]}),
                TrajectoryStep(kind="observation", content="evidence " * 50),
            ],
            answer="a",
        )
        record = MemoryRecord(namespace="bench", question=trajectory.question, outcome="correct", workflow=WORKFLOW)
        t0 = time.perf_counter()
        store.log_trajectory(trajectory, vector)
        store.add_deduplicated(record, vector)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--adds", type=int, default=50)
    parser.add_argument(
        "--index", choices=["numpy", "chroma-embedded"], nargs="+", default=["numpy", "chroma-embedded"]
    )
    args = parser.parse_args()
    out = HERE / "index_add.json"
    data = json.loads(out.read_text()) if out.exists() else {}
    for kind in args.index:
        with tempfile.TemporaryDirectory(prefix="mia-bench-index-") as tmp, open_store(kind, Path(tmp)) as store:
            t0 = time.perf_counter()
            build(store, args.size)
            build_s = time.perf_counter() - t0
            time_adds(store, 3, seed=1)  # warm-up
            load_before = os.getloadavg()[0]
            times = time_adds(store, args.adds, seed=2)
            load_after = os.getloadavg()[0]
        data[f"{kind}/{args.size}"] = {
            "index": kind,
            "size": args.size,
            "adds": args.adds,
            "build_s": round(build_s, 1),
            "p50_ms": float(np.percentile(times, 50)),
            "p95_ms": float(np.percentile(times, 95)),
            "mean_ms": float(np.mean(times)),
            "load_1min": [round(load_before, 2), round(load_after, 2)],
            "cpus": os.cpu_count(),
            "machine": platform.processor() or platform.machine(),
            "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        print(kind, json.dumps(data[f"{kind}/{args.size}"]), flush=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    lines = [
        "# Add-one through MemoryStore, per index (`bench_index_add.py`)",
        "",
        "Regenerate: `nice .venv/bin/python bench/memory/bench_index_add.py --size N --adds 50`.",
        "One add = `log_trajectory` + `add_deduplicated` (JSONL append, trajectory-index upsert, screening, the",
        "dedup query, the upsert); precomputed random 384-d vectors, no embedding, no compression.",
        "",
        "| index | memories | adds | p50 ms | p95 ms | mean ms | build s | load avg (before, after) | CPUs | measured |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, e in sorted(data.items(), key=lambda kv: (kv[1]["size"], kv[1]["index"])):
        lines.append(
            f"| {e['index']} | {e['size']:,} | {e['adds']} | {e['p50_ms']:.1f} | {e['p95_ms']:.1f} | "
            f"{e['mean_ms']:.1f} | {e['build_s']} | {e['load_1min'][0]}, {e['load_1min'][1]} | {e['cpus']} | "
            f"{e['measured_at']} |"
        )
    (HERE / "index_add.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
