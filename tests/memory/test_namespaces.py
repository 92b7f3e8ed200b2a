"""Namespaces (issue 16 fault 3): one validator everywhere, and handles that survive another
process resetting the namespace through a Chroma server."""

from __future__ import annotations

import pytest

from mia.memory import MemoryRecord, MemoryStore
from mia.memory.errors import InvalidNamespaceError
from mia.memory.namespaces import check_namespace, namespace_folder, resolve_namespace

from .conftest import make_trajectory, run_python

BAD = ["", " ", "a b", "../etc", ".hidden", "-x", "x" * 65, "ns\n", "caf\u00e9", "\ud800", "a/b", "a\\b"]


@pytest.mark.parametrize("bad", BAD)
def test_invalid_namespaces_are_one_clear_error(bad):
    with pytest.raises(InvalidNamespaceError) as info:
        check_namespace(bad)
    assert "\n" not in str(info.value) and "namespace" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_every_valid_namespace_names_one_folder(tmp_path):
    """The learner's queue and adapter history use the same rule as the store: `users:alice` (valid
    for the store) once failed `mia ask --learn` with "cannot name a folder"."""
    names = ["default", "users:alice", "users.alice", "alice@example.com", "a+b", "x" * 64]
    folders = [namespace_folder(n) for n in names]
    assert folders[:2] == ["default", "users%3Aalice"] and len(set(folders)) == len(names)  # '%' is no name's
    for folder in folders:
        assert "/" not in folder and folder not in (".", "..")
        (tmp_path / folder).mkdir(exist_ok=True)
    for bad in [*BAD, "users%3Aalice"]:
        with pytest.raises(InvalidNamespaceError):
            namespace_folder(bad)


def test_valid_namespaces_and_the_default(monkeypatch):
    for good in ("default", "team-a", "eval-mia-1a2b3c4d", "alice@example.com", "project:x", "a", "x" * 64):
        assert check_namespace(good) == good
    monkeypatch.delenv("MIA_MEMORY_NAMESPACE", raising=False)
    assert resolve_namespace(None) == "default"
    with pytest.raises(InvalidNamespaceError):
        resolve_namespace("")  # no silent fallback to "default"
    monkeypatch.setenv("MIA_MEMORY_NAMESPACE", "bad name")
    with pytest.raises(InvalidNamespaceError):
        resolve_namespace(None)


def test_empty_namespace_neither_reads_default_nor_writes(store):
    """It used to read 'default' and write '': a silent cross-namespace read."""
    store.memorise(make_trajectory("Who wrote the novel Dracula?"))
    calls = [
        lambda: store.retrieve("Who wrote Dracula?", namespace=""),
        lambda: store.search_trajectories("Who wrote Dracula?", namespace=""),
        lambda: store.memorise(make_trajectory("Who painted the Mona Lisa?", namespace="")),
        lambda: store.log_trajectory(make_trajectory("Who painted the Mona Lisa?", namespace="")),
        lambda: store.add_many([MemoryRecord(namespace="", question="q", workflow="1. w")]),
        lambda: store.list(""),
        lambda: store.count(""),
        lambda: store.stats(""),
        lambda: store.reset(""),
        lambda: store.prune("", max_size=1),
        lambda: store.consolidate(""),
        lambda: store.update_stats(["x"], True, ""),
    ]
    for call in calls:
        with pytest.raises(InvalidNamespaceError):
            call()
    assert store.namespaces() == ["default"] and store.trajectory_log.count() == 1


RESETTER = """
import sys
from mia.memory import MemoryStore
st = MemoryStore.open_http(sys.argv[1], int(sys.argv[2]), log_dir=sys.argv[3])
print(st.reset(sys.argv[4]))
st.close()
"""


@pytest.mark.server
def test_a_reset_by_another_process_does_not_break_this_one(chroma_server, tmp_path, embedder):
    host, port = chroma_server["host"], chroma_server["port"]
    st = MemoryStore.open_http(host, port, log_dir=tmp_path, embedder=embedder)
    first = st.memorise(make_trajectory("Which river is longer, the Danube or the Rhine?", namespace="reset-ns"))
    assert st.retrieve("Is the Rhine longer than the Danube?", namespace="reset-ns").ids == [first.id]
    assert st.search_trajectories("Danube Rhine", "reset-ns", k=1)
    done = run_python(RESETTER, host, str(port), str(tmp_path), "reset-ns")
    assert done.returncode == 0 and done.stdout.strip() == "1", done.stderr[-2000:]
    # this process still holds handles to the deleted collections: reads see an empty namespace...
    assert st.retrieve("Is the Rhine longer than the Danube?", namespace="reset-ns").ids == []
    assert st.count("reset-ns") == 0 and st.list("reset-ns") == [] and st.get(first.id) is None
    assert st.update_stats([first.id], success=True) == 0
    # ...and writes re-create them
    second = st.memorise(make_trajectory("Who wrote the novel Dracula?", namespace="reset-ns"))
    assert st.retrieve("Dracula author", namespace="reset-ns").ids == [second.id]
    assert st.update_stats([second.id], success=True) == 1 and st.get(second.id).usage_count == 1
    assert st.search_trajectories("Dracula", "reset-ns", k=1)[0].trajectory.question == "Who wrote the novel Dracula?"
    st.close()


def test_a_reset_by_another_store_in_this_process(tmp_path, embedder):
    """Two stores on one folder in one process share the lock; one resets, the other goes on."""
    a = MemoryStore.open(tmp_path / "m", embedder=embedder)
    b = MemoryStore.open(tmp_path / "m", embedder=embedder)
    rec = a.memorise(make_trajectory("Who painted the Mona Lisa?"))
    assert b.count() == 1 and b.get(rec.id) is not None
    assert a.reset("default") == 1
    assert b.count() == 0 and b.retrieve("Mona Lisa painter").ids == []
    new = b.memorise(make_trajectory("Who wrote the novel Dracula?"))
    assert a.count() == 1 and a.get(new.id) is not None
    a.close()
    b.close()
