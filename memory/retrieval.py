"""Retrieval: the best positive and the best negative workflows for a question, over a MemoryIndex.

Candidates are the ANN top-N of the namespace's positive and of its negative bucket; the pool is
then rescored exactly (cosine recomputed, min-max over the pool, win rate from the raw counts;
`scoring.py`). Kept apart from MemoryStore because it only reads: it needs the index, the
embedder and the weights, not the log, the locks or upkeep.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from mia.memory.caption import DEFAULT_CAPTION_WEIGHT, mixed_similarity
from mia.memory.index import MemoryIndex
from mia.memory.records import (
    MemoryRecord,
    Retrieved,
    ScoredMemory,
    caption_vector_of,
    embed_text,
    parse_record,
    score_fields,
)
from mia.memory.scoring import ScoringWeights, combined_scores, cosine, top_k_split, win_rates

log = logging.getLogger(__name__)


class Retriever:
    """Ranks the memories of a namespace for a question (one scoring path for the ANN pool and
    for a full scan)."""

    def __init__(self, index: MemoryIndex, embedder: Any, weights: ScoringWeights, n_candidates: int = 50) -> None:
        self.index = index
        self.embedder = embedder
        self.weights = weights
        self.n_candidates = n_candidates
        self._threads: ThreadPoolExecutor | None = None

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None

    def retrieve(
        self,
        question: str,
        namespace: str,
        k_pos: int = 2,
        k_neg: int = 2,
        *,
        caption: str = "",
        caption_weight: float = DEFAULT_CAPTION_WEIGHT,
        query_embedding: np.ndarray | None = None,
        n_candidates: int | None = None,
        min_similarity: float | None = None,
    ) -> Retrieved:
        """The k_pos best positive and k_neg best negative memories for a question.

        Candidates: the ANN top-N (N = n_candidates, default 50) of the namespace's positive and
        of its negative collection, with their cosine distances (hnswlib computes them exactly
        for the points it returns: only *which* points are found is approximate). The pool is
        then rescored exactly (`rescore`). Memories with outcome 'unknown' are never shown.
        With a caption, similarity is (1 - caption_weight) * question cosine + caption_weight *
        caption cosine (MIA: 0.2); without one, the question cosine alone. A memory whose similarity
        is below `min_similarity` is not shown (None, MIA's rule: min-max shows the best candidates
        however unrelated they are; bench/memory/relatedness.md)."""
        query = (
            np.asarray(query_embedding, dtype=np.float32).ravel()
            if query_embedding is not None
            else self.embedder.embed_query(embed_text(question))
        )
        n = max(n_candidates or self.n_candidates, k_pos, k_neg, 1)
        buckets = [suffix for suffix, k in (("pos", k_pos), ("neg", k_neg)) if k > 0]
        if len(buckets) > 1:  # Chroma releases the GIL: the two labels are looked up side by side
            parts = list(self._pool().map(lambda suffix: self.index.query(namespace, suffix, query, n), buckets))
        else:
            parts = [self.index.query(namespace, suffix, query, n) for suffix in buckets]
        pool = [(e.id, e.record, e.similarity) for part in parts for e in part]
        # score fields only for the pool; full records only for the k + k shown
        fields, kept = [], []
        for rid, raw, sim in pool:
            light = score_fields(raw)
            if light is None:
                log.warning("memory %s skipped: damaged record", rid)
                continue
            if light[3]:  # flagged by screening: kept for review, never shown to the planner
                continue
            fields.append(light)
            kept.append((rid, raw, sim))
        if not kept:
            return Retrieved()
        sims = self._with_caption(
            np.array([sim for _, _, sim in kept]),
            caption,
            caption_weight,
            [caption_vector_of(raw) for _, raw, _ in kept],
        )
        outcomes = [f[0] for f in fields]
        usage = np.array([f[1] for f in fields], dtype=np.float64)
        success = np.array([f[2] for f in fields], dtype=np.float64)
        scores, normalised, rates, pos, neg = self._rank(sims, outcomes, usage, success, k_pos, k_neg, min_similarity)

        def scored(i: int) -> ScoredMemory | None:
            rec = parse_record(kept[i][0], kept[i][1])
            if rec is None:
                return None
            return ScoredMemory(
                record=rec,
                score=float(scores[i]),
                similarity=float(sims[i]),
                normalised_similarity=float(normalised[i]),
                win_rate=float(rates[i]),
            )

        return Retrieved(
            positives=[m for m in map(scored, pos) if m],
            negatives=[m for m in map(scored, neg) if m],
            candidate_ids=[rid for rid, _, _ in kept],
        )

    def rescore(
        self,
        query: np.ndarray,
        records: list[MemoryRecord],
        vectors: np.ndarray,
        k_pos: int,
        k_neg: int,
        *,
        caption: str = "",
        caption_weight: float = DEFAULT_CAPTION_WEIGHT,
        min_similarity: float | None = None,
    ) -> Retrieved:
        """Score a pool of full records from their vectors (float64 cosine), e.g. a full scan."""
        if not records:
            return Retrieved()
        sims = self._with_caption(cosine(query, vectors), caption, caption_weight, [r.caption_vector for r in records])
        scores, normalised, rates, pos, neg = self._rank(
            sims,
            [r.outcome for r in records],
            np.array([r.usage_count for r in records], dtype=np.float64),
            np.array([r.success_count for r in records], dtype=np.float64),
            k_pos,
            k_neg,
            min_similarity,
        )

        def scored(i: int) -> ScoredMemory:
            return ScoredMemory(
                record=records[i],
                score=float(scores[i]),
                similarity=float(sims[i]),
                normalised_similarity=float(normalised[i]),
                win_rate=float(rates[i]),
            )

        return Retrieved(
            positives=[scored(i) for i in pos],
            negatives=[scored(i) for i in neg],
            candidate_ids=[r.id for r in records],
        )

    def _pool(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mia-memory")
        return self._threads

    def _rank(
        self,
        sims: np.ndarray,
        outcomes: list[str],
        usage: np.ndarray,
        success: np.ndarray,
        k_pos: int,
        k_neg: int,
        min_similarity: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int], list[int]]:
        """The one scoring path: min-max over the pool, win rate from raw counts, split by label;
        the floor removes candidates from what is shown, not from the min-max pool."""
        rates = win_rates(success, usage, self.weights)
        scores, normalised = combined_scores(sims, rates, self.weights)
        related = (
            np.ones(len(outcomes), dtype=bool)
            if min_similarity is None
            else np.asarray(sims, dtype=np.float64) >= min_similarity
        )
        positive = np.array([o == "correct" for o in outcomes]) & related
        negative = np.array([o == "incorrect" for o in outcomes]) & related
        pos, neg = top_k_split(scores, positive, negative, k_pos, k_neg)
        return scores, normalised, rates, pos, neg

    def _with_caption(self, sims: np.ndarray, caption: str, weight: float, vectors: list[str]) -> np.ndarray:
        """Question cosines mixed with caption cosines when the query has a caption."""
        if not caption.strip():
            return sims
        return mixed_similarity(sims, self.embedder.embed_query(caption.strip()), vectors, weight)
