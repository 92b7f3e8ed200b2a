"""A superseded study keeps results.jsonl.gz (results/ keeps text, compressed): reports read it as it
is, and a write (a resumed run, a re-grade) expands it back to the plain log first."""

from __future__ import annotations

import gzip

import pytest

from mia.app.evaluation import runlog
from mia.app.evaluation.records import QuestionResult
from mia.app.evaluation.regrade import regrade_run


def compressed_run(tmp_path):
    for i, answer in enumerate(["Shakespeare", "Marlowe"]):
        runlog.append_result(
            tmp_path,
            QuestionResult(id=f"q{i}", question="Who wrote Hamlet?", gold_answers=["Shakespeare"], answer=answer),
        )
    plain = tmp_path / runlog.RESULTS
    data = plain.read_bytes()
    (tmp_path / (runlog.RESULTS + ".gz")).write_bytes(gzip.compress(data))
    plain.unlink()
    return data


def test_a_compressed_log_reads_as_it_is_and_a_write_expands_it(tmp_path) -> None:
    data = compressed_run(tmp_path)
    assert [r.answer for r in runlog.read_results(tmp_path)] == ["Shakespeare", "Marlowe"]
    assert not (tmp_path / runlog.RESULTS).exists()  # reading changes nothing
    runlog.append_result(tmp_path, QuestionResult(id="q2", question="Q?", gold_answers=["a"], answer="a"))
    assert not (tmp_path / (runlog.RESULTS + ".gz")).exists()
    assert (tmp_path / runlog.RESULTS).read_bytes().startswith(data)
    assert len(runlog.read_results(tmp_path)) == 3


def test_a_compressed_study_is_regraded_into_its_plain_log(tmp_path) -> None:
    compressed_run(tmp_path)
    report = regrade_run(tmp_path)
    assert report.records == 2 and report.correct_after == 1 and (tmp_path / runlog.RESULTS).is_file()


def test_a_corrupt_compressed_log_is_a_clear_error(tmp_path) -> None:
    (tmp_path / (runlog.RESULTS + ".gz")).write_bytes(gzip.compress(b'{"id": 1}\n'))
    with pytest.raises(runlog.RunDirError, match="corrupt result line"):
        runlog.read_results(tmp_path)
