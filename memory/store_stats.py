"""Per-namespace statistics of a store (`mia memory stats`): counts, usage, win rates and how much
compression saved. Read-only, so it needs only a store's records and scoring weights."""

from __future__ import annotations

import builtins
from typing import Any, Protocol

import numpy as np

from mia.memory.index import MEMORY_BUCKETS
from mia.memory.records import MemoryRecord
from mia.memory.scoring import ScoringWeights


class StatsStore(Protocol):
    """What the statistics read from a store (MemoryStore passes it)."""

    @property
    def weights(self) -> ScoringWeights: ...

    def scope(self, namespace: str | None) -> builtins.list[str]: ...

    def list(self, namespace: str | None = None) -> builtins.list[MemoryRecord]: ...


def stats(store: StatsStore, namespace: str | None = None) -> dict[str, dict[str, Any]]:
    """Per namespace: counts by outcome, usage, win rates, sizes and the compression ratio."""
    return {ns: namespace_stats(store.list(ns), store.weights) for ns in store.scope(namespace)}


def namespace_stats(records: list[MemoryRecord], weights: ScoringWeights) -> dict[str, Any]:
    """The statistics of one namespace's records."""
    by_outcome: dict[str, int] = {o: sum(r.outcome == o for r in records) for o in MEMORY_BUCKETS.values()}
    trace = sum(r.trace_tokens for r in records)
    flow = sum(r.workflow_tokens for r in records)
    methods: dict[str, int] = {}
    for r in records:
        methods[r.compression] = methods.get(r.compression, 0) + 1
    rates = [r.win_rate(weights.prior_success, weights.prior_failure) for r in records]
    return {
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
