"""Caption-weighted retrieval (MIA: 0.8 question + 0.2 caption) against a hand computation, on a
real Chroma store on disk; text-only questions rank as before."""

from __future__ import annotations

import numpy as np
import pytest

from mia.memory import MemoryRecord, MemoryStore
from mia.memory.caption import decode_vector, encode_vector, mixed_similarity


class TableEmbedder:
    """Fixed 2-d vectors for the few texts of the test (caption vectors come from it)."""

    dim, name = 2, "table-2d"
    TABLE = {"a temple roof": [1.0, 0.0], "a red flower": [0.0, 1.0]}

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.array([self.TABLE[t] for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.array(self.TABLE[text], dtype=np.float32)


@pytest.fixture()
def store(tmp_path):
    st = MemoryStore.open(tmp_path / "m", embedder=TableEmbedder())
    rows = [("A", [1.0, 0.0], "a temple roof"), ("B", [0.8, 0.6], "a red flower"), ("C", [0.6, 0.8], "")]
    records = [
        MemoryRecord(id=rid, namespace="img", question=rid, caption=cap, workflow=f"1. {rid}", outcome="correct")
        for rid, _, cap in rows
    ]
    st.add_many(records, np.array([v for _, v, _ in rows], dtype=np.float32))
    yield st
    st.close()


def test_captioned_query_matches_hand_computation(store: MemoryStore) -> None:
    got = store.retrieve(
        "q",
        namespace="img",
        k_pos=3,
        k_neg=0,
        query_embedding=np.array([1.0, 0.0]),
        caption="a red flower",
        caption_weight=0.2,
    )
    # question cosines A 1, B .8, C .6; caption cosines (query [0, 1]) A 0, B 1, C 0 (no caption)
    # mixed: A .8, B .84, C .48 -> min-max (range .36): A .8889, B 1, C 0; win rates all 1/2
    mixed = {"A": 0.8, "B": 0.84, "C": 0.48}
    norm = {k: (v - 0.48) / (0.36 + 1e-8) for k, v in mixed.items()}
    expected = {k: 0.7 * norm[k] + 0.3 * 0.5 for k in mixed}
    assert [m.record.id for m in got.positives] == ["B", "A", "C"]  # the caption lifts B over A
    for m in got.positives:
        assert m.similarity == pytest.approx(mixed[m.record.id], abs=1e-3)
        assert m.score == pytest.approx(expected[m.record.id], abs=1e-3)


def test_text_only_query_ignores_captions(store: MemoryStore) -> None:
    got = store.retrieve("q", namespace="img", k_pos=3, k_neg=0, query_embedding=np.array([1.0, 0.0]))
    assert [m.record.id for m in got.positives] == ["A", "B", "C"]
    assert [round(m.similarity, 6) for m in got.positives] == [1.0, 0.8, 0.6]


def test_weights_are_configurable_and_checked(store: MemoryStore) -> None:
    only_caption = store.retrieve(
        "q",
        namespace="img",
        k_pos=3,
        k_neg=0,
        query_embedding=np.array([1.0, 0.0]),
        caption="a temple roof",
        caption_weight=1.0,
    )
    assert [m.record.id for m in only_caption.positives][0] == "A"
    assert [round(m.similarity, 3) for m in only_caption.positives] == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="between 0 and 1"):
        store.retrieve(
            "q", namespace="img", query_embedding=np.array([1.0, 0.0]), caption="a red flower", caption_weight=1.5
        )


def test_records_keep_their_caption_vector(store: MemoryStore) -> None:
    assert decode_vector(store.get("B", "img").caption_vector, 2) == pytest.approx([0.0, 1.0], abs=1e-3)
    assert store.get("C", "img").caption_vector == ""


def test_vector_codec_and_mixing() -> None:
    v = np.random.default_rng(0).normal(size=384)
    back = decode_vector(encode_vector(v), 384)
    assert float(back @ (v / np.linalg.norm(v))) == pytest.approx(1.0, abs=1e-3)
    assert decode_vector("not base64!", 384).tolist() == [0.0] * 384  # damaged: treated as no caption
    sims = mixed_similarity(np.array([0.5, 0.5]), np.array([1.0, 0.0]), [encode_vector(np.array([1.0, 0.0])), ""], 0.2)
    assert sims.tolist() == pytest.approx([0.8 * 0.5 + 0.2, 0.8 * 0.5])
    assert mixed_similarity(np.array([0.3]), None, [""], 0.2).tolist() == [0.3]
