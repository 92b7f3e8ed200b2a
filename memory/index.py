"""The vector index behind MemoryStore, as a protocol: what the store needs and nothing more.

The store keeps one bucket per (namespace, label): "pos", "neg" and "unk" hold memories (one
per outcome, like MIA's buckets, so a retrieval never filters), "traj" indexes the logged
trajectories by question. Each entry is an id, a vector and a `record`: an opaque JSON string
the store writes and parses (the index never looks inside). Reads of a bucket that does not
exist return nothing; writes create it.

Implementations: `ChromaIndex` (embedded or server, chroma_index.py) and `NumpyIndex` (exact,
in memory, numpy_index.py). tests/memory/test_index_conformance.py runs the same checks on all
three.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from mia.memory.trajectory import Outcome

MEMORY_BUCKETS: dict[str, Outcome] = {"pos": "correct", "neg": "incorrect", "unk": "unknown"}
BUCKET_OF: dict[str, str] = {v: k for k, v in MEMORY_BUCKETS.items()}
TRAJECTORY_BUCKET = "traj"
BUCKETS = (*MEMORY_BUCKETS, TRAJECTORY_BUCKET)


@dataclass(frozen=True)
class Entry:
    """One stored entry. `record` is "" when not asked for, `vector` None when not asked for;
    `similarity` is the cosine to the query (query results only)."""

    id: str
    record: str = ""
    vector: np.ndarray | None = None
    similarity: float = 0.0


@runtime_checkable
class MemoryIndex(Protocol):
    """Per (namespace, bucket): upsert, nearest by cosine, get, update, delete, count; plus the
    namespaces present and dropping one."""

    location: str

    def put(self, namespace: str, bucket: str, ids: Sequence[str], vectors: np.ndarray, records: Sequence[str]) -> None:
        """Upsert: an id already there gets the new vector and record."""

    def update(self, namespace: str, bucket: str, ids: Sequence[str], records: Sequence[str]) -> None:
        """Replace the records of ids that exist (vectors unchanged); other ids are ignored."""

    def query(
        self, namespace: str, bucket: str, vector: np.ndarray, n: int, *, with_vectors: bool = False
    ) -> list[Entry]:
        """The n nearest entries by cosine, nearest first, with their records (and vectors)."""

    def get(
        self,
        namespace: str,
        bucket: str,
        ids: Sequence[str] | None = None,
        *,
        with_records: bool = True,
        with_vectors: bool = False,
    ) -> list[Entry]:
        """The entries with these ids that exist (all entries when ids is None)."""

    def delete(self, namespace: str, bucket: str, ids: Sequence[str]) -> None:
        """Remove these ids (missing ones are ignored)."""

    def count(self, namespace: str, bucket: str) -> int:
        """How many entries the bucket holds (0 when it does not exist)."""

    def namespaces(self) -> list[str]:
        """Every namespace with a bucket, sorted."""

    def drop(self, namespace: str | None = None) -> int:
        """Delete every bucket of a namespace (or of all); returns how many memories (not
        trajectory entries) they held."""


def as_matrix(vectors: np.ndarray | Sequence[Sequence[float]], rows: int) -> np.ndarray:
    """float32 (rows, dim), or ValueError naming the shape."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != rows:
        raise ValueError(f"expected {rows} vectors as a (rows, dim) array, got shape {matrix.shape}")
    return matrix
