"""The raw-trajectory side of the store: every finished trajectory is appended to a JSONL log
(trajectory_log.py, the training data and the source of truth) and its question is indexed in
one bucket per namespace of the MemoryIndex, for the trajectory-RAG baseline. An index entry lost
in a crash between the two writes is re-made from the log (`sync`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
from pydantic import BaseModel

from mia.memory.index import TRAJECTORY_BUCKET, MemoryIndex
from mia.memory.locking import WriteLock
from mia.memory.records import embed_text, shown_memory
from mia.memory.trajectory import Trajectory
from mia.memory.trajectory_log import TrajectoryLog

if TYPE_CHECKING:
    from mia.memory.embeddings import Embedder

log = logging.getLogger(__name__)


class ScoredTrajectory(BaseModel):
    """A past raw trajectory found by question similarity (the trajectory-RAG baseline)."""

    trajectory: Trajectory
    similarity: float

    def shown(self) -> dict[str, Any]:
        """Ranked by similarity alone, so its score is that."""
        t = self.trajectory
        return shown_memory(t.id, t.outcome, t.question, self.similarity, self.similarity)


class TrajectoryIndex:
    """The log plus its question index. `read_only` is asked at each sync (a read-only store
    never writes the index)."""

    def __init__(
        self,
        index: MemoryIndex,
        trajectory_log: TrajectoryLog,
        embedder: Embedder,
        write_lock: WriteLock,
        read_only: Callable[[], bool],
    ) -> None:
        self.index, self.log, self.embedder = index, trajectory_log, embedder
        self._write_lock, self._read_only = write_lock, read_only
        self._synced: set[str] = set()

    def append(self, trajectory: Trajectory, vector: np.ndarray | None = None) -> None:
        """Append to the log (durable), then index the question; an indexing failure is only
        logged: the next `sync` (or `consolidate`) indexes it from the log."""
        offsets = self.log.append_many([trajectory])
        try:
            self.put([(trajectory, offsets[0])], None if vector is None else np.asarray(vector)[None, :])
        except Exception as err:  # noqa: BLE001 - the log has it
            log.warning("trajectory %s logged but not indexed (%s); `consolidate` will index it", trajectory.id, err)

    def put(self, items: list[tuple[Trajectory, int]], vectors: np.ndarray | None = None) -> None:
        """Index (trajectory, log offset) pairs; vectors are embedded from the questions when not given."""
        by_ns: dict[str, list[tuple[Trajectory, int]]] = {}
        for traj, offset in items:
            by_ns.setdefault(traj.namespace, []).append((traj, offset))
        for ns, group in by_ns.items():
            if vectors is None or len(by_ns) > 1:
                vectors = self.embedder.embed_documents([embed_text(t.question) for t, _ in group])
            with self._write_lock():
                self.index.put(
                    ns,
                    TRAJECTORY_BUCKET,
                    [t.id for t, _ in group],
                    np.asarray(vectors, dtype=np.float32),
                    [
                        orjson.dumps({"offset": offset, "outcome": t.outcome, "created_at": t.created_at}).decode()
                        for t, offset in group
                    ],
                )

    def sync(self, namespace: str, force: bool = False) -> int:
        """Index logged trajectories that the index lacks (once per namespace unless forced);
        returns how many."""
        if (namespace in self._synced and not force) or self._read_only():
            return 0
        known = {e.id for e in self.index.get(namespace, TRAJECTORY_BUCKET, with_records=False)}
        missing = [(t, off) for t, off in self.log.read_with_offsets(namespace) if t.id not in known]
        for start in range(0, len(missing), 256):
            self.put(missing[start : start + 256])
        self._synced.add(namespace)
        return len(missing)

    def mark_synced(self, namespace: str | None = None) -> None:
        """Take the index as complete for a namespace; None forgets every namespace (after a reset)."""
        if namespace is None:
            self._synced.clear()
        else:
            self._synced.add(namespace)

    def search(self, namespace: str, k: int, query: np.ndarray) -> list[ScoredTrajectory]:
        """The k logged trajectories whose questions are nearest to the query vector."""
        self.sync(namespace)
        if k <= 0 or not self.index.count(namespace, TRAJECTORY_BUCKET):
            return []
        found: list[ScoredTrajectory] = []
        for entry in self.index.query(namespace, TRAJECTORY_BUCKET, query, k):
            try:
                offset = int(orjson.loads(entry.record)["offset"])
            except (ValueError, TypeError, KeyError):
                log.warning("trajectory %s skipped: damaged index entry", entry.id)
                continue
            traj = self.log.read_at(offset, entry.id)
            if traj is not None:
                found.append(ScoredTrajectory(trajectory=traj, similarity=entry.similarity))
        return found
