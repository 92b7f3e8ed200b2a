"""A real Chroma server (`chroma run`) shared by several processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from mia.memory import MemoryRecord, MemoryStore, MemoryStoreError

from .conftest import free_port, make_trajectory

pytestmark = pytest.mark.server

WRITER = textwrap.dedent("""
    import sys
    from mia.memory import MemoryStore, Trajectory, TrajectoryStep
    host, port, log_dir, tag, shared = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5].split(",")
    st = MemoryStore.open_http(host, port, log_dir=log_dir)
    topics = {"alpha": ["volcano eruptions in Iceland", "the history of the printing press", "jazz musicians from New Orleans",
                        "the population of Canadian cities", "Nobel prizes in chemistry"],
              "beta": ["the rules of cricket", "coral reefs in Australia", "the first moon landing",
                       "medieval castles in Wales", "the invention of the telephone"]}[tag]
    for i, topic in enumerate(topics):
        traj = Trajectory(question=f"[{tag}] What is known about {topic}?", namespace="shared-ns", outcome="correct",
                          steps=[TrajectoryStep(kind="tool_call", tool="search", args={"query_list": [f"{tag} {topic}"]}),
                                 TrajectoryStep(kind="observation", content="evidence")], answer="x")
        st.memorise(traj)
    for i in range(25):
        st.update_stats(shared, success=(i % 5 == 0), namespace="shared-ns")
    print("done", flush=True)
""")


def test_two_processes_write_at_once_and_a_third_reads(chroma_server, tmp_path, embedder):
    host, port = chroma_server["host"], chroma_server["port"]
    log_dir = tmp_path / "shared-log"
    main = MemoryStore.open_http(host, port, log_dir=log_dir, embedder=embedder)
    seeds = [
        MemoryRecord(
            id=f"seed{i}", namespace="shared-ns", question=f"seed question {i}", workflow="1. w", outcome="correct"
        )
        for i in range(3)
    ]
    main.add_many(seeds)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, host, str(port), str(log_dir), tag, "seed0,seed1,seed2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("alpha", "beta")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0 and "done" in out, err[-2000:]
    assert main.count("shared-ns") == 3 + 10  # nothing lost: 5 memories from each writer
    for seed in ("seed0", "seed1", "seed2"):
        rec = main.get(seed)
        assert (rec.usage_count, rec.success_count) == (50, 10)  # 2 x 25 increments, none lost
    got = main.retrieve("What do we know about the first landing on the moon?", namespace="shared-ns", k_pos=1)
    assert got.positives[0].record.question == "[beta] What is known about the first moon landing?"
    assert len(list(main.trajectory_log.read("shared-ns"))) == 10  # both processes appended to one log
    hits = main.search_trajectories("alpha volcano eruptions Iceland", "shared-ns", k=1)
    assert hits[0].trajectory.question.startswith("[alpha] What is known about volcano")
    main.close()


def test_server_store_basic_roundtrip(chroma_server, tmp_path, embedder):
    st = MemoryStore.open_http(chroma_server["host"], chroma_server["port"], log_dir=tmp_path, embedder=embedder)
    rec = st.memorise(make_trajectory("Which river is longer, the Danube or the Rhine?", namespace="roundtrip"))
    assert st.retrieve("Is the Rhine longer than the Danube?", namespace="roundtrip").ids == [rec.id]
    assert st.update_stats([rec.id], success=True) == 1
    assert st.reset("roundtrip") == 1 and st.count("roundtrip") == 0
    st.close()


def test_unreachable_server_is_a_clear_error(tmp_path):
    from mia.memory.embeddings import PrecomputedEmbedder

    with pytest.raises(MemoryStoreError, match="cannot reach the Chroma server"):
        MemoryStore.open_http("localhost", free_port(), log_dir=tmp_path, embedder=PrecomputedEmbedder(2))
