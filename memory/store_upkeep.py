"""Upkeep of a store's memories: the size bound (prune), consolidation of near-duplicates, reset,
and the review of flagged memories. The rules themselves are pure functions in upkeep.py; this
module applies them to a store under its write lock. MemoryStore binds these functions as its
methods (`store.prune(...)`), so each takes the store, typed by what it needs (`UpkeepStore`)."""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from mia.memory.index import BUCKET_OF, MEMORY_BUCKETS, MemoryIndex
from mia.memory.namespaces import check_namespace
from mia.memory.records import MemoryRecord, parse_record
from mia.memory.scoring import ScoringWeights
from mia.memory.screening import WorkflowScreen, record_reasons
from mia.memory.trajectory import Outcome
from mia.memory.trajectory_index import TrajectoryIndex
from mia.memory.trajectory_log import TrajectoryLog
from mia.memory.upkeep import UpkeepPolicy, duplicate_groups, eviction_order, merge_into, target_size

log = logging.getLogger(__name__)


class UpkeepStore(Protocol):
    """What upkeep needs from a store (MemoryStore passes it; mypy checks where it is bound)."""

    embedder: Any
    index: MemoryIndex
    policy: UpkeepPolicy
    screen: WorkflowScreen
    trajectories: TrajectoryIndex
    trajectory_log: TrajectoryLog

    @property
    def weights(self) -> ScoringWeights: ...

    def check_writable(self) -> None: ...

    def writing(self) -> AbstractContextManager[None]: ...

    def scope(self, namespace: str | None) -> builtins.list[str]: ...

    def list(
        self, namespace: str | None = None, outcome: Outcome | None = None, limit: int | None = None, offset: int = 0
    ) -> builtins.list[MemoryRecord]: ...

    def count(self, namespace: str | None = None) -> int: ...

    def memory_buckets(self, namespace: str | None, outcome: Outcome | None = None) -> Iterator[tuple[str, str]]: ...

    def put(self, record: MemoryRecord, vector: np.ndarray) -> None: ...


def check_max_size(max_size: int | None) -> None:
    """A prune bound is a positive count: 0 or less would evict everything (that is `reset`, which asks)."""
    if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1):
        raise ValueError(f"max_size must be a positive number of memories, not {max_size!r} (reset deletes them all)")


def maybe_prune(store: UpkeepStore, namespace: str) -> None:
    """Prune a namespace that went over policy.max_per_namespace (after a write)."""
    bound = store.policy.max_per_namespace
    if bound is not None and store.count(namespace) > bound:
        prune(store, namespace)


def prune(
    store: UpkeepStore,
    namespace: str | None = None,
    max_size: int | None = None,
    now: float | None = None,
    dry_run: bool = False,
) -> list[str]:
    """Evict the least valuable memories (low win rate, long unused) until the namespace
    holds `max_size` (default: 90% of policy.max_per_namespace). Returns the evicted ids, or
    with `dry_run` the ids it would evict, evicting nothing (to ask before it does)."""
    check_max_size(max_size)
    if not dry_run:
        store.check_writable()
    evicted: list[str] = []
    for ns in store.scope(namespace):
        target = max_size if max_size is not None else target_size(store.policy)
        if target is None:
            continue
        with store.writing():
            records = store.list(ns)
            excess = len(records) - target
            if excess <= 0:
                continue
            order = eviction_order(records, now or time.time(), store.policy, store.weights)
            doomed = [records[i] for i in order[:excess]]
            for suffix in () if dry_run else MEMORY_BUCKETS:
                ids = [r.id for r in doomed if BUCKET_OF[r.outcome] == suffix]
                if ids:
                    store.index.delete(ns, suffix, ids)
            evicted += [r.id for r in doomed]
    return evicted


def consolidate(
    store: UpkeepStore, namespace: str | None = None, now: float | None = None
) -> dict[str, dict[str, int]]:
    """Merge near-duplicates of the same outcome (the shorter survives, counts are summed), so
    that a question keeps at most one positive and one negative memory; enforce the size
    bound; re-index logged trajectories the index lacks. Returns counts per namespace."""
    store.check_writable()
    report: dict[str, dict[str, int]] = {}
    for ns in store.scope(namespace):
        with store.writing():
            merged = 0
            for suffix, outcome in MEMORY_BUCKETS.items():
                records, vectors = get_with_embeddings(store, ns, outcome)
                groups = duplicate_groups(records, vectors, store.policy.dedup_threshold)
                for keep, absorbed in groups.groups.items():
                    survivor = records[keep]
                    for j in absorbed:
                        survivor = merge_into(survivor, records[j], keep_id_of=survivor)
                    store.index.delete(ns, suffix, [records[j].id for j in absorbed])
                    merged += len(absorbed)
                    store.put(survivor, vectors[keep])
            evicted = len(prune(store, ns, now=now)) if store.policy.max_per_namespace else 0
            indexed = store.trajectories.sync(ns, force=True)
        report[ns] = {"merged": merged, "evicted": evicted, "kept": store.count(ns), "reindexed": indexed}
    return report


def reset(store: UpkeepStore, namespace: str | None = None, include_log: bool = False) -> int:
    """Delete the memories (and trajectory index) of a namespace, or of all. The raw log is
    the training data: it is only moved aside (to a timestamped .bak) with include_log."""
    store.check_writable()
    if namespace is not None:
        check_namespace(namespace)
    removed = 0
    with store.writing():
        removed = store.index.drop(namespace)
        store.trajectories.mark_synced(None)
        path = store.trajectory_log.path
        if include_log:
            store.trajectory_log.expand()
        if include_log and path.exists():
            if namespace is None:
                path.rename(path.with_suffix(f".jsonl.bak-{int(time.time())}"))
            else:
                log.warning("include_log with one namespace: the log is shared and was kept")
    return removed


def suspicious(store: UpkeepStore, namespace: str | None = None) -> list[tuple[MemoryRecord, list[str]]]:
    """Memories flagged when stored, or that the current screen flags (stored before it, or
    with other prompt templates), with the reasons."""
    found = []
    for record in store.list(namespace):
        reasons = list(dict.fromkeys(record.flags + screen_reasons(store, record)))
        if reasons:
            found.append((record, reasons))
    return found


def screen_reasons(store: UpkeepStore, record: MemoryRecord) -> list[str]:
    """Why the planner should not see this record (empty when it may): the text it would read."""
    return record_reasons(store.screen, record)


def get_with_embeddings(
    store: UpkeepStore, namespace: str, outcome: Outcome | None = None
) -> tuple[list[MemoryRecord], np.ndarray]:
    """Every record of a namespace (optionally one outcome) and its stored vector: what
    consolidation clusters, read in one pass instead of one query per record."""
    check_namespace(namespace)
    records: list[MemoryRecord] = []
    vectors: list[np.ndarray] = []
    for ns, suffix in store.memory_buckets(namespace, outcome):
        for entry in store.index.get(ns, suffix, with_vectors=True):
            rec = parse_record(entry.id, entry.record)
            if rec is not None and entry.vector is not None:
                records.append(rec)
                vectors.append(entry.vector)
    matrix = np.vstack(vectors) if vectors else np.zeros((0, int(store.embedder.dim)), dtype=np.float32)
    return records, matrix
