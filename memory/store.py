"""MemoryStore: MIA's workflow memory, a service over a vector index (`MemoryIndex`, index.py):
Chroma embedded (PersistentClient), Chroma server (HttpClient), or NumPy in memory.

Layout: one bucket per (namespace, outcome), like MIA's buckets, so a retrieval is a plain
nearest-neighbour query with no metadata filter (filters are what make Chroma slow at 1M records).
The store opens, locks, writes (memorise, dedup, stats, upkeep, import/export) and delegates
reading to `Retriever` (retrieval.py: ANN candidates rescored exactly). Raw trajectories go to an
append-only JSONL log beside the store, indexed by question in one more bucket per namespace
(trajectory_index.py).
"""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from mia.memory import config
from mia.memory.compression import CompressionResult, Compressor, extractive_workflow
from mia.memory.embeddings import count_tokens, resolve_embedder
from mia.memory.errors import MemoryStoreError, StoreLockedError
from mia.memory.chroma_collections import collection_name
from mia.memory.index import BUCKET_OF as LABEL_OF
from mia.memory.index import MEMORY_BUCKETS as LABELS
from mia.memory.index import MemoryIndex
from mia.memory.namespaces import check_namespace, resolve_namespace
from mia.memory.locking import FolderLock, WriteLock
from mia.memory.caption import DEFAULT_CAPTION_WEIGHT, encode_vector
from mia.memory.retrieval import Retriever
from mia.memory.records import MemoryRecord, Retrieved, embed_text, parse_record
from mia.memory.screening import WorkflowScreen
from mia.memory.scoring import ScoringWeights, cosine
from mia.memory.trajectory import Outcome, Trajectory
from mia.memory.trajectory_index import ScoredTrajectory, TrajectoryIndex
from mia.memory.trajectory_log import TrajectoryLog
from mia.memory.upkeep import UpkeepPolicy, eviction_order, is_better, merge_into, same_question, target_size

