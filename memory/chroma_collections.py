"""The Chroma side of the store: one collection per (namespace, outcome) plus one per
namespace for the trajectory index, opened with our embedding function, checked for schema
version and embedder, and cached as handles that survive another process's reset.

Layout: a collection per bucket, like MIA's buckets, so a retrieval is a plain HNSW query
with no metadata filter (filters are what make Chroma slow at 1M records).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from mia.memory.errors import MemoryStoreError, SchemaMismatchError
from mia.memory.handles import CollectionHandle, is_not_found
from mia.memory.index import MEMORY_BUCKETS as LABELS
from mia.memory.records import SCHEMA_VERSION

KIND_MEMORY, KIND_TRAJ = "memory", "trajectory-index"
# Chroma writes a collection's HNSW files every `sync_threshold` writes (what is not yet written is
# replayed from its write-ahead log at open). Its default, 1000, is the only value the store uses:
# with 100,000 (tried for bulk loads) every later single write cost 0.4-2 s instead of ~35 ms,
# because each write handles the whole unsynced backlog (bench/memory/add_profile.md).
HNSW_SYNC_THRESHOLD = 1000


def collection_name(namespace: str, suffix: str) -> str:
    """A valid Chroma name for any namespace string: readable slug + hash of the exact name."""
    slug = re.sub(r"[^a-zA-Z0-9]+", "-", namespace).strip("-")[:40] or "ns"
    digest = hashlib.sha1(namespace.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"mia-{slug}-{digest}-{suffix}"


class ChromaCollections:
    """Opens, creates, validates, caches and drops the store's collections on one Chroma client
    (embedded or server)."""

    def __init__(self, client: Any, embedder: Any, location: str, *, ef_search: int = 128) -> None:
        self.client = client
        self.embedder = embedder
        self.location = location
        self.ef_search = ef_search
        self._handles: dict[str, CollectionHandle] = {}
        self._ef: Any = None

    @property
    def dim(self) -> int:
        return int(self.embedder.dim)

    def embedding_function(self) -> Any:
        if self._ef is None:
            from mia.memory.chroma_ef import MiaEmbeddingFunction

            self._ef = MiaEmbeddingFunction(self.embedder, dim=self.dim)
        return self._ef

    def check_existing(self) -> None:
        """Fail early, with a message, on a store of another schema version or embedder; set back
        a collection's HNSW sync threshold if another was used.

        The embedding function is registered first: reading a collection's configuration looks its
        embedding function up by name, and a new process that had not yet imported chroma_ef
        reported every store with a modified configuration as unreadable."""
        self.embedding_function()
        try:
            collections = self.client.list_collections()
        except Exception as err:  # noqa: BLE001
            raise MemoryStoreError(
                f"cannot list the collections of {self.location}: {type(err).__name__}: {err}"
            ) from err
        for col in collections:
            if col.name.startswith("mia-"):
                self.validate(col)
                _restore_sync_threshold(col)

    def validate(self, col: Any) -> None:
        meta = col.metadata or {}
        version = meta.get("mia_schema_version")
        if version != SCHEMA_VERSION:
            raise SchemaMismatchError(
                f"collection {col.name} in {self.location} has memory schema version {version!r}; this mia "
                f"reads version {SCHEMA_VERSION}. Export it with the mia that wrote it (`mia memory export`) "
                "and import the file here, or reset the store."
            )
        name = meta.get("embedder")
        if name != self.embedder.name or int(meta.get("dim", -1)) != self.dim:
            raise SchemaMismatchError(
                f"collection {col.name} in {self.location} was built with embedder {name!r} (dim {meta.get('dim')}), "
                f"but the store was opened with {self.embedder.name!r} (dim {self.dim}). Open it with the same "
                "embedder (MIA_EMBEDDING_MODEL), or export and re-import to re-embed."
            )

    def handle(self, namespace: str, suffix: str, create: bool) -> CollectionHandle | None:
        """The cached handle of one (namespace, suffix) collection; None when it does not exist
        and `create` is false. Handles re-open themselves after another process deleted the
        collection (see handles.py)."""
        name = collection_name(namespace, suffix)
        if name in self._handles:
            return self._handles[name]
        col = self.open(namespace, suffix, create)
        if col is None:
            return None
        handle = CollectionHandle(col, lambda write: self.open(namespace, suffix, write))
        self._handles[name] = handle
        return handle

    def open(self, namespace: str, suffix: str, create: bool) -> Any | None:
        """Get (or create) the Chroma collection by name, checking its schema and embedder."""
        name = collection_name(namespace, suffix)
        col = None
        try:
            col = self.client.get_collection(name, embedding_function=self.embedding_function())
        except Exception as err:  # noqa: BLE001 - chromadb raises NotFoundError/ValueError by version
            if not is_not_found(err):
                raise MemoryStoreError(f"cannot open collection {name} in {self.location}: {err}") from err
        if col is None:
            if not create:
                return None
            kind = KIND_TRAJ if suffix == "traj" else KIND_MEMORY
            meta = {
                "mia_schema_version": SCHEMA_VERSION,
                "mia_kind": kind,
                "namespace": namespace,
                "outcome": LABELS.get(suffix, ""),
                "embedder": self.embedder.name,
                "dim": self.dim,
            }
            col = self.client.get_or_create_collection(
                name,
                metadata=meta,
                embedding_function=self.embedding_function(),
                configuration={
                    "hnsw": {
                        "space": "cosine",
                        "ef_search": self.ef_search,
                        "ef_construction": 128,
                        "sync_threshold": HNSW_SYNC_THRESHOLD,
                    }
                },
            )
        self.validate(col)
        return col

    def namespaces(self) -> list[str]:
        """Every namespace that has memories or logged trajectories in the store."""
        found = set()
        for col in self.client.list_collections():
            if col.name.startswith("mia-") and (col.metadata or {}).get("namespace") is not None:
                found.add(col.metadata["namespace"])
        return sorted(found)

    def drop(self, namespace: str | None = None) -> int:
        """Delete the collections of a namespace (or all); returns how many memories they held.
        A collection another process deleted first counts as done."""
        removed = 0
        for col in self.client.list_collections():
            meta = col.metadata or {}
            if not col.name.startswith("mia-") or (namespace is not None and meta.get("namespace") != namespace):
                continue
            self._handles.pop(col.name, None)
            try:
                count = col.count() if meta.get("mia_kind") == KIND_MEMORY else 0
                self.client.delete_collection(col.name)
            except Exception as err:  # noqa: BLE001 - another process reset it first: done
                if not is_not_found(err):
                    raise
                continue
            removed += count
        return removed


def _restore_sync_threshold(col: Any) -> None:
    """Set a collection created with another HNSW sync threshold (mia's former bulk-load option)
    back to HNSW_SYNC_THRESHOLD, so that its single writes are fast again. A read-only store
    changes only its private copy."""
    hnsw = (getattr(col, "configuration_json", None) or {}).get("hnsw") or {}
    if hnsw.get("sync_threshold", HNSW_SYNC_THRESHOLD) != HNSW_SYNC_THRESHOLD:
        col.modify(configuration={"hnsw": {"sync_threshold": HNSW_SYNC_THRESHOLD}})
