"""A store's raw trajectories: appended to the JSONL log (the training data, never lost) and
searched by question (trajectory-RAG, over trajectory_index.py). MemoryStore binds these
functions as its methods, so each takes the store, typed by what it needs (`TrajectoryStore`)."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mia.memory.namespaces import check_namespace, resolve_namespace
from mia.memory.trajectory import Trajectory
from mia.memory.trajectory_index import ScoredTrajectory, TrajectoryIndex


class TrajectoryStore(Protocol):
    """What logging and searching trajectories need from a store (MemoryStore passes it)."""

    embedder: Any
    location: str
    mode: str
    trajectories: TrajectoryIndex

    @property
    def read_only(self) -> bool: ...

    def check_writable(self) -> None: ...


def folder_missing(store: TrajectoryStore) -> bool:
    """True when the embedded store's folder was removed under it (by hand, or a clean-up while
    a chat ran): Chroma's writes fail from then on ('attempt to write a readonly database'), and
    only a store opened afresh there can take the next episode. (A server store keeps its
    collections on the server; its log folder is made again by the next append.)"""
    return store.mode == "persistent" and not store.read_only and not (Path(store.location) / "chroma").is_dir()


def log_trajectory(store: TrajectoryStore, trajectory: Trajectory, vector: np.ndarray | None = None) -> None:
    """Append the raw trajectory to the JSONL log (durable), then index its question."""
    store.check_writable()
    check_namespace(trajectory.namespace)
    store.trajectories.append(trajectory, vector)


def search_trajectories(
    store: TrajectoryStore,
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
        else store.embedder.embed_query(question)
    )
    found = store.trajectories.search(resolve_namespace(namespace), k, query)
    return found if min_similarity is None else [t for t in found if t.similarity >= min_similarity]
