"""The shipped evaluation sets, user files, sampling, and the builder script's reproducibility."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mia.app.evaluation.datasets import (
    DATASETS,
    HERE,
    DatasetError,
    load_examples,
    load_open_corpus_paragraphs,
    read_examples,
)

EXPECTED = {"hotpotqa": 1000, "2wiki": 500, "2wiki-open": 1000, "musique": 200}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shipped_sets_are_complete(name: str):
    examples, setting = load_examples(name)
    assert len(examples) == EXPECTED[name] and setting == DATASETS[name].setting
    assert all(ex.gold_answers and ex.question for ex in examples)
    if setting == "distractor":  # every gold paragraph is in the question's own sandbox
        for ex in examples:
            titles = {p.title for p in ex.paragraphs}
            assert ex.supporting_titles and set(ex.supporting_titles) <= titles, ex.id


def test_open_corpus_covers_every_gold_title():
    corpus = load_open_corpus_paragraphs()
    assert len(corpus) == 6119
    titles = {p["title"] for p in corpus}
    examples, _ = load_examples("2wiki-open")
    assert all(set(ex.supporting_titles) <= titles for ex in examples)
    assert all(ex.paragraphs == [] for ex in examples)  # searched in the corpus, not per question


def test_open_corpus_file_is_readable_by_the_search_tools():
    from mia.graph.tools.documents import read_documents

    from mia.app.evaluation.datasets import OPEN_CORPUS_FILE

    paragraphs = read_documents(OPEN_CORPUS_FILE)  # what Context(corpus=<path>) indexes
    assert len(paragraphs) == 6119 and paragraphs[0]["title"] == "Teutberga"


def test_sampling_is_seeded_and_prefix_stable():
    a, _ = load_examples("musique", 30, seed=1)
    b, _ = load_examples("musique", 60, seed=1)
    c, _ = load_examples("musique", 30, seed=2)
    assert [e.id for e in a] == [e.id for e in b[:30]]
    assert [e.id for e in a] != [e.id for e in c]


def test_user_file_errors_name_the_line(tmp_path: Path):
    good = {"id": 1, "question": "q?", "answer": "a"}
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({"id": 2, "question": "no answer"}) + "\n")
    with pytest.raises(DatasetError, match=r"mine.jsonl:2"):
        read_examples(path)
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(DatasetError, match="duplicate id"):
        read_examples(path)
    path.write_text(json.dumps(good) + "\n")
    (ex,), setting = load_examples(str(path))
    assert ex.id == "1" and ex.paragraphs == [] and setting == "distractor"
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_examples("hotpot")
    with pytest.raises(DatasetError, match="not found"):
        load_examples(str(tmp_path / "missing.jsonl"))


def test_builder_reproduces_the_committed_files(shared_data: Path, tmp_path: Path):
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [
            sys.executable,
            str(root / "scripts" / "build_eval_datasets.py"),
            "--src",
            str(shared_data),
            "--out",
            str(tmp_path),
            "--with-corpus",
        ],
        check=True,
        capture_output=True,
    )
    for name in [*(info.file for info in DATASETS.values()), "2wiki-open-corpus.jsonl.gz"]:
        assert (tmp_path / name).read_bytes() == (HERE / name).read_bytes(), name
    first = json.loads(gzip.open(tmp_path / "hotpotqa.jsonl.gz", "rt").readline())
    assert set(first) == {"id", "question", "answer", "answer_aliases", "type", "paragraphs", "supporting_titles"}
