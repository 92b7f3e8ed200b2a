"""The committed demo corpus: integrity, licenses, reproducibility, and its loader (on a subset)."""

from __future__ import annotations

import gzip
import importlib.util
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mia.graph.tools import loading
from mia.graph.tools.loading import DEMO_PATH, load_demo_corpus
from mia.graph.tools.paragraphs import read_jsonl_gz

ROOT = Path(__file__).resolve().parents[2]
LICENSES = {"hotpotqa": "CC-BY-SA-4.0", "2wikimultihopqa": "Apache-2.0", "musique": "CC-BY-4.0"}


def test_committed_file_is_complete_and_licensed():
    assert DEMO_PATH.stat().st_size < 25_000_000
    paragraphs = read_jsonl_gz(DEMO_PATH)
    assert len(paragraphs) > 20_000
    assert len({(p["title"], p["text"]) for p in paragraphs}) == len(paragraphs)
    assert len({p["id"] for p in paragraphs}) == len(paragraphs)
    counts = Counter(p["source"] for p in paragraphs)
    assert set(counts) == set(LICENSES) and min(counts.values()) > 1000
    assert all(p["license"] == LICENSES[p["source"]] and p["text"].strip() for p in paragraphs)
    notes = (DEMO_PATH.parent / "SOURCES.md").read_text(encoding="utf-8")
    for needle in (
        "CC BY-SA 4.0",
        "Apache-2.0",
        "CC BY 4.0",
        "megagonlabs/RPT",
        "OSU-NLP-Group/HippoRAG",
        "AdelWang/MIGRES",
        f"{len(paragraphs):,}",
    ):
        assert needle in notes


def test_the_build_script_reproduces_the_committed_bytes(shared_data, tmp_path):
    spec = importlib.util.spec_from_file_location("build_demo_corpus", ROOT / "scripts" / "build_demo_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    paragraphs, counts = module.build(shared_data)
    module.write(paragraphs, tmp_path / "demo.jsonl.gz")
    assert (tmp_path / "demo.jsonl.gz").read_bytes() == DEMO_PATH.read_bytes()
    assert counts["duplicates_skipped"] > 0


def test_the_gold_paragraphs_of_shared_questions_are_in_the_corpus(shared_data):
    keys = {(p["title"], p["text"]) for p in read_jsonl_gz(DEMO_PATH)}
    with (shared_data / "musique" / "musique_ans_dev.jsonl").open(encoding="utf-8") as fh:
        record = json.loads(fh.readline())
    gold = [p for p in record["paragraphs"] if p["is_supporting"]]
    assert gold and all((p["title"].strip(), p["text"].strip()) in keys for p in gold)


def use_demo_subset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paragraphs: list[dict]) -> None:
    """The loader reads these paragraphs as the demo corpus, in a fresh process's state."""
    subset = tmp_path / "demo_subset.jsonl.gz"
    with gzip.open(subset, "wt", encoding="utf-8") as fh:
        for para in paragraphs:
            fh.write(json.dumps(para) + "\n")
    monkeypatch.setattr(loading, "DEMO_PATH", subset)
    monkeypatch.setattr(loading, "_loaded", {})


def test_loader_indexes_once_then_reloads(tmp_path, monkeypatch, demo_sample):
    use_demo_subset(tmp_path, monkeypatch, demo_sample)
    data = tmp_path / "data"
    first = load_demo_corpus(data)
    assert first.index_source == "built" and len(first) == len(demo_sample)
    assert load_demo_corpus(data) is first  # kept in the process
    monkeypatch.setattr(loading, "_loaded", {})  # a new process
    second = loading.load_corpus("demo", data_dir=data)
    assert second.index_source == "cache" and second.index_path == first.index_path
    assert second.index_path.name.startswith("demo-")
    hit = second.search([demo_sample[3]["text"][:80]], k=1)[0][0]
    assert hit.id == demo_sample[3]["id"] and hit.source == demo_sample[3]["source"]


def test_missing_demo_file_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(loading, "DEMO_PATH", tmp_path / "gone.jsonl.gz")
    monkeypatch.setattr(loading, "_loaded", {})
    with pytest.raises(FileNotFoundError, match="demo corpus is missing"):
        load_demo_corpus(tmp_path)


def test_shipped_embeddings_skip_embedding_only_when_they_match(tmp_path, monkeypatch, demo_sample):
    from mia.graph.tools import embedder

    subset = tmp_path / "demo_corpus.jsonl.gz"
    with gzip.open(subset, "wt", encoding="utf-8") as fh:
        for para in demo_sample:
            fh.write(json.dumps(para) + "\n")
    monkeypatch.setattr(loading, "DEMO_PATH", subset)
    monkeypatch.setattr(loading, "DEMO_EMBEDDINGS", tmp_path / "demo_embeddings.npy")
    spec = importlib.util.spec_from_file_location("build_demo_corpus", ROOT / "scripts" / "build_demo_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write_embeddings(subset)  # what the script's --embeddings-only does

    monkeypatch.setattr(loading, "_loaded", {})
    before = embedder.EMBED_COUNTER["texts"]
    corpus = load_demo_corpus(tmp_path / "data")
    assert corpus.index_source == "built" and embedder.EMBED_COUNTER["texts"] == before
    assert corpus.search([demo_sample[2]["text"][:60]], k=1)[0][0].id == demo_sample[2]["id"]

    # A sidecar that names another file is ignored (and the corpus is embedded as usual).
    (tmp_path / "demo_embeddings.json").write_text('{"corpus_sha256": "other", "model": "x"}', encoding="utf-8")
    monkeypatch.setattr(loading, "_loaded", {})
    before = embedder.EMBED_COUNTER["texts"]
    again = load_demo_corpus(tmp_path / "data2")
    assert embedder.EMBED_COUNTER["texts"] == before + len(demo_sample)
    np.testing.assert_allclose(again.embeddings, corpus.embeddings, atol=2e-3)  # float16 on disk


def test_an_open_corpus_shows_no_passage_for_a_query_it_cannot_answer(tmp_path, monkeypatch, demo_sample):
    """Issue 38: a query the corpus cannot answer got the top-k of unrelated paragraphs, and the
    executor answered from them; an open corpus now shows only hits above the relevance floor
    (bench/tools/relevance-floor.md), while a question's own sandbox paragraphs keep every hit."""
    from mia.graph.tools import SearchTool, corpus_from_paragraphs
    from mia.graph.tools.corpus import OPEN_CORPUS_MIN_RELEVANCE

    use_demo_subset(tmp_path, monkeypatch, demo_sample)
    corpus = load_demo_corpus(tmp_path / "data")
    assert corpus.min_relevance == OPEN_CORPUS_MIN_RELEVANCE
    unrelated = "What is the boiling point of liquid nitrogen in kelvin?"
    assert corpus.search([unrelated], k=3) == [[]]
    assert SearchTool(corpus, top_k=3).invoke({"query_list": [unrelated]}).endswith("No relevant passage found.")
    own = demo_sample[3]
    assert corpus.search([own["text"][:80]], k=3)[0][0].id == own["id"]  # a query it can answer still finds it
    assert len(corpus_from_paragraphs(demo_sample).search([unrelated], k=3)[0]) == 3  # a sandbox keeps every hit
