#!/usr/bin/env python3
"""Make a committed memory folder rebuildable from its trajectory log alone, and check the rebuild.

    .venv/bin/python scripts/store_to_log.py results/hotpotqa-qwen-planners/warmup/store/memory ...

Why: a study keeps text, never Chroma files; `mia eval --memory-from` rebuilds a memory from the
trajectory log (MemoryStore.rebuild_from_log), where a record's id is its trajectory's. Logs written
before that name the memories each episode used by the records' old random ids; this rewrites those
`used_memory_ids` to the trajectory ids the Chroma store maps them to (the store is read, never
written), then rebuilds the folder from the rewritten log in a scratch copy and compares it with the
store: the same memories, workflows and usage and success counts. A memory whose old id the store
no longer holds (pruned or merged away) keeps its old id in the log and is not credited.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from mia.memory import MemoryStore


def records(store: MemoryStore) -> dict[str, object]:
    return {r.id: r for ns in store.namespaces() for r in store.list(namespace=ns)}


def rewrite(folder: Path) -> tuple[int, int]:
    """Rewrite the log's used ids to trajectory ids; returns (ids rewritten, ids left)."""
    with MemoryStore.open(folder, snapshot=True) as store:
        to_trajectory = {rid: rec.trajectory_id for rid, rec in records(store).items() if rec.trajectory_id}
    log = folder / "trajectories.jsonl"
    lines, done, left = [], 0, 0
    for raw in log.read_text(encoding="utf-8").splitlines():
        row = json.loads(raw)
        used = []
        for rid in row.get("used_memory_ids") or []:
            new = to_trajectory.get(rid, rid)
            done += new != rid
            left += new == rid
            used.append(new)
        row["used_memory_ids"] = used
        lines.append(json.dumps(row, ensure_ascii=False))
    tmp = log.with_suffix(".jsonl.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, log)
    return done, left


def compare(folder: Path) -> str:
    """Rebuild the folder from its log in a scratch copy and compare with the Chroma store."""
    with MemoryStore.open(folder, snapshot=True) as store:
        old = {rec.trajectory_id: rec for rec in records(store).values()}
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "trajectories.jsonl").write_bytes((folder / "trajectories.jsonl").read_bytes())
        with MemoryStore.open(scratch) as rebuilt_store:
            rebuilt_store.rebuild_from_log(progress=False)
            new = records(rebuilt_store)
    same = [t for t in old if t in new]
    workflows = sum(old[t].workflow == new[t].workflow for t in same)
    counts = sum((old[t].usage_count, old[t].success_count) == (new[t].usage_count, new[t].success_count) for t in same)
    return (
        f"{len(old)} memories in the store, {len(new)} rebuilt, {len(same)} the same episodes; "
        f"workflow identical {workflows}/{len(same)}, usage and success counts identical {counts}/{len(same)}"
    )


def main(folders: list[str]) -> int:
    for name in folders:
        folder = Path(name)
        done, left = rewrite(folder)
        print(f"{folder}: {done} used ids rewritten, {left} left; {compare(folder)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