log = logging.getLogger(__name__)


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
        self._snapshot: Any = None  # the private copy a read-only store reads (see `open`)
        self._log_tmp: Any = None  # the temporary log folder of an `in_memory` store
        self._write_lock = WriteLock(self.log_dir)
        if index is None:
            from mia.memory.chroma_index import ChromaIndex

            index = ChromaIndex(client, embedder, location, ef_search=ef_search)
        self.index: MemoryIndex = index
        self.trajectories = TrajectoryIndex(
            index, self.trajectory_log, embedder, self._write_lock, lambda: self.read_only
        )
        self.retriever = Retriever(index, embedder, weights or ScoringWeights(), n_candidates)

    @property
    def weights(self) -> ScoringWeights:
        """The scoring weights (retrieval's, which upkeep and stats read too)."""
        return self.retriever.weights

    @weights.setter
    def weights(self, value: ScoringWeights) -> None:
        self.retriever.weights = value

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        embedder: Any = None,
        lock_timeout: float = 5.0,
        read_only: bool = False,
        snapshot: bool = False,
        **options: Any,
    ) -> MemoryStore:
        """The embedded store in `path` (default $MIA_DATA_DIR/memory): Chroma in `path/chroma`,
        the trajectory log in `path/trajectories.jsonl`. One process at a time (see locking.py).

        `read_only=True` (the CLI's list, show, search, stats and export) also works on a folder
        that cannot be written: it then opens a private copy of the Chroma folder, takes no
        lock, and every write raises MemoryStoreError. `snapshot=True` does that for any folder (and
        so is read-only too):
        Chroma rewrites its files even when only read, so a reader that must leave the folder as
        it found it (training prompts from a committed store), or must not wait for a live writer's
        lock, reads a copy instead (the copy costs the Chroma folder's size on disk)."""
        import chromadb
        from chromadb.config import Settings

        from mia.memory.embedded_files import check_chroma_folder, read_only_copy, writable

        folder = Path(path or config.memory_dir()).expanduser()
        check_chroma_folder(folder / "chroma")
        if not folder.exists() or writable(folder):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise MemoryStoreError(f"cannot create the memory folder {folder}: {err}") from err
        elif not read_only:
            raise MemoryStoreError(
                f"the memory folder {folder} is read-only: writing needs a writable data folder "
                "(list, show, search, stats and export still work)"
            )
        private = read_only_copy(folder) if snapshot or not writable(folder) else None
        lock = FolderLock(folder, timeout=lock_timeout) if private is None else None
        if lock is not None:
            lock.acquire()
        chroma_path = folder / "chroma" if private is None else Path(private.name) / "chroma"
        try:
            client = chromadb.PersistentClient(
                path=str(chroma_path), settings=Settings(anonymized_telemetry=False, allow_reset=True)
            )
            store = cls(
                client,
                log_dir=folder,
                embedder=resolve_embedder(embedder),
                location=str(folder),
                mode="persistent",
                folder_lock=lock,
                **options,
            )
            store._snapshot = private
            return store
        except (MemoryStoreError, TypeError, FileNotFoundError, ModuleNotFoundError):
            _release(lock, private)
            raise
        except Exception as err:  # noqa: BLE001 - any Chroma failure here means an unusable store
            _release(lock, private)
            raise MemoryStoreError(
                f"the memory store at {folder / 'chroma'} cannot be read ({type(err).__name__}: {err}). "
                "It may be corrupt or written by another Chroma version: move it aside and rebuild it "
                "from the trajectory log (`mia memory import` of an export, or MemoryStore.rebuild_from_log)."
            ) from err

    @classmethod
    def open_http(
        cls,
        host: str | None = None,
        port: int | None = None,
        *,
        log_dir: str | Path | None = None,
        embedder: Any = None,
        token: str | None = None,
        auth_header: str | None = None,
        basic_auth: str | None = None,
        **options: Any,
    ) -> MemoryStore:
        """A store on a Chroma server shared by several processes (`chroma run --path DIR --port P`).
        `log_dir` holds the trajectory log and the write lock: give every process the same one.
        Credentials go with every request (config.chroma_headers): a `token` sent as `auth_header`
        says, or `basic_auth` USER:PASSWORD (else $MIA_CHROMA_TOKEN, $MIA_CHROMA_AUTH_HEADER,
        $MIA_CHROMA_BASIC_AUTH). `chroma run` (Rust) checks none, Chroma's Python server or a proxy
        in front does (docs/security.md)."""
        import chromadb
        from chromadb.config import Settings

        host = host or config.chroma_host()
        port = int(port or config.chroma_port())
        headers = config.chroma_headers(token, auth_header, basic_auth)
        folder = Path(log_dir or config.memory_dir()).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        try:
            client = chromadb.HttpClient(
                host=host, port=port, headers=headers or None, settings=Settings(anonymized_telemetry=False)
            )
            client.heartbeat()
        except Exception as err:  # noqa: BLE001
            if any(word in str(err) for word in ("401", "403", "Unauthorized", "Forbidden")):
                raise MemoryStoreError(
                    f"the Chroma server at {host}:{port} refused the credentials ({type(err).__name__}: {err}). "
                    "Set MIA_CHROMA_TOKEN (and MIA_CHROMA_AUTH_HEADER if it expects X-Chroma-Token), "
                    "or MIA_CHROMA_BASIC_AUTH=USER:PASSWORD."
                ) from err
            raise MemoryStoreError(
                f"cannot reach the Chroma server at {host}:{port} ({type(err).__name__}: {err}). "
                f"Start one with `chroma run --path DIR --port {port}` or use MIA_CHROMA_MODE=persistent."
            ) from err
        return cls(
            client,
            log_dir=folder,
            embedder=resolve_embedder(embedder),
            location=f"http://{host}:{port}",
            mode="http",
            **options,
        )

    @classmethod
    def in_memory(cls, *, embedder: Any = None, log_dir: str | Path | None = None, **options: Any) -> MemoryStore:
        """A store over the in-process NumPy index (exact cosine): for tests and small
        deployments. Memories vanish with the process; the trajectory log goes to `log_dir`
        (default: a temporary folder removed at close)."""
        import tempfile

        from mia.memory.numpy_index import NumpyIndex

        tmp = tempfile.TemporaryDirectory(prefix="mia-memory-") if log_dir is None else None
        folder = Path(tmp.name) if tmp is not None else Path(str(log_dir)).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        store = cls(
            log_dir=folder,
            embedder=resolve_embedder(embedder),
            location=f"memory:{folder}",
            mode="memory",
            index=NumpyIndex(f"memory:{folder}"),
            **options,
        )
        store._log_tmp = tmp
        return store

    @classmethod
    def from_env(
        cls,
        data_dir: str | Path | None = None,
        *,
        mode: str | None = None,
        host: str | None = None,
        port: int | None = None,
        **options: Any,
    ) -> MemoryStore:
        """Open as the environment says (MIA_CHROMA_MODE, MIA_CHROMA_HOST/PORT, MIA_DATA_DIR)."""
        folder = Path(data_dir).expanduser() / "memory" if data_dir else config.memory_dir()
        if (mode or config.chroma_mode()) == "http":
            return cls.open_http(host, port, log_dir=folder, **options)
        return cls.open(folder, **options)

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
        if self._snapshot is not None:
            self._snapshot.cleanup()
            self._snapshot = None
        if self._log_tmp is not None:
            self._log_tmp.cleanup()
            self._log_tmp = None

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ buckets
    def namespaces(self) -> list[str]:
        """Every namespace that has memories or logged trajectories in the store."""
        return self.index.namespaces()

    def _dim(self) -> int:
        return int(self.embedder.dim)

    @property
    def read_only(self) -> bool:
        """True when opened read-only on a folder that cannot be written (see `open`)."""
        return self._snapshot is not None

    def _check_writable(self) -> None:
        if self.read_only:
            raise MemoryStoreError(
                f"the memory store at {self.location} was opened read-only (its folder cannot be "
                "written): nothing can be added, updated or deleted"
            )

    def _scope(self, namespace: str | None) -> list[str]:
        """One valid namespace, or every namespace in the store when None."""
        return [check_namespace(namespace)] if namespace is not None else self.namespaces()

    def _memory_buckets(self, namespace: str | None, outcome: Outcome | None = None) -> Iterator[tuple[str, str]]:
        """(namespace, bucket) of every memory bucket in scope (of one outcome when given)."""
        for ns in self._scope(namespace):
            for suffix, label in LABELS.items():
                if outcome is None or label == outcome:
                    yield ns, suffix

    # ------------------------------------------------------------------ writing
    def _embed_records(self, records: list[MemoryRecord]) -> np.ndarray:
        return self.embedder.embed_documents([r.embed_text for r in records])

    def add(self, record: MemoryRecord, embedding: np.ndarray | None = None) -> MemoryRecord:
        """Add one record as is (no dedup); see `memorise` for the full path."""
        self.add_many([record], None if embedding is None else np.asarray(embedding)[None, :])
        return record

    def writing(self) -> AbstractContextManager[None]:
        """The store's write lock (one writer at a time, across processes and threads), for an
        adapter whose one change is several index writes (MiaStore's atomic put)."""
        return self._write_lock()

    def replace(self, record: MemoryRecord) -> MemoryRecord:
        """Put `record` in place of the one with its id (or add it), as one change under the write
        lock: the new copy is written first (an upsert in its outcome's collection), then a copy
        left in another outcome's collection is deleted, so a failed write leaves the old record."""
        self._check_writable()
        with self._write_lock():
            self.add(record)
            for ns, suffix in self._memory_buckets(record.namespace):
                if suffix != LABEL_OF[record.outcome] and self.index.get(ns, suffix, [record.id], with_records=False):
                    self.index.delete(ns, suffix, [record.id])
        return record

    def _add_caption_vectors(self, records: list[MemoryRecord]) -> None:
        """Give every captioned record without one its caption's vector (one batch)."""
        todo = [r for r in records if r.caption.strip() and not r.caption_vector]
        if todo:
            vectors = self.embedder.embed_documents([r.caption.strip() for r in todo])
            for rec, vec in zip(todo, vectors):
                rec.caption_vector = encode_vector(vec)

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
        self._check_writable()
        if not records:
            return 0
        self._add_caption_vectors(records)
        vectors = self._embed_records(records) if embeddings is None else np.asarray(embeddings, dtype=np.float32)
        if vectors.shape != (len(records), self._dim()):
            raise ValueError(f"embeddings must have shape ({len(records)}, {self._dim()}), got {vectors.shape}")
        for ns in {rec.namespace for rec in records}:
            check_namespace(ns)
        records = [self._screened(rec) for rec in records]
        groups: dict[tuple[str, str], list[int]] = {}
        for index, rec in enumerate(records):
            groups.setdefault((rec.namespace, LABEL_OF[rec.outcome]), []).append(index)
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(records), desc="adding memories", unit="mem")
        with self._write_lock():
            for (ns, suffix), indices in groups.items():
                for start in range(0, len(indices), batch_size):
                    chunk = indices[start : start + batch_size]
                    self.index.put(
                        ns,
                        suffix,
                        [records[i].id for i in chunk],
                        vectors[chunk],
                        [records[i].to_json() for i in chunk],
                    )
                    if bar:
                        bar.update(len(chunk))
            for ns in {ns for ns, _ in groups}:
                self._maybe_prune(ns)
        if bar:
            bar.close()
        return len(records)

    def delete(self, ids: Iterable[str], namespace: str | None = None) -> int:
        """Delete memories by id; returns how many existed."""
        self._check_writable()
        wanted = list(dict.fromkeys(ids))
        removed = 0
        with self._write_lock():
            for ns, suffix in self._memory_buckets(namespace):
                found = [e.id for e in self.index.get(ns, suffix, wanted, with_records=False)]
                if found:
                    self.index.delete(ns, suffix, found)
                    removed += len(found)
        return removed

    def update_stats(self, ids: Iterable[str], success: bool, namespace: str | None = None) -> int:
        """After an episode: usage + 1 for every memory it used, success + 1 if it was judged
        correct; also refreshes last_used_at. Atomic across processes (write lock). Unlike MIA
        this does not depend on whether the new episode was stored or deduplicated."""
        self._check_writable()
        wanted = list(dict.fromkeys(i for i in ids if i))
        if not wanted:
            return 0
        now = time.time()
        updated = 0
        with self._write_lock():
            for ns, suffix in self._memory_buckets(namespace):
                got = self.index.get(ns, suffix, wanted)
                if not got:
                    continue
                ids, raws = [], []
                for entry in got:
                    rec = parse_record(entry.id, entry.record)
                    if rec is None:
                        continue
                    rec.usage_count += 1
                    rec.success_count += int(bool(success))
                    rec.last_used_at = now
                    ids.append(entry.id)
                    raws.append(rec.to_json())
                if ids:
                    self.index.update(ns, suffix, ids, raws)
                updated += len(ids)
                seen = {e.id for e in got}
                wanted = [i for i in wanted if i not in seen]
                if not wanted:
                    break
        return updated

    # ------------------------------------------------------------------ reading
    def get(self, memory_id: str, namespace: str | None = None) -> MemoryRecord | None:
        """One record by id (searching every namespace when none is given)."""
        for ns, suffix in self._memory_buckets(namespace):
            got = self.index.get(ns, suffix, [memory_id])
            if got:
                return parse_record(got[0].id, got[0].record)  # None when damaged
        return None

    def existing_ids(self, ids: Iterable[str], namespace: str | None = None) -> set[str]:
        """Which of these ids are stored (in one namespace or any)."""
        wanted = list(dict.fromkeys(ids))
        found: set[str] = set()
        for ns, suffix in self._memory_buckets(namespace):
            found.update(e.id for e in self.index.get(ns, suffix, wanted, with_records=False))
        return found

    def get_with_embeddings(
        self, namespace: str, outcome: Outcome | None = None
    ) -> tuple[list[MemoryRecord], np.ndarray]:
        """Every record of a namespace (optionally one outcome) and its stored vector."""
        check_namespace(namespace)
        records: list[MemoryRecord] = []
        vectors: list[np.ndarray] = []
        for ns, suffix in self._memory_buckets(namespace, outcome):
            for entry in self.index.get(ns, suffix, with_vectors=True):
                rec = parse_record(entry.id, entry.record)
                if rec is not None and entry.vector is not None:
                    records.append(rec)
                    vectors.append(entry.vector)
        matrix = np.vstack(vectors) if vectors else np.zeros((0, self._dim()), dtype=np.float32)
        return records, matrix

    def list(
        self, namespace: str | None = None, outcome: Outcome | None = None, limit: int | None = None, offset: int = 0
    ) -> list[MemoryRecord]:
        """Records, newest first."""
        records: builtins.list[MemoryRecord] = []
        for ns, suffix in self._memory_buckets(namespace, outcome):
            records += [r for r in (parse_record(e.id, e.record) for e in self.index.get(ns, suffix)) if r]
        records.sort(key=lambda r: r.created_at, reverse=True)
        return records[offset : None if limit is None else offset + limit]

    def count(self, namespace: str | None = None) -> int:
        """Number of memories (in one namespace or all)."""
        return sum(self.index.count(ns, suffix) for ns, suffix in self._memory_buckets(namespace))

    def retrieve(
        self,
        question: str,
        namespace: str | None = None,
        k_pos: int = 2,
        k_neg: int = 2,
        *,
        caption: str = "",
        caption_weight: float = DEFAULT_CAPTION_WEIGHT,
        query_embedding: np.ndarray | None = None,
        n_candidates: int | None = None,
        min_similarity: float | None = None,
    ) -> Retrieved:
        """The k_pos best positive and k_neg best negative memories for a question (see `Retriever`)."""
        return self.retriever.retrieve(
            question,
            resolve_namespace(namespace),
            k_pos,
            k_neg,
            caption=caption,
            caption_weight=caption_weight,
            query_embedding=query_embedding,
            n_candidates=n_candidates,
            min_similarity=min_similarity,
        )

    def rescore(
        self,
        query: np.ndarray,
        records: builtins.list[MemoryRecord],
        vectors: np.ndarray,
        k_pos: int,
        k_neg: int,
        *,
        caption: str = "",
        caption_weight: float = DEFAULT_CAPTION_WEIGHT,
        min_similarity: float | None = None,
    ) -> Retrieved:
        """Score a pool of full records from their vectors (float64 cosine), e.g. a full scan."""
        return self.retriever.rescore(
            query,
            records,
            vectors,
            k_pos,
            k_neg,
            caption=caption,
            caption_weight=caption_weight,
            min_similarity=min_similarity,
        )

    # ------------------------------------------------------------------ memorise
    def memorise(
        self, trajectory: Trajectory, compressor: Compressor | None = None, *, log: bool = True
    ) -> MemoryRecord:
        """Log the raw trajectory (first: it is never lost), compress it (model or extractive),
        then add it, or resolve it against a near-duplicate. Returns the record now stored."""
        check_namespace(trajectory.namespace)
        vector = self.embedder.embed_query(embed_text(trajectory.question))
        if log:
            self.log_trajectory(trajectory, vector)
        result = (
            compressor.compress(trajectory)
            if compressor is not None
            else CompressionResult(extractive_workflow(trajectory), "extractive")
        )
        record = record_from_trajectory(trajectory, result)
        self._add_caption_vectors([record])
        return self.add_deduplicated(record, vector)

    def add_deduplicated(self, record: MemoryRecord, vector: np.ndarray) -> MemoryRecord:
        """Add, unless a duplicate with the same outcome exists in the namespace: the same
        question up to case and punctuation (`upkeep.question_key`) at cosine >=
        policy.dedup_threshold. Then the shorter workflow survives under the old id and the
        counts are summed (see upkeep). A question keeps at most one memory per outcome: a
        success and a failure of the same question are both kept, as the positive and the
        negative lesson (the paper's consolidation keeps that pair)."""
        self._check_writable()
        check_namespace(record.namespace)
        record = self._screened(record)
        with self._write_lock():
            match = None if record.flags else self._duplicate_of(record, vector)
            if match is None:
                self._put(record, vector)
                self._maybe_prune(record.namespace)
                return record
            old, sim = match
            if not is_better(record, old):
                log.info("memory %s kept: duplicate (cos %.3f) of an equal or better one", old.id, sim)
                return old
            merged = merge_into(record, old, keep_id_of=old)
            self._put(merged, vector)
            log.info("memory %s replaced by a better duplicate (cos %.3f)", old.id, sim)
            return merged

    def _screened(self, record: MemoryRecord) -> MemoryRecord:
        """The record with the screen's reasons added to its flags (a flagged memory is stored
        for review but never retrieved: see screening.py)."""
        reasons = self.screen_reasons(record)
        if not reasons or set(reasons) <= set(record.flags):
            return record
        log.warning("memory %s flagged, it will not be retrieved: %s", record.id, "; ".join(reasons))
        return record.model_copy(update={"flags": list(dict.fromkeys(record.flags + reasons))})

    def screen_reasons(self, record: MemoryRecord) -> builtins.list[str]:
        """Why the planner should not see this record (empty when it may): the text it would read."""
        return self.screen.reasons(record.workflow, record.judge_feedback if record.outcome == "incorrect" else "")

    def suspicious(self, namespace: str | None = None) -> builtins.list[tuple[MemoryRecord, builtins.list[str]]]:
        """Memories flagged when stored, or that the current screen flags (stored before it, or
        with other prompt templates), with the reasons."""
        found = []
        for record in self.list(namespace):
            reasons = list(dict.fromkeys(record.flags + self.screen_reasons(record)))
            if reasons:
                found.append((record, reasons))
        return found

    def _put(self, record: MemoryRecord, vector: np.ndarray) -> None:
        self.index.put(
            record.namespace,
            LABEL_OF[record.outcome],
            [record.id],
            np.asarray(vector, dtype=np.float32).reshape(1, -1),
            [record.to_json()],
        )

    def _duplicate_of(self, record: MemoryRecord, vector: np.ndarray, n: int = 8) -> tuple[MemoryRecord, float] | None:
        """The stored memory of the same outcome that `record` duplicates, with its cosine: among
        the n nearest, the closest with the same question key and cosine >= the threshold. (The
        n nearest, not the nearest: a near-identical other question can sit closer.)"""
        for entry in self.index.query(record.namespace, LABEL_OF[record.outcome], vector, n, with_vectors=True):
            old = parse_record(entry.id, entry.record)
            if old is None or old.flags or not same_question(record, old) or entry.vector is None:
                continue
            sim = float(cosine(vector, entry.vector[None, :])[0])
            if sim >= self.policy.dedup_threshold:
                return old, sim
        return None

    # ------------------------------------------------------------------ upkeep
    def _maybe_prune(self, namespace: str) -> None:
        bound = self.policy.max_per_namespace
        if bound is not None and self.count(namespace) > bound:
            self.prune(namespace)

    def prune(
        self, namespace: str | None = None, max_size: int | None = None, now: float | None = None, dry_run: bool = False
    ) -> builtins.list[str]:
        """Evict the least valuable memories (low win rate, long unused) until the namespace
        holds `max_size` (default: 90% of policy.max_per_namespace). Returns the evicted ids, or
        with `dry_run` the ids it would evict, evicting nothing (to ask before it does)."""
        check_max_size(max_size)
        if not dry_run:
            self._check_writable()
        evicted: builtins.list[str] = []
        for ns in self._scope(namespace):
            target = max_size if max_size is not None else target_size(self.policy)
            if target is None:
                continue
            with self._write_lock():
                records = self.list(ns)
                excess = len(records) - target
                if excess <= 0:
                    continue
                order = eviction_order(records, now or time.time(), self.policy, self.weights)
                doomed = [records[i] for i in order[:excess]]
                for suffix in () if dry_run else LABELS:
                    ids = [r.id for r in doomed if LABEL_OF[r.outcome] == suffix]
                    if ids:
                        self.index.delete(ns, suffix, ids)
                evicted += [r.id for r in doomed]
        return evicted

    def consolidate(self, namespace: str | None = None, now: float | None = None) -> dict[str, dict[str, int]]:
        """Merge near-duplicates of the same outcome (the shorter survives, counts are summed), so
        that a question keeps at most one positive and one negative memory; enforce the size
        bound; re-index logged trajectories the index lacks. Returns counts per namespace."""
        self._check_writable()
        from mia.memory.upkeep import duplicate_groups

        report: dict[str, dict[str, int]] = {}
        for ns in self._scope(namespace):
            with self._write_lock():
                merged = 0
                for suffix, outcome in LABELS.items():
                    records, vectors = self.get_with_embeddings(ns, outcome)
                    groups = duplicate_groups(records, vectors, self.policy.dedup_threshold)
                    for keep, absorbed in groups.groups.items():
                        survivor = records[keep]
                        for j in absorbed:
                            survivor = merge_into(survivor, records[j], keep_id_of=survivor)
                        self.index.delete(ns, suffix, [records[j].id for j in absorbed])
                        merged += len(absorbed)
                        self._put(survivor, vectors[keep])
                evicted = len(self.prune(ns, now=now)) if self.policy.max_per_namespace else 0
                indexed = self.trajectories.sync(ns, force=True)
            report[ns] = {"merged": merged, "evicted": evicted, "kept": self.count(ns), "reindexed": indexed}
        return report

    def reset(self, namespace: str | None = None, include_log: bool = False) -> int:
        """Delete the memories (and trajectory index) of a namespace, or of all. The raw log is
        the training data: it is only moved aside (to a timestamped .bak) with include_log."""
        self._check_writable()
        if namespace is not None:
            check_namespace(namespace)
        removed = 0
        with self._write_lock():
            removed = self.index.drop(namespace)
            self.trajectories.mark_synced(None)
            if include_log and self.trajectory_log.path.exists():
                if namespace is None:
                    self.trajectory_log.path.rename(
                        self.trajectory_log.path.with_suffix(f".jsonl.bak-{int(time.time())}")
                    )
                else:
                    log.warning("include_log with one namespace: the log is shared and was kept")
        return removed

    def stats(self, namespace: str | None = None) -> dict[str, dict[str, Any]]:
        """Per namespace: counts by outcome, usage, win rates, sizes and the compression ratio."""
        out: dict[str, dict[str, Any]] = {}
        for ns in self._scope(namespace):
            records = self.list(ns)
            by_outcome: dict[str, int] = {o: sum(r.outcome == o for r in records) for o in LABELS.values()}
            trace = sum(r.trace_tokens for r in records)
            flow = sum(r.workflow_tokens for r in records)
            methods: dict[str, int] = {}
            for r in records:
                methods[r.compression] = methods.get(r.compression, 0) + 1
            rates = [r.win_rate(self.weights.prior_success, self.weights.prior_failure) for r in records]
            out[ns] = {
                "memories": len(records),
                **by_outcome,
                "used": sum(r.usage_count > 0 for r in records),
                "total_usage": sum(r.usage_count for r in records),
                "mean_win_rate": float(np.mean(rates)) if rates else None,
                "mean_workflow_tokens": flow / len(records) if records else None,
                "mean_trace_tokens": trace / len(records) if records else None,
                "compression_ratio": trace / flow if flow else None,
                "compression_methods": methods,
            }
        return out

    # ------------------------------------------------------------------ trajectories
    def folder_missing(self) -> bool:
        """True when the embedded store's folder was removed under it (by hand, or a clean-up while
        a chat ran): Chroma's writes fail from then on ('attempt to write a readonly database'), and
        only a store opened afresh there can take the next episode. (A server store keeps its
        collections on the server; its log folder is made again by the next append.)"""
        return self.mode == "persistent" and self._snapshot is None and not (Path(self.location) / "chroma").is_dir()

    def log_trajectory(self, trajectory: Trajectory, vector: np.ndarray | None = None) -> None:
        """Append the raw trajectory to the JSONL log (durable), then index its question."""
        self._check_writable()
        check_namespace(trajectory.namespace)
        self.trajectories.append(trajectory, vector)

    def search_trajectories(
        self,
        question: str,
        namespace: str | None = None,
        k: int = 3,
        *,
        query_embedding: np.ndarray | None = None,
        min_similarity: float | None = None,
    ) -> builtins.list[ScoredTrajectory]:
        """The k logged raw trajectories whose questions are most similar (trajectory-RAG); with
        `min_similarity`, only those at least that similar (the same floor as `retrieve`)."""
        query = (
            np.asarray(query_embedding, dtype=np.float32).ravel()
            if query_embedding is not None
            else self.embedder.embed_query(question)
        )
        found = self.trajectories.search(resolve_namespace(namespace), k, query)
        return found if min_similarity is None else [t for t in found if t.similarity >= min_similarity]

    def rebuild_from_log(
        self, compressor: Compressor | None = None, namespace: str | None = None, progress: bool = True
    ) -> int:
        """Re-memorise every logged trajectory in the order it was logged (after a reset, with a better
        manager model, or from a study that keeps only its log), crediting the memories each one used
        as the graph did: a record's id is its trajectory's, so the logged `used_memory_ids` name the
        rebuilt records. (Memories whose use test-time learning credited by majority, and logs written
        when record ids were random, are rebuilt without those credits.) The raw trajectories' question
        index is rebuilt too, so the store is whole, even when opened read-only later."""
        if namespace is not None:
            check_namespace(namespace)
        trajectories = list(self.trajectory_log.read(namespace))
        iterator: Iterable[Trajectory] = trajectories
        if progress:
            from tqdm.auto import tqdm

            iterator = tqdm(trajectories, desc="rebuilding memories", unit="traj")
        for traj in iterator:
            self.memorise(traj, compressor, log=False)
            if traj.used_memory_ids and traj.outcome != "unknown":
                self.update_stats(traj.used_memory_ids, success=traj.outcome == "correct", namespace=traj.namespace)
        for ns in sorted({t.namespace for t in trajectories}):  # and trajectory-RAG's question index
            self.trajectories.sync(ns, force=True)
        return len(trajectories)

    # ------------------------------------------------------------------ export / import
    def export_jsonl(self, path: str | Path, namespace: str | None = None, overwrite: bool = False) -> int:
        """Write a header line and one record per line (vectors are not exported: re-embedded on import).
        Only a new regular file in an existing folder, or an existing one with `overwrite`."""
        from mia.memory.transfer import export_records

        return export_records(self, Path(path), namespace, overwrite)

    def import_jsonl(
        self,
        path: str | Path,
        namespace: str | None = None,
        dedup: bool = True,
        on_skip: Callable[[str], None] | None = None,
    ) -> dict[str, int]:
        """Read an export; bad lines are skipped, each reported to `on_skip` as one line of
        text, and the good ones land. Returns counts by action."""
        from mia.memory.transfer import import_records

        return import_records(self, Path(path), namespace, dedup, on_skip)


