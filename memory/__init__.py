"""mia.memory: MIA's non-parametric workflow memory (records, trajectories, compression,
Chroma store, retrieval scoring, upkeep, JSONL export/import).

Imports of chromadb and sentence-transformers happen only when a store or embedder is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

from mia.memory.errors import (
    EmbeddingModelMissingError,
    InvalidNamespaceError,
    MemoryStoreError,
    SchemaMismatchError,
    StoreLockedError,
)
from mia.memory.namespaces import check_namespace, namespace_folder
from mia.memory.records import MemoryRecord, Retrieved, ScoredMemory
from mia.memory.scoring import ScoringWeights
from mia.memory.trajectory import Outcome, Trajectory, TrajectoryStep, cut_for_log, was_cut_for_log
from mia.memory.upkeep import UpkeepPolicy

if TYPE_CHECKING:
    from mia.memory.compression import CompressionResult, Compressor
    from mia.memory.embeddings import default_embedder
    from mia.memory.store import MemoryStore
    from mia.memory.trajectory_index import ScoredTrajectory

__getattr__, _dir, _lazy = lazy_loader.attach(
    __name__,
    submod_attrs={
        "store": ["MemoryStore"],
        "trajectory_index": ["ScoredTrajectory"],
        "compression": ["Compressor", "CompressionResult"],
        "embeddings": ["default_embedder"],
    },
)

__all__ = [
    "MemoryStore",
    "MemoryRecord",
    "Outcome",
    "ScoredMemory",
    "Retrieved",
    "Trajectory",
    "TrajectoryStep",
    "cut_for_log",
    "was_cut_for_log",
    "Compressor",
    "CompressionResult",
    "default_embedder",
    "ScoredTrajectory",
    "ScoringWeights",
    "UpkeepPolicy",
    "MemoryStoreError",
    "EmbeddingModelMissingError",
    "StoreLockedError",
    "SchemaMismatchError",
    "InvalidNamespaceError",
    "check_namespace",
    "namespace_folder",
]
