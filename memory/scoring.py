"""MIA's retrieval score, as pure NumPy functions so that the store, the benchmark and the tests
all compute exactly the same thing.

score = w_sim * minmax(cosine) + w_win * win_rate, min-max over the candidate pool (both labels
together, as MIA does over its bucket); positives and negatives are then ranked separately.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScoringWeights:
    """Weights of the score and the Beta prior of the win rate.

    MIA: similarity 0.7, win rate 0.3, and every new record starts at win rate 1.0 (no prior).
    We keep the weights and use a Laplace prior Beta(1, 1): a new record has win rate 0.5, a
    memory that helped 3 of 3 episodes 0.8, one that helped 0 of 3 0.2 (see docs/memory.md).
    """

    similarity: float = 0.7
    win_rate: float = 0.3
    prior_success: float = 1.0
    prior_failure: float = 1.0


def win_rates(success: np.ndarray, usage: np.ndarray, weights: ScoringWeights) -> np.ndarray:
    """Posterior-mean win rates for arrays of counts."""
    success = np.asarray(success, dtype=np.float64)
    usage = np.asarray(usage, dtype=np.float64)
    return (success + weights.prior_success) / (usage + weights.prior_success + weights.prior_failure)


def minmax(values: np.ndarray) -> np.ndarray:
    """(x - min) / (max - min + 1e-8), as MIA; a single candidate gets 0."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values
    low, high = values.min(), values.max()
    return (values - low) / (high - low + 1e-8)


def cosine(query: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Exact cosine similarity of one query against the rows of a matrix (float64)."""
    query = np.asarray(query, dtype=np.float64).ravel()
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.size == 0:
        return np.zeros(0)
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    norms[norms == 0] = 1.0
    return matrix @ query / norms


def combined_scores(sims: np.ndarray, rates: np.ndarray, weights: ScoringWeights) -> tuple[np.ndarray, np.ndarray]:
    """Return (scores, normalised similarities)."""
    normalised = minmax(sims)
    return weights.similarity * normalised + weights.win_rate * np.asarray(rates, dtype=np.float64), normalised


def top_k_split(
    scores: np.ndarray, positive: np.ndarray, negative: np.ndarray, k_pos: int, k_neg: int
) -> tuple[list[int], list[int]]:
    """Indices of the k best positives and k best negatives; ties keep candidate order (stable)."""
    order = np.argsort(-scores, kind="stable")
    pos = [int(i) for i in order if positive[i]][: max(k_pos, 0)]
    neg = [int(i) for i in order if negative[i]][: max(k_neg, 0)]
    return pos, neg
