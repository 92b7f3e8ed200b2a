"""Retrieval scoring against a ranking computed by hand, on a real Chroma store on disk."""

from __future__ import annotations

import numpy as np
import pytest

from mia.memory import MemoryRecord, MemoryStore, ScoringWeights
from mia.memory.embeddings import PrecomputedEmbedder
from mia.memory.scoring import minmax, win_rates

# name, outcome, vector, usage, success
ROWS = [
    ("P1", "correct", [1.0, 0.0], 0, 0),
    ("P2", "correct", [0.8, 0.6], 4, 4),
    ("P3", "correct", [0.0, 1.0], 2, 2),
    ("N1", "incorrect", [0.6, 0.8], 0, 0),
    ("N2", "incorrect", [-1.0, 0.0], 8, 8),
    ("N3", "incorrect", [0.96, 0.28], 3, 0),
    ("U1", "unknown", [1.0, 0.0], 0, 0),
]
QUERY = np.array([1.0, 0.0])


@pytest.fixture()
def hand_store(tmp_path):
    st = MemoryStore.open(tmp_path / "m", embedder=PrecomputedEmbedder(2, "hand-2d"))
    records = [
        MemoryRecord(
            id=name,
            namespace="hand",
            question=name,
            workflow=f"1. {name}",
            outcome=outcome,
            usage_count=usage,
            success_count=success,
        )
        for name, outcome, _, usage, success in ROWS
    ]
    st.add_many(records, np.array([row[2] for row in ROWS], dtype=np.float32))
    # a memory in another namespace that would win everything if namespaces leaked
    st.add(
        MemoryRecord(
            id="OTHER",
            namespace="elsewhere",
            question="o",
            workflow="1. o",
            outcome="correct",
            usage_count=9,
            success_count=9,
        ),
        np.array([1.0, 0.0]),
    )
    yield st
    st.close()


def test_ranking_matches_hand_computation(hand_store):
    # cosines: P1 1, P2 .8, P3 0, N1 .6, N2 -1, N3 .96 -> min-max over all six candidates (range 2)
    # normalised: P1 1, P2 .9, P3 .5, N1 .8, N2 0, N3 .98
    # Laplace win rates: P1 1/2, P2 5/6, P3 3/4, N1 1/2, N2 9/10, N3 1/5
    expected = {
        "P1": 0.7 * 1.0 + 0.3 * 0.5,
        "P2": 0.7 * 0.9 + 0.3 * 5 / 6,
        "P3": 0.7 * 0.5 + 0.3 * 0.75,
        "N1": 0.7 * 0.8 + 0.3 * 0.5,
        "N2": 0.7 * 0.0 + 0.3 * 0.9,
        "N3": 0.7 * 0.98 + 0.3 * 0.2,
    }
    got = hand_store.retrieve("ignored", namespace="hand", k_pos=2, k_neg=2, query_embedding=QUERY)
    assert [m.record.id for m in got.positives] == ["P2", "P1"]  # win rate lifts P2 above the closer P1
    assert [m.record.id for m in got.negatives] == ["N3", "N1"]
    for item in got.positives + got.negatives:
        assert item.score == pytest.approx(expected[item.record.id], abs=1e-6)
    assert sorted(got.candidate_ids) == ["N1", "N2", "N3", "P1", "P2", "P3"]  # never U1 nor OTHER
    assert got.ids == ["P2", "P1", "N3", "N1"]
    everything = hand_store.retrieve("q", namespace="hand", k_pos=5, k_neg=5, query_embedding=QUERY)
    assert [m.record.id for m in everything.positives] == ["P2", "P1", "P3"]
    assert [m.record.id for m in everything.negatives] == ["N3", "N1", "N2"]


def test_paper_prior_changes_the_ranking(hand_store):
    # MIA: every record starts at 1.0 (success/usage with 1/1 initial counts) = prior (1, 0)
    hand_store.weights = ScoringWeights(prior_success=1.0, prior_failure=0.0)
    got = hand_store.retrieve("q", namespace="hand", query_embedding=QUERY)
    scores = {m.record.id: m.score for m in got.positives + got.negatives}
    assert [m.record.id for m in got.negatives] == ["N1", "N3"]  # the never-used failure outranks
    assert scores["N1"] == pytest.approx(0.7 * 0.8 + 0.3 * 1.0, abs=1e-6)
    assert scores["P1"] == pytest.approx(1.0, abs=1e-6)


def test_update_stats_changes_win_rate_and_ranking(hand_store):
    before = hand_store.get("P1").last_used_at
    assert hand_store.update_stats(["P1", "P1", "N1", "missing"], success=True) == 2  # dupes once, unknown ids ignored
    for _ in range(3):
        hand_store.update_stats(["P2"], success=False)
    p1, p2, n1 = (hand_store.get(i) for i in ("P1", "P2", "N1"))
    assert (p1.usage_count, p1.success_count) == (1, 1) and p1.last_used_at >= before
    assert (n1.usage_count, n1.success_count) == (1, 1)
    assert (p2.usage_count, p2.success_count) == (7, 4)
    got = hand_store.retrieve("q", namespace="hand", query_embedding=QUERY)
    assert [m.record.id for m in got.positives] == ["P1", "P2"]  # 0.7+0.3*2/3 = .9 vs .63+.3*5/9 = .797
    assert got.positives[0].score == pytest.approx(0.7 + 0.3 * 2 / 3, abs=1e-6)


def test_candidate_pool_and_single_candidate(hand_store):
    got = hand_store.retrieve("q", namespace="hand", query_embedding=QUERY, n_candidates=2)
    assert len(got.candidate_ids) == 4  # the ANN top-2 of each outcome
    assert hand_store.retrieve("q", namespace="nobody", query_embedding=QUERY).ids == []
    assert minmax(np.array([0.3])).tolist() == [0.0]  # MIA: one record -> similarity 0
    assert win_rates(np.array([0]), np.array([0]), ScoringWeights()).tolist() == [0.5]
