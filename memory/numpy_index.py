"""MemoryIndex in process memory with NumPy: exact cosine over every entry of a bucket. For
tests and small deployments (nothing persists beyond the trajectory log; a scan is O(n) per
query). Thread-safe: one lock around every call."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from mia.memory.index import MEMORY_BUCKETS, Entry, as_matrix


class _Bucket:
    """Rows in growable arrays; a deleted row is replaced by the last one."""

    def __init__(self, dim: int) -> None:
        self.ids: list[str] = []
        self.records: list[str] = []
        self.row: dict[str, int] = {}
        self.vectors = np.zeros((16, dim), dtype=np.float32)
        self.units = np.zeros((16, dim), dtype=np.float32)  # unit rows, for cosine

    def put(self, rid: str, vector: np.ndarray, record: str) -> None:
        if vector.shape[0] != self.vectors.shape[1]:
            raise ValueError(f"vector of dimension {vector.shape[0]} in a bucket of dimension {self.vectors.shape[1]}")
        index = self.row.get(rid)
        if index is None:
            index = len(self.ids)
            if index == self.vectors.shape[0]:
                self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
                self.units = np.concatenate([self.units, np.zeros_like(self.units)])
            self.ids.append(rid)
            self.records.append(record)
            self.row[rid] = index
        else:
            self.records[index] = record
        norm = float(np.linalg.norm(vector))
        self.vectors[index] = vector
        self.units[index] = vector / norm if norm > 0 else vector

    def delete(self, rid: str) -> None:
        index = self.row.pop(rid, None)
        if index is None:
            return
        last = len(self.ids) - 1
        if index != last:
            moved = self.ids[last]
            self.ids[index], self.records[index] = moved, self.records[last]
            self.vectors[index], self.units[index] = self.vectors[last], self.units[last]
            self.row[moved] = index
        self.ids.pop()
        self.records.pop()

    def entry(self, index: int, with_records: bool, with_vectors: bool, similarity: float = 0.0) -> Entry:
        return Entry(
            self.ids[index],
            self.records[index] if with_records else "",
            self.vectors[index].copy() if with_vectors else None,
            similarity,
        )


class NumpyIndex:
    """Buckets keyed by (namespace, bucket) in a dict, under one lock."""

    def __init__(self, location: str = "memory") -> None:
        self.location = location
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._lock = threading.RLock()

    def put(self, namespace: str, bucket: str, ids: Sequence[str], vectors: np.ndarray, records: Sequence[str]) -> None:
        if not ids:
            return
        matrix = as_matrix(vectors, len(ids))
        if len(records) != len(ids):
            raise ValueError(f"{len(ids)} ids but {len(records)} records")
        with self._lock:
            store = self._buckets.get((namespace, bucket))
            if store is None:
                store = self._buckets[(namespace, bucket)] = _Bucket(matrix.shape[1])
            for rid, vector, record in zip(ids, matrix, records):
                store.put(rid, vector, record)

    def update(self, namespace: str, bucket: str, ids: Sequence[str], records: Sequence[str]) -> None:
        with self._lock:
            store = self._buckets.get((namespace, bucket))
            for rid, record in zip(ids, records):
                if store is not None and rid in store.row:
                    store.records[store.row[rid]] = record

    def query(
        self, namespace: str, bucket: str, vector: np.ndarray, n: int, *, with_vectors: bool = False
    ) -> list[Entry]:
        with self._lock:
            store = self._buckets.get((namespace, bucket))
            if store is None or n <= 0 or not store.ids:
                return []
            query = np.asarray(vector, dtype=np.float32).ravel()
            norm = float(np.linalg.norm(query))
            sims = store.units[: len(store.ids)] @ (query / norm if norm > 0 else query)
            n = min(n, len(sims))
            top = np.argpartition(-sims, n - 1)[:n]
            top = top[np.argsort(-sims[top], kind="stable")]
            return [store.entry(int(i), True, with_vectors, float(sims[i])) for i in top]

    def get(
        self,
        namespace: str,
        bucket: str,
        ids: Sequence[str] | None = None,
        *,
        with_records: bool = True,
        with_vectors: bool = False,
    ) -> list[Entry]:
        with self._lock:
            store = self._buckets.get((namespace, bucket))
            if store is None:
                return []
            rows = (
                range(len(store.ids)) if ids is None else [store.row[i] for i in dict.fromkeys(ids) if i in store.row]
            )
            return [store.entry(i, with_records, with_vectors) for i in rows]

    def delete(self, namespace: str, bucket: str, ids: Sequence[str]) -> None:
        with self._lock:
            store = self._buckets.get((namespace, bucket))
            if store is None:
                return
            for rid in ids:
                store.delete(rid)

    def count(self, namespace: str, bucket: str) -> int:
        with self._lock:
            store = self._buckets.get((namespace, bucket))
            return 0 if store is None else len(store.ids)

    def namespaces(self) -> list[str]:
        with self._lock:
            return sorted({ns for ns, _ in self._buckets})

    def drop(self, namespace: str | None = None) -> int:
        with self._lock:
            doomed = [key for key in self._buckets if namespace is None or key[0] == namespace]
            removed = sum(len(self._buckets[key].ids) for key in doomed if key[1] in MEMORY_BUCKETS)
            for key in doomed:
                del self._buckets[key]
            return removed
