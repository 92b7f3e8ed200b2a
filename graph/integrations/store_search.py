"""`MiaStore.search`: the filter first, then offset and limit, over memories and generic items.

Without a query, every item under the prefix that passes the filter, newest first. With one,
candidates are each bucket's nearest entries to the query (ANN, as MIA's retrieval takes them),
filtered before anything is cut, and asked for again, four times as many, until a bucket yields
offset + limit that pass or has no more. MIA's score then ranks them all: 0.7 x the similarity
min-maxed over the candidates + 0.3 x the win rate, where a generic item, never used, has the
prior's win rate (a new memory's): on judged memories alone, exactly `MemoryStore.retrieve`'s
score. A memory that screening flagged is never a candidate (kept for review, never shown), and
generic items without a vector (`index=False`) follow the ranked ones, unscored, as in InMemoryStore.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from langgraph.store.base import SearchItem, SearchOp

from mia.graph.integrations.namespaces import to_tuple, under
from mia.graph.integrations.store_filter import check_filter, matches
from mia.graph.integrations.store_items import BUCKETS, EMBEDDED, PLAIN, GenericItems, decode
from mia.graph.integrations.store_values import generic_view, memory_view
from mia.memory.index import MEMORY_BUCKETS, Entry, MemoryIndex
from mia.memory.records import embed_text, parse_record
from mia.memory.scoring import ScoringWeights, combined_scores, win_rates


@dataclass(frozen=True)
class Candidate:
    """An item that passed the filter, with what its score is made of."""

    item: SearchItem
    similarity: float
    usage: int = 0
    success: int = 0


Convert = Callable[[Entry], "Candidate | None"]


def search(memory: Any, items: GenericItems, op: SearchOp) -> list[SearchItem]:
    """The page of items `op` asks for (see the module docstring)."""
    wanted = check_filter(op.filter)
    namespaces = [ns for ns in memory.namespaces() if under(to_tuple(ns), tuple(op.namespace_prefix))]
    end = op.offset + op.limit
    found = _ranked(memory, op.query, wanted, namespaces, end) if op.query else []
    if len(found) < end:  # without a query, or to fill up with the items that have no vector
        listed: list[SearchItem] = []
        for ns in namespaces:
            if not op.query:
                listed += [memory_view(r) for r in memory.list(ns)]
            listed += [generic_view(ns, s) for s in items.all(ns, (PLAIN,) if op.query else BUCKETS)]
        found += sorted((i for i in listed if matches(i.value, wanted)), key=lambda i: i.created_at, reverse=True)
    return found[op.offset : end]


def _ranked(memory: Any, query: str, wanted: dict[str, Any], namespaces: list[str], want: int) -> list[SearchItem]:
    vector = memory.embedder.embed_query(embed_text(query))
    first = int(getattr(memory.retriever, "n_candidates", 50))
    pool: list[Candidate] = []
    for ns in namespaces:
        for bucket in MEMORY_BUCKETS:
            pool += nearest(memory.index, ns, bucket, vector, want, first, _memory_candidate(wanted))
        pool += nearest(memory.index, ns, EMBEDDED, vector, want, first, _item_candidate(ns, wanted))
    return rank(pool, memory.weights)


def _memory_candidate(wanted: dict[str, Any]) -> Convert:
    def convert(entry: Entry) -> Candidate | None:
        record = parse_record(entry.id, entry.record)
        if record is None or record.flags:
            return None
        item = memory_view(record)
        if not matches(item.value, wanted):
            return None
        return Candidate(item, entry.similarity, record.usage_count, record.success_count)

    return convert


def _item_candidate(namespace: str, wanted: dict[str, Any]) -> Convert:
    def convert(entry: Entry) -> Candidate | None:
        stored = decode(entry.id, entry.record)
        if stored is None or not matches(stored.value, wanted):
            return None
        return Candidate(generic_view(namespace, stored), entry.similarity)

    return convert


def nearest(
    index: MemoryIndex, namespace: str, bucket: str, query: np.ndarray, want: int, first: int, convert: Convert
) -> list[Candidate]:
    """The bucket's nearest entries that `convert` keeps, at least `want` of them while there are."""
    n = max(first, want, 1)
    while True:
        entries = index.query(namespace, bucket, query, n)
        kept = [c for c in map(convert, entries) if c is not None]
        if len(kept) >= want or len(entries) < n:
            return kept
        n *= 4


def rank(candidates: list[Candidate], weights: ScoringWeights) -> list[SearchItem]:
    """The candidates best first, each with its score (ties keep the candidates' order)."""
    if not candidates:
        return []
    rates = win_rates(
        np.array([c.success for c in candidates], dtype=np.float64),
        np.array([c.usage for c in candidates], dtype=np.float64),
        weights,
    )
    scores, _ = combined_scores(np.array([c.similarity for c in candidates]), rates, weights)
    return [_scored(candidates[i].item, float(scores[i])) for i in np.argsort(-scores, kind="stable")]


def _scored(item: SearchItem, score: float) -> SearchItem:
    return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)
