"""Generic `MiaStore` items (any dict value that is not a workflow memory), kept in two more
buckets of the MemoryStore's own index, so they live in its folder (or on its Chroma server) and
under its locks, and MIA's retrieval, which reads only the memory buckets, never sees them.

"item" holds the items that have a text to embed (their vector is that text's), "plain" the
others (index=False, or no text at the index paths): a plain item is never looked up by vector,
and carries a random one drawn from its key (many equal vectors make HNSW inserts slow). Each
entry's record is `{"value", "created_at", "updated_at"}` as JSON.
"""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

EMBEDDED, PLAIN = "item", "plain"
BUCKETS = (EMBEDDED, PLAIN)


@dataclass(frozen=True)
class Stored:
    """One generic item as read back (times in seconds since the epoch)."""

    key: str
    value: dict[str, Any]
    created_at: float
    updated_at: float


def decode(key: str, raw: str) -> Stored | None:
    """The item of an entry's record; None when the record is damaged (it is skipped, not fatal)."""
    try:
        data = json.loads(raw)
        return Stored(key, dict(data["value"]), float(data["created_at"]), float(data["updated_at"]))
    except (ValueError, TypeError, KeyError):
        return None


class GenericItems:
    """Get, put, list and count the generic items of one MemoryStore (its `index` and `embedder`);
    MiaStore deletes them, with the memories of the same key."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory

    def get(self, namespace: str, key: str) -> Stored | None:
        for bucket in BUCKETS:
            for entry in self.memory.index.get(namespace, bucket, [key]):
                return decode(entry.id, entry.record)
        return None

    def put(self, namespace: str, key: str, value: dict[str, Any], vector: np.ndarray | None, created: float) -> str:
        """Upsert into the bucket the vector says (a copy in the other bucket is the caller's to
        delete, after this write succeeded); returns that bucket."""
        now = max(created, time.time())
        raw = json.dumps({"value": value, "created_at": created, "updated_at": now}, ensure_ascii=True)
        bucket = PLAIN if vector is None else EMBEDDED
        row = self._placeholder(key) if vector is None else np.asarray(vector, dtype=np.float32)
        self.memory.index.put(namespace, bucket, [key], row.reshape(1, -1), [raw])
        return bucket

    def all(self, namespace: str, buckets: tuple[str, ...] = BUCKETS) -> list[Stored]:
        found = []
        for bucket in buckets:
            found += [s for e in self.memory.index.get(namespace, bucket) if (s := decode(e.id, e.record))]
        return found

    def count(self, namespace: str) -> int:
        return sum(self.memory.index.count(namespace, bucket) for bucket in BUCKETS)

    def _placeholder(self, key: str) -> np.ndarray:
        seed = zlib.crc32(key.encode("utf-8", "surrogatepass"))
        return np.random.default_rng(seed).standard_normal(int(self.memory.embedder.dim)).astype(np.float32)
