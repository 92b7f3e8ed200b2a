"""Upkeep rules beyond the paper, as pure functions: which of two near-duplicates survives,
which memories a full namespace forgets first, and near-duplicate groups for consolidation."""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field

import numpy as np

from mia.memory.records import MemoryRecord
from mia.memory.scoring import ScoringWeights

DAY = 86400.0


@dataclass(frozen=True)
class UpkeepPolicy:
    """Dedup threshold (cosine of the embedded question), size bound and eviction weights.

    Two memories are duplicates only when their questions (and captions) are the same text
    up to case, Unicode form, punctuation and spacing (`question_key`) AND their cosine is at
    least `dedup_threshold`. Cosine alone merged different questions: "Who is older, Jimmy Page
    or Robert Plant?" and "Who is younger, ..." are at cosine 0.985 with MiniLM, and one word
    or one digit ("888 7th Avenue" / "888 8th Avenue") is all that tells their answers apart.
    MIA uses 0.9999, exact repeats only; the text key keeps that intent and also catches
    punctuation and case variants.
    """

    dedup_threshold: float = 0.95
    max_per_namespace: int | None = None
    prune_to_fraction: float = 0.9  # evict down to 90% of the bound so eviction is amortised
    win_rate_weight: float = 0.5
    recency_weight: float = 0.5
    recency_half_life_days: float = 30.0


_PUNCT_CATEGORIES = ("P", "S", "Z", "C")  # punctuation, symbols, separators, controls


def question_key(question: str, caption: str = "") -> str:
    """The identity of a question for dedup: NFKC, case-folded, every run of punctuation,
    symbols and spaces turned into one space. Words and digits are never dropped or
    stemmed, since one of them ("older"/"younger", "7th"/"8th") can change the answer."""

    def norm(text: str) -> str:
        text = unicodedata.normalize("NFKC", text).casefold()
        chars = [" " if unicodedata.category(ch)[0] in _PUNCT_CATEGORIES else ch for ch in text]
        return re.sub(r" +", " ", "".join(chars)).strip()

    return norm(question) + ("\n" + norm(caption) if caption.strip() else "")


def same_question(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Whether two records are about the same question (see `question_key`)."""
    return question_key(a.question, a.caption) == question_key(b.question, b.caption)


def is_better(new: MemoryRecord, old: MemoryRecord) -> bool:
    """Does `new` replace its near-duplicate `old` (same outcome: dedup never crosses outcomes,
    so a question keeps a positive and a negative lesson)? The shorter workflow wins (MIA's
    rule); a tie keeps the old one."""
    return len(new.workflow.split()) < len(old.workflow.split())


def merge_into(survivor: MemoryRecord, loser: MemoryRecord, keep_id_of: MemoryRecord) -> MemoryRecord:
    """The surviving content under the old id (ids handed to running episodes stay valid), with
    the two track records summed: same question, same outcome, the same lesson."""
    merged = survivor.model_copy(update={"id": keep_id_of.id})
    merged.usage_count = survivor.usage_count + loser.usage_count
    merged.success_count = survivor.success_count + loser.success_count
    merged.last_used_at = max(survivor.last_used_at, loser.last_used_at)
    merged.created_at = min(survivor.created_at, loser.created_at)
    return merged


def retention(records: list[MemoryRecord], now: float, policy: UpkeepPolicy, weights: ScoringWeights) -> np.ndarray:
    """Higher = keep. win rate (with the prior) and recency of last use, half-life 30 days: a
    memory that keeps losing and has not been retrieved for weeks goes first; a fresh one
    (last_used = created) is protected by its recency for its first weeks."""
    rates = np.array([r.win_rate(weights.prior_success, weights.prior_failure) for r in records])
    ages = np.array([max(now - r.last_used_at, 0.0) / DAY for r in records])
    recency = np.power(0.5, ages / max(policy.recency_half_life_days, 1e-9))
    return policy.win_rate_weight * rates + policy.recency_weight * recency


def eviction_order(records: list[MemoryRecord], now: float, policy: UpkeepPolicy, weights: ScoringWeights) -> list[int]:
    """Indices from first-to-evict to last; ties evict the older record first."""
    keep = retention(records, now, policy, weights)
    created = np.array([r.created_at for r in records])
    return [int(i) for i in np.lexsort((created, keep))]


def target_size(policy: UpkeepPolicy) -> int | None:
    if policy.max_per_namespace is None:
        return None
    return max(1, math.floor(policy.max_per_namespace * policy.prune_to_fraction))


@dataclass
class DuplicateGroups:
    """Near-duplicate clusters found by consolidation: survivor index -> absorbed indices."""

    groups: dict[int, list[int]] = field(default_factory=dict)


def duplicate_groups(
    records: list[MemoryRecord], embeddings: np.ndarray, threshold: float, block: int = 2048
) -> DuplicateGroups:
    """Greedy clustering of one outcome's records: records in best-first order (shortest
    workflow, then oldest) each absorb the not-yet-taken records of the same question
    (`question_key`) whose cosine is >= threshold. Blockwise so memory stays O(block * n)."""
    n = len(records)
    result = DuplicateGroups()
    if n < 2:
        return result
    emb = np.asarray(embeddings, dtype=np.float32)
    emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    keys = [question_key(r.question, r.caption) for r in records]
    order = sorted(range(n), key=lambda i: (len(records[i].workflow.split()), records[i].created_at))
    taken = np.zeros(n, dtype=bool)
    neighbours: dict[int, np.ndarray] = {}
    for start in range(0, n, block):
        sims = emb[start : start + block] @ emb.T
        for offset, row in enumerate(sims):
            hits = np.flatnonzero(row >= threshold)
            neighbours[start + offset] = hits[hits != start + offset]
    for i in order:
        if taken[i]:
            continue
        absorbed = [int(j) for j in neighbours[i] if not taken[j] and keys[j] == keys[i]]
        if absorbed:
            result.groups[i] = absorbed
            taken[absorbed] = True
        taken[i] = True
    return result
