"""MemoryIndex on Chroma, embedded (PersistentClient) or server (HttpClient): one collection
per (namespace, bucket), opened and validated by ChromaCollections, through handles that
survive another process's reset (handles.py). The record JSON is one metadata key (Chroma
keeps one SQLite row per key: fetching 17 keys for 100 candidates cost more than the search)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from mia.memory.chroma_collections import ChromaCollections
from mia.memory.errors import MemoryStoreError
from mia.memory.handles import CollectionHandle
from mia.memory.index import Entry, as_matrix
from mia.memory.records import META_KEY


def _record(meta: dict[str, Any] | None) -> str:
    """The record JSON of a row. Trajectory-index rows written before the index protocol kept
    their fields as plain keys: they are read as that JSON."""
    meta = meta or {}
    raw = meta.get(META_KEY)
    if isinstance(raw, str):
        return raw
    return orjson.dumps(meta).decode() if meta else ""


class ChromaIndex:
    """The store's index on one Chroma client; `client` stays reachable for tests and tools."""

    def __init__(self, client: Any, embedder: Any, location: str, *, ef_search: int = 128) -> None:
        self.client = client
        self.location = location
        self.collections = ChromaCollections(client, embedder, location, ef_search=ef_search)
        self.collections.check_existing()

    def _col(self, namespace: str, bucket: str, create: bool) -> CollectionHandle | None:
        return self.collections.handle(namespace, bucket, create)

    def put(self, namespace: str, bucket: str, ids: Sequence[str], vectors: np.ndarray, records: Sequence[str]) -> None:
        if not ids:
            return
        matrix = as_matrix(vectors, len(ids))
        col = self._col(namespace, bucket, create=True)
        assert col is not None
        col.upsert(ids=list(ids), embeddings=matrix, metadatas=[{META_KEY: r} for r in records])

    def update(self, namespace: str, bucket: str, ids: Sequence[str], records: Sequence[str]) -> None:
        col = self._col(namespace, bucket, create=False)
        if col is None or not ids:
            return
        present = set(col.get(ids=list(ids), include=[])["ids"])
        keep = [(i, r) for i, r in zip(ids, records) if i in present]
        if keep:
            col.update(ids=[i for i, _ in keep], metadatas=[{META_KEY: r} for _, r in keep])

    def query(
        self, namespace: str, bucket: str, vector: np.ndarray, n: int, *, with_vectors: bool = False
    ) -> list[Entry]:
        col = self._col(namespace, bucket, create=False)
        if col is None or n <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).ravel()
        try:  # ids + distances only: fetching metadata inside an ANN query is several times slower
            hits = col.query(
                query_embeddings=[query],
                n_results=n,
                include=["distances", "embeddings"] if with_vectors else ["distances"],
            )
            ids, distances = hits["ids"][0], hits["distances"][0]
            rows = col.get(ids=ids, include=["metadatas"]) if ids else {"ids": [], "metadatas": []}
        except Exception as err:  # noqa: BLE001
            raise MemoryStoreError(f"retrieval from {col.name} failed: {type(err).__name__}: {err}") from err
        meta_of = dict(zip(rows["ids"], rows["metadatas"]))
        vectors = hits["embeddings"][0] if with_vectors else [None] * len(ids)
        return [
            Entry(
                rid,
                _record(meta_of.get(rid)),
                None if vec is None else np.asarray(vec, dtype=np.float32),
                1.0 - float(dist),
            )
            for rid, dist, vec in zip(ids, distances, vectors)
            if rid in meta_of
        ]

    def get(
        self,
        namespace: str,
        bucket: str,
        ids: Sequence[str] | None = None,
        *,
        with_records: bool = True,
        with_vectors: bool = False,
    ) -> list[Entry]:
        col = self._col(namespace, bucket, create=False)
        if col is None:
            return []
        include = [part for part, wanted in (("metadatas", with_records), ("embeddings", with_vectors)) if wanted]
        found: list[Entry] = []
        wanted = None if ids is None else list(dict.fromkeys(ids))
        for start in range(0, 1 if wanted is None else len(wanted), 1000):  # SQLite's variable limit
            got = (
                col.get(include=include)
                if wanted is None
                else col.get(ids=wanted[start : start + 1000], include=include)
            )
            metas = got["metadatas"] if with_records else [None] * len(got["ids"])
            vectors = got["embeddings"] if with_vectors else [None] * len(got["ids"])
            found += [
                Entry(
                    rid,
                    _record(meta) if with_records else "",
                    None if vec is None else np.asarray(vec, dtype=np.float32),
                )
                for rid, meta, vec in zip(got["ids"], metas, vectors)
            ]
        return found

    def delete(self, namespace: str, bucket: str, ids: Sequence[str]) -> None:
        col = self._col(namespace, bucket, create=False)
        if col is not None and ids:
            col.delete(ids=list(ids))

    def count(self, namespace: str, bucket: str) -> int:
        col = self._col(namespace, bucket, create=False)
        return 0 if col is None else col.count()

    def namespaces(self) -> list[str]:
        return self.collections.namespaces()

    def drop(self, namespace: str | None = None) -> int:
        return self.collections.drop(namespace)
