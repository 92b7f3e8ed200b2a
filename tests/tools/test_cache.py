"""The on-disk index cache: reuse without re-embedding, corruption recovery, atomic writes."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from mia.graph.tools import Corpus, embedder, index_cache


def _folders(root):
    return sorted(p.name for p in (root / "index").iterdir())


def test_second_load_reuses_the_cache(tmp_path, demo_sample):
    first = Corpus.build(demo_sample, name="sample", data_dir=tmp_path)
    assert first.index_source == "built"
    assert first.index_path is not None and first.index_path.name.startswith("sample-")
    mtime = (first.index_path / "embeddings.npy").stat().st_mtime_ns
    before = embedder.EMBED_COUNTER["texts"]
    second = Corpus.build(demo_sample, name="sample", data_dir=tmp_path)
    assert second.index_source == "cache"
    assert embedder.EMBED_COUNTER["texts"] == before  # nothing was embedded again
    assert (first.index_path / "embeddings.npy").stat().st_mtime_ns == mtime
    np.testing.assert_array_equal(first.embeddings, second.embeddings)
    query = demo_sample[5]["title"]
    assert [h.id for h in first.search([query])[0]] == [h.id for h in second.search([query])[0]]
    # Different content gets its own folder (the hash names it).
    Corpus.build(demo_sample[:-1], name="sample", data_dir=tmp_path)
    assert len(_folders(tmp_path)) == 2


@pytest.mark.parametrize("damage", ["embeddings", "meta", "bm25", "shape"])
def test_corrupt_cache_is_rebuilt_with_a_warning(tmp_path, demo_sample, damage):
    built = Corpus.build(demo_sample, name="sample", data_dir=tmp_path)
    folder = built.index_path
    if damage == "embeddings":
        (folder / "embeddings.npy").write_bytes(b"not a numpy file")
    elif damage == "meta":
        (folder / "meta.json").write_text("{truncated", encoding="utf-8")
    elif damage == "bm25":
        for f in (folder / "bm25").iterdir():
            f.unlink()
    else:
        np.save(folder / "embeddings.npy", np.zeros((3, 384), dtype=np.float32))
    with pytest.warns(RuntimeWarning, match="corrupt"):
        again = Corpus.build(demo_sample, name="sample", data_dir=tmp_path)
    assert again.index_source == "built"
    assert again.search([demo_sample[0]["title"]], k=1)[0][0].id == demo_sample[0]["id"]
    assert Corpus.build(demo_sample, name="sample", data_dir=tmp_path).index_source == "cache"
    assert [n for n in _folders(tmp_path) if n.startswith(".")] == []


def test_a_leftover_temp_folder_is_ignored(tmp_path, demo_sample):
    (tmp_path / "index" / ".tmp-sample-0000-crashed").mkdir(parents=True)
    corpus = Corpus.build(demo_sample, name="sample", data_dir=tmp_path)
    assert corpus.index_source == "built"
    assert index_cache.find_named("sample", tmp_path) == corpus.index_path


def test_concurrent_builds_leave_one_complete_index(tmp_path, demo_sample):
    results, errors = [], []

    def build():
        try:
            results.append(Corpus.build(demo_sample, name="race", data_dir=tmp_path))
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _folders(tmp_path) == [results[0].index_path.name]  # no temp folders left behind
    meta = json.loads((results[0].index_path / "meta.json").read_text())
    assert meta["count"] == len(demo_sample)
    assert Corpus.build(demo_sample, name="race", data_dir=tmp_path).index_source == "cache"


def test_save_keeps_the_winner_when_the_target_exists(tmp_path, demo_sample):
    corpus = Corpus.build(demo_sample, name="sample", data_dir=tmp_path)
    target = corpus.index_path
    created = json.loads((target / "meta.json").read_text())["created"]
    index_cache.save(
        target, paragraphs=corpus.paragraphs, embeddings=corpus.embeddings, bm25=corpus.bm25, meta={"name": "sample"}
    )
    assert json.loads((target / "meta.json").read_text())["created"] == created
    assert _folders(tmp_path) == [target.name]
