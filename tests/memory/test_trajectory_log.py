"""Trajectory rendering and the crash-safe append-only JSONL log."""

from __future__ import annotations

import json
import logging
import multiprocessing

from mia.memory import Trajectory, TrajectoryStep
from mia.memory.trajectory_log import TrajectoryLog

from .conftest import make_trajectory


def test_trace_text_truncates_observations_and_keeps_structure():
    long_obs = " ".join(f"w{i}" for i in range(1000))
    traj = Trajectory(
        question="Who founded X?",
        caption="a red logo",
        plan="1. search X",
        steps=[
            TrajectoryStep(kind="thought", content="search it"),
            TrajectoryStep(kind="tool_call", tool="search", args={"query_list": ["X founder"]}),
            TrajectoryStep(kind="observation", content=long_obs),
            TrajectoryStep(kind="tool_call", tool="search", args={"query": "X history"}),
            TrajectoryStep(kind="observation", content="short"),
            TrajectoryStep(kind="replan", content="try the history page"),
            TrajectoryStep(kind="answer", content="Ann"),
        ],
        answer="Ann",
        outcome="incorrect",
        judge_feedback="gold is Bob",
    )
    text = traj.to_trace_text(max_words_per_observation=512)
    assert "w511" in text and "w512" not in text
    assert "[488 more words omitted]" in text
    assert text.index("Round 1") < text.index("X founder") < text.index("Round 2") < text.index("X history")
    assert "Image caption: a red logo" in text and "Revised plan: try the history page" in text
    assert "Judgement: incorrect (gold is Bob)" in text
    assert "Judgement" not in traj.to_trace_text(include_judgement=False)
    assert traj.search_queries() == ["X founder", "X history"]
    assert len(traj.to_trace_text(max_words_per_observation=10).split()) < 80


def test_log_roundtrip_and_torn_last_line(tmp_path, caplog):
    log = TrajectoryLog(tmp_path / "trajectories.jsonl")
    first, second = make_trajectory("q1"), make_trajectory("q2")
    offsets = log.append_many([first, second])
    assert [t.id for t in log.read()] == [first.id, second.id]
    assert log.read_at(offsets[1]).id == second.id
    # a crash in the middle of a write leaves half a line
    with log.path.open("ab") as handle:
        handle.write(make_trajectory("q3").to_json_line().encode()[:40])
    with caplog.at_level(logging.WARNING):
        assert [t.question for t in log.read()] == ["q1", "q2"]
    assert "torn last line" in caplog.text
    third = make_trajectory("q4")
    offset = log.append(third)  # starts on a fresh line: the torn bytes stay alone and skipped
    assert log.read_at(offset).id == third.id
    assert [t.question for t in log.read()] == ["q1", "q2", "q4"]
    lines = log.path.read_bytes().split(b"\n")
    assert json.loads(lines[-2])["question"] == "q4"


def _append_many(path: str, tag: str, n: int) -> None:
    log = TrajectoryLog(path)
    for i in range(n):
        log.append(make_trajectory(f"{tag}-{i}", observation="x " * 3000))  # lines of ~6 KB


def test_two_processes_appending_lose_nothing(tmp_path):
    path = str(tmp_path / "trajectories.jsonl")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(path, tag, 40)) for tag in ("a", "b")]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    questions = sorted(t.question for t in TrajectoryLog(path).read())
    assert questions == sorted([f"a-{i}" for i in range(40)] + [f"b-{i}" for i in range(40)])


def test_a_compressed_log_reads_as_it_is_and_expands_on_the_first_append(tmp_path):
    """A finished study keeps its log gzip-compressed: readers read it, a run that goes on from it appends."""
    import gzip

    plain = TrajectoryLog(tmp_path / "trajectories.jsonl")
    first, second = make_trajectory(question="Q1?"), make_trajectory(question="Q2?")
    offsets = plain.append_many([first, second])
    data = plain.path.read_bytes()
    plain.path.unlink()
    assert not plain.exists()
    plain.compressed.write_bytes(gzip.compress(data))
    log = TrajectoryLog(tmp_path / "trajectories.jsonl")
    assert log.exists() and [t.question for t in log.read()] == ["Q1?", "Q2?"]
    assert log.read_at(offsets[1], second.id).question == "Q2?"
    log.append(make_trajectory(question="Q3?"))
    assert not log.compressed.exists() and log.path.read_bytes().startswith(data)
    assert [t.question for t in log.read()] == ["Q1?", "Q2?", "Q3?"]
