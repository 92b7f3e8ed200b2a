"""Hybrid search over real HotpotQA paragraphs with the real MiniLM model."""

from __future__ import annotations

from mia.graph.tools import Corpus, corpus_from_paragraphs
from mia.graph.tools import embedder


def _corpus(questions: list[dict]) -> Corpus:
    return corpus_from_paragraphs(
        [{"title": p["title"], "text": p["text"]} for q in questions for p in q["paragraphs"]]
    )


def test_finds_gold_paragraphs_by_title(hotpot_questions):
    corpus = _corpus(hotpot_questions)
    assert len(corpus) == 80
    results = corpus.search([q["question"] for q in hotpot_questions], k=3)
    found = 0
    for question, hits in zip(hotpot_questions, results, strict=True):
        titles = [h.title for h in hits]
        gold = set(question["supporting_titles"])
        assert gold & set(titles), f"no gold title for {question['question']!r}: {titles}"
        found += len(gold & set(titles))
        assert [h.rank for h in hits] == [1, 2, 3]
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    assert found >= 11  # of 16 gold paragraphs; the hybrid found 13 when this was written


def test_both_retrievers_contribute(hotpot_questions):
    corpus = _corpus(hotpot_questions)
    # An exact rare name: BM25 must rank it (and the fused list keeps it first).
    hit = corpus.search(["Nandrolone"], k=1)[0][0]
    assert hit.title == "Nandrolone" and hit.bm25_rank == 1
    # A paraphrase with no shared content word still finds the paragraph through embeddings.
    hits = corpus.search(["athlete who failed doping tests for a steroid"], k=3)[0]
    assert any(h.title in ("C. J. Hunter", "Nandrolone") for h in hits)
    assert all(h.dense_rank is not None for h in hits)


def test_sandbox_is_memoised_and_shares_the_model(hotpot_questions):
    paragraphs = hotpot_questions[0]["paragraphs"]
    first = corpus_from_paragraphs(paragraphs)
    model = embedder.get_model()
    before = embedder.EMBED_COUNTER["texts"]
    again = corpus_from_paragraphs([dict(p) for p in paragraphs])
    assert again is first and first.index_source == "memory"
    assert embedder.EMBED_COUNTER["texts"] == before  # nothing re-embedded
    other = corpus_from_paragraphs(hotpot_questions[1]["paragraphs"])
    assert other is not first and embedder.get_model() is model
    assert embedder.EMBED_COUNTER["texts"] == before + len(hotpot_questions[1]["paragraphs"])


def test_sandbox_writes_nothing_to_disk(tmp_path, monkeypatch, hotpot_questions):
    monkeypatch.setenv("MIA_DATA_DIR", str(tmp_path))
    corpus_from_paragraphs(hotpot_questions[2]["paragraphs"][:5]).search(["anything"], k=2)
    assert list(tmp_path.iterdir()) == []


def test_k_larger_than_corpus_and_odd_queries():
    corpus = corpus_from_paragraphs(
        [{"title": "A", "text": "Alpha is the first letter."}, {"title": "B", "text": "Beta is the second letter."}]
    )
    hits = corpus.search(["second letter", "the of a", "???"], k=10)
    assert [len(h) for h in hits] == [2, 2, 2]  # stopword-only and symbol queries fall back to dense
    assert hits[0][0].title == "B"
    assert corpus.search([], k=3) == []
