"""MemoryStore: MIA's workflow memory, a store over a vector index (`MemoryIndex`, index.py):
Chroma embedded (PersistentClient), Chroma server (HttpClient), or NumPy in memory.

Layout: one bucket per (namespace, outcome), like MIA's buckets, so a retrieval is a plain
nearest-neighbour query with no metadata filter (filters are what make Chroma slow at 1M records).
This module is the store itself: opening (store_open.py), locks and CRUD. What is done with the
memories lives in services bound here as methods, each a module over the protocol it needs:
workflow_memory.py (memorise, retrieve, credit, rebuild), store_upkeep.py (prune, consolidate,
reset, review), store_trajectories.py (the raw log and trajectory-RAG), store_stats.py, and
transfer.py (export/import).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from mia.memory import store_open, store_stats, store_trajectories, store_upkeep, transfer, workflow_memory
from mia.memory.caption import add_caption_vectors
from mia.memory.chroma_collections import collection_name
from mia.memory.errors import MemoryStoreError, StoreLockedError
from mia.memory.index import BUCKET_OF, MEMORY_BUCKETS, MemoryIndex
from mia.memory.locking import FolderLock, WriteLock
from mia.memory.namespaces import check_namespace
from mia.memory.records import MemoryRecord, parse_record
from mia.memory.retrieval import Retriever
from mia.memory.scoring import ScoringWeights
from mia.memory.screening import WorkflowScreen, screened
from mia.memory.trajectory import Outcome
from mia.memory.trajectory_index import ScoredTrajectory, TrajectoryIndex
from mia.memory.trajectory_log import TrajectoryLog
from mia.memory.upkeep import UpkeepPolicy
from mia.memory.workflow_memory import record_from_trajectory


class MemoryStore:
    """The non-parametric memory. Open with `open`, `open_http`, `from_env` or `in_memory`;
    close when done. Built on a Chroma `client`, or on any `index=` (a MemoryIndex)."""

    def __init__(
        self,
        client: Any = None,
        *,
        log_dir: Path,
        embedder: Any,
        location: str,
        mode: str,
        weights: ScoringWeights | None = None,
        policy: UpkeepPolicy | None = None,
        n_candidates: int = 50,
        ef_search: int = 128,
        folder_lock: FolderLock | None = None,
        screen: WorkflowScreen | None = None,
        index: MemoryIndex | None = None,
    ) -> None:
        if (client is None) == (index is None):
            raise TypeError("MemoryStore needs a Chroma client or an index=, not both")
        self.client = client
        self.log_dir = Path(log_dir)
        self.embedder = embedder
        self.location = location
        self.mode = mode
        self.policy = policy or UpkeepPolicy()
        self.ef_search = ef_search
        self.trajectory_log = TrajectoryLog(self.log_dir / "trajectories.jsonl")
        # what makes a workflow unsafe to show the planner; pass the graph's prompt templates
        # (WorkflowScreen(prompt_templates=...)) so copies of their examples are caught too
        self.screen = screen or WorkflowScreen()
        self._folder_lock = folder_lock
        self.private_copy: Any = None  # the copy a read-only store reads, removed at close (see `open`)
        self.temporary_log_dir: Any = None  # an `in_memory` store's log folder, removed at close
        self._write_lock = WriteLock(self.log_dir)
        if index is None:
            from mia.memory.chroma_index import ChromaIndex

            index = ChromaIndex(client, embedder, location, ef_search=ef_search)
        self.index: MemoryIndex = index
        self.trajectories = TrajectoryIndex(
            index, self.trajectory_log, embedder, self._write_lock, lambda: self.read_only
        )
        self.retriever = Retriever(index, embedder, weights or ScoringWeights(), n_candidates)

    # opening (store_open.py) and the services, bound here: each function takes the store (or its class) first
    open = classmethod(store_open.open_embedded)
    open_http = classmethod(store_open.open_http)
    in_memory = classmethod(store_open.open_in_memory)
    from_env = classmethod(store_open.open_from_env)
    memorise = workflow_memory.memorise
    add_deduplicated = workflow_memory.add_deduplicated
    update_stats = workflow_memory.update_stats
    retrieve = workflow_memory.retrieve
    rescore = workflow_memory.rescore
    rebuild_from_log = workflow_memory.rebuild_from_log
    _duplicate_of = workflow_memory.duplicate_of
    prune = store_upkeep.prune
    consolidate = store_upkeep.consolidate
    reset = store_upkeep.reset
    suspicious = store_upkeep.suspicious
    get_with_embeddings = store_upkeep.get_with_embeddings
    screen_reasons = store_upkeep.screen_reasons
    folder_missing = store_trajectories.folder_missing
    log_trajectory = store_trajectories.log_trajectory
    search_trajectories = store_trajectories.search_trajectories
    stats = store_stats.stats
    export_jsonl = transfer.export_records
    import_jsonl = transfer.import_records

    @property
    def weights(self) -> ScoringWeights:
        """The scoring weights (retrieval's, which upkeep and stats read too)."""
        return self.retriever.weights

    @weights.setter
    def weights(self, value: ScoringWeights) -> None:
        self.retriever.weights = value

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """Release the folder lock (the embedded store can then be opened by another process) and
        the Chroma client's share of its system: Chroma keeps one system per path in the process,
        so a store opened again at that path (after its folder was removed) would reuse a dead
        database connection while an unclosed client held it."""
        self.retriever.close()
        client = getattr(self.index, "client", None)
        if self.mode == "persistent" and client is not None and hasattr(client, "close"):
            client.close()
        if self._folder_lock is not None:
            self._folder_lock.release()
            self._folder_lock = None
        for folder in (self.private_copy, self.temporary_log_dir):
            if folder is not None:
                folder.cleanup()
        self.private_copy = self.temporary_log_dir = None

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ locks and scope
    @property
    def read_only(self) -> bool:
        """True when opened read-only on a folder that cannot be written (see `open`)."""
        return self.private_copy is not None

    def check_writable(self) -> None:
        """Refuse a write to a read-only store before anything is changed."""
        if self.read_only:
            raise MemoryStoreError(
                f"the memory store at {self.location} was opened read-only (its folder cannot be "
                "written): nothing can be added, updated or deleted"
            )

    def writing(self) -> AbstractContextManager[None]:
        """The store's write lock (one writer at a time, across processes and threads), for an
        adapter whose one change is several index writes (MiaStore's atomic put)."""
        return self._write_lock()

    def namespaces(self) -> list[str]:
        """Every namespace that has memories or logged trajectories in the store."""
        return self.index.namespaces()

    def scope(self, namespace: str | None) -> builtins.list[str]:
        """One valid namespace, or every namespace in the store when None."""
        return [check_namespace(namespace)] if namespace is not None else self.namespaces()

    def memory_buckets(self, namespace: str | None, outcome: Outcome | None = None) -> Iterator[tuple[str, str]]:
        """(namespace, bucket) of every memory bucket in scope (of one outcome when given)."""
        for ns in self.scope(namespace):
            for suffix, label in MEMORY_BUCKETS.items():
                if outcome is None or label == outcome:
                    yield ns, suffix

    # ------------------------------------------------------------------ writing
    def add(self, record: MemoryRecord, embedding: np.ndarray | None = None) -> MemoryRecord:
        """Add one record as is (no dedup); see `memorise` for the full path."""
        self.add_many([record], None if embedding is None else np.asarray(embedding)[None, :])
        return record

    def add_many(
        self,
        records: list[MemoryRecord],
        embeddings: np.ndarray | None = None,
        batch_size: int = 4000,
        progress: bool = False,
    ) -> int:
        """Bulk add (upsert by id) with optional precomputed vectors; returns how many.

        Not atomic as a whole: each (namespace, outcome) collection is written in chunks of
        `batch_size`, each chunk one Chroma write, so a kill can leave the chunks written so far.
        Every add is an upsert by id: re-running the same call completes it (docs/memory.md)."""
        self.check_writable()
        if not records:
            return 0
        add_caption_vectors(self.embedder, records)
        vectors = (
            self.embedder.embed_documents([r.embed_text for r in records])
            if embeddings is None
            else np.asarray(embeddings, dtype=np.float32)
        )
        if vectors.shape != (len(records), dim := int(self.embedder.dim)):
            raise ValueError(f"embeddings must have shape ({len(records)}, {dim}), got {vectors.shape}")
        for ns in {rec.namespace for rec in records}:
            check_namespace(ns)
        records = [screened(self.screen, rec) for rec in records]
        groups: dict[tuple[str, str], list[int]] = {}
        for index, rec in enumerate(records):
            groups.setdefault((rec.namespace, BUCKET_OF[rec.outcome]), []).append(index)
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(records), desc="adding memories", unit="mem")
        with self._write_lock():
            for (ns, suffix), indices in groups.items():
                for start in range(0, len(indices), batch_size):
                    chunk = indices[start : start + batch_size]
                    ids, raws = [records[i].id for i in chunk], [records[i].to_json() for i in chunk]
                    self.index.put(ns, suffix, ids, vectors[chunk], raws)
                    if bar:
                        bar.update(len(chunk))
            for ns in {ns for ns, _ in groups}:
                store_upkeep.maybe_prune(self, ns)
        if bar:
            bar.close()
        return len(records)

    def put(self, record: MemoryRecord, vector: np.ndarray) -> None:
        """Write one record with its vector as is (no screening, no dedup): upkeep's and dedup's write."""
        vectors = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        self.index.put(record.namespace, BUCKET_OF[record.outcome], [record.id], vectors, [record.to_json()])

    _put = put  # the name bench/memory/bench_add_profile.py times

    def replace(self, record: MemoryRecord) -> MemoryRecord:
        """Put `record` in place of the one with its id (or add it), as one change under the write
        lock: the new copy is written first (an upsert in its outcome's collection), then a copy
        left in another outcome's collection is deleted, so a failed write leaves the old record."""
        self.check_writable()
        with self._write_lock():
            self.add(record)
            for ns, suffix in self.memory_buckets(record.namespace):
                if suffix != BUCKET_OF[record.outcome] and self.index.get(ns, suffix, [record.id], with_records=False):
                    self.index.delete(ns, suffix, [record.id])
        return record

    def delete(self, ids: Iterable[str], namespace: str | None = None) -> int:
        """Delete memories by id; returns how many existed."""
        self.check_writable()
        wanted = list(dict.fromkeys(ids))
        removed = 0
        with self._write_lock():
            for ns, suffix in self.memory_buckets(namespace):
                found = [e.id for e in self.index.get(ns, suffix, wanted, with_records=False)]
                if found:
                    self.index.delete(ns, suffix, found)
                    removed += len(found)
        return removed

    # ------------------------------------------------------------------ reading
    def get(self, memory_id: str, namespace: str | None = None) -> MemoryRecord | None:
        """One record by id (searching every namespace when none is given)."""
        for ns, suffix in self.memory_buckets(namespace):
            got = self.index.get(ns, suffix, [memory_id])
            if got:
                return parse_record(got[0].id, got[0].record)  # None when damaged
        return None

    def existing_ids(self, ids: Iterable[str], namespace: str | None = None) -> set[str]:
        """Which of these ids are stored (in one namespace or any)."""
        wanted = list(dict.fromkeys(ids))
        buckets = self.memory_buckets(namespace)
        return {e.id for ns, suffix in buckets for e in self.index.get(ns, suffix, wanted, with_records=False)}

    def list(
        self, namespace: str | None = None, outcome: Outcome | None = None, limit: int | None = None, offset: int = 0
    ) -> list[MemoryRecord]:
        """Records, newest first."""
        records: builtins.list[MemoryRecord] = []
        for ns, suffix in self.memory_buckets(namespace, outcome):
            records += [r for r in (parse_record(e.id, e.record) for e in self.index.get(ns, suffix)) if r]
        records.sort(key=lambda r: r.created_at, reverse=True)
        return records[offset : None if limit is None else offset + limit]

    def count(self, namespace: str | None = None) -> int:
        """Number of memories (in one namespace or all)."""
        return sum(self.index.count(ns, suffix) for ns, suffix in self.memory_buckets(namespace))

    def _screened(self, record: MemoryRecord) -> MemoryRecord:
        return screened(self.screen, record)  # the step bench/memory/bench_add_profile.py times alone


__all__ = ["MemoryStore", "ScoredTrajectory", "collection_name", "record_from_trajectory", "StoreLockedError"]
