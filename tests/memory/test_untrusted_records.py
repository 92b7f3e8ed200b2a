"""Text no record can be written with (lone surrogates, NUL) is cleaned where trajectories are made,
so a trajectory that comes through the library, not the graph's boundary, is never lost; and a memory
rebuilt from its log alone is whole (its raw-trajectory index too)."""

from __future__ import annotations

import json
import shutil

from mia.memory import MemoryStore, Trajectory, TrajectoryStep

from .conftest import make_trajectory


def test_a_lone_surrogate_through_the_library_is_stored_and_logged(store) -> None:
    traj = Trajectory(
        question="Who wrote it?\x00",
        answer="bad \ud800 text",
        outcome="correct",
        steps=[
            TrajectoryStep(kind="observation", content="half a pair \udc00 and a NUL \x00"),
            {"kind": "answer", "content": "bad \ud800 text", "args": {"\ud83d": "\x07x"}},
        ],
    )
    record = store.memorise(traj)
    assert record.question == "Who wrote it?" and store.get(record.id) is not None
    (line,) = store.trajectory_log.path.read_text(encoding="utf-8").splitlines()
    logged = json.loads(line)
    assert logged["answer"] == "bad \ufffd text" and logged["question"] == "Who wrote it?"
    assert logged["steps"][0]["content"] == "half a pair \ufffd and a NUL "
    assert logged["steps"][1]["args"] == {"\ufffd": "x"}


def test_text_set_after_construction_still_makes_a_log_line() -> None:
    traj = Trajectory(question="q?")
    traj.answer = "set later \ud800"  # no validation on assignment: to_json_line cleans it
    assert json.loads(traj.to_json_line())["answer"] == "set later \ufffd"
    pair = Trajectory(question="\ud83d\ude00?")  # a valid surrogate pair is joined, not replaced
    assert pair.question == "\U0001f600?"


def test_a_memory_rebuilt_from_its_log_alone_searches_trajectories_read_only(tmp_path, embedder) -> None:
    with MemoryStore.open(tmp_path / "whole", embedder=embedder) as st:
        st.memorise(make_trajectory("Which river is longer, the Danube or the Rhine?"))
        st.memorise(make_trajectory("Who directed the film Adam and Eve?", outcome="incorrect"))
        log = st.trajectory_log.path
    (tmp_path / "log-only").mkdir()
    shutil.copy(log, tmp_path / "log-only" / log.name)
    with MemoryStore.open(tmp_path / "log-only", embedder=embedder) as st:
        assert st.rebuild_from_log(progress=False) == 2 and st.count() == 2
    with MemoryStore.open(tmp_path / "log-only", embedder=embedder, snapshot=True) as st:  # read-only: no sync
        (hit,) = st.search_trajectories("Which director made Adam and Eve?", k=1)
        assert "Adam and Eve" in hit.trajectory.question


def test_the_fast_check_never_passes_text_the_cleaning_would_change() -> None:
    """Trajectories skip the per-string walk when orjson finds nothing to clean: over every character
    up to U+07FF and the surrogates, a character the cleaning changes is always caught."""
    from mia.memory.text import clean_value, needs_cleaning

    for code in [*range(0x800), *range(0xD7F0, 0xE010)]:
        data = {"question": f"a{chr(code)}b", "steps": [{"args": {chr(code): "x"}}]}
        if clean_value(data) != data:
            assert needs_cleaning(data), hex(code)
    assert not needs_cleaning({"question": "Who wrote Hamlet?\tTab\nnewline \U0001f600", "steps": []})


def test_a_memory_record_drops_nul_and_keeps_refusing_a_lone_surrogate(store) -> None:
    """Chroma kept a NUL in a record, and a NUL that reaches a C backend in a prompt ends the string
    there: records drop control characters as they are made (issue 42.6); a lone surrogate is still
    a clear error naming the field (an import reports that line and lands the others)."""
    import pytest

    from mia.memory import MemoryRecord

    record = store.add(MemoryRecord(question="Who\x00 wrote\x07 it?", workflow="1. Search\x00 the author", plan="\x1b"))
    (stored,) = store.list()
    assert (stored.question, stored.workflow, stored.plan) == ("Who wrote it?", "1. Search the author", "")
    assert record.question == "Who wrote it?"
    with pytest.raises(ValueError, match="question is not valid Unicode text"):
        MemoryRecord(question="bad \ud800", workflow="1. w")
    with pytest.raises(ValueError, match="no spaces or control characters"):  # an id is never rewritten
        MemoryRecord(id="a\x00b", question="q", workflow="1. w")
    with pytest.raises(ValueError, match="namespace"):  # nor a namespace: "a\x1f" must not land in "a"
        store.add(MemoryRecord(namespace="a\x1f", question="q", workflow="1. w"))


def test_a_namespace_with_a_control_character_is_refused_not_cleaned_into_another(store) -> None:
    """Cleaning a trajectory's text must not rewrite its namespace: "a\\x1f" cleaned to "a" stored
    the episode in another tenant's namespace."""
    import pytest

    from mia.memory import InvalidNamespaceError

    traj = Trajectory(question="Who wrote it?\x00", namespace="a\x1f", answer="x")
    assert traj.namespace == "a\x1f" and traj.question == "Who wrote it?"
    with pytest.raises(InvalidNamespaceError):
        store.memorise(traj)
    assert store.count("a") == 0