def check_max_size(max_size: int | None) -> None:
    """A prune bound is a positive count: 0 or less would evict everything (that is `reset`, which asks)."""
    if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1):
        raise ValueError(f"max_size must be a positive number of memories, not {max_size!r} (reset deletes them all)")


def record_from_trajectory(trajectory: Trajectory, result: CompressionResult) -> MemoryRecord:
    """A memory record for a compressed trajectory, with its sizes in tokens."""
    return MemoryRecord(
        id=trajectory.id,  # one id for the episode and its memory: a rebuild from the log keeps the ids it used
        namespace=trajectory.namespace,
        question=trajectory.question,
        caption=trajectory.caption,
        workflow=result.workflow,
        plan=trajectory.plan,
        outcome=trajectory.outcome,
        judge_feedback=trajectory.judge_feedback,
        source=trajectory.source,
        dataset=trajectory.dataset,
        trajectory_id=trajectory.id,
        trace_tokens=count_tokens(trajectory.to_trace_text()),
        workflow_tokens=count_tokens(result.workflow),
        compression=result.method,
        manager=result.model,
    )


def _release(lock: FolderLock | None, snapshot: Any) -> None:
    if lock is not None:
        lock.release()
    if snapshot is not None:
        snapshot.cleanup()


__all__ = ["MemoryStore", "ScoredTrajectory", "collection_name", "record_from_trajectory", "StoreLockedError"]
