"""One conformance suite for every MemoryIndex: Chroma embedded, Chroma server (a real
`chroma run`), and the in-memory NumPy index. The same checks, and the same MemoryStore round
trip (memorise, dedup, retrieve, update_stats, trajectory search), run on each."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import numpy as np
import pytest

from mia.memory import MemoryStore, Retrieved, ScoredMemory
from mia.memory.chroma_index import ChromaIndex
from mia.memory.embeddings import PrecomputedEmbedder
from mia.memory.index import MemoryIndex
from mia.memory.numpy_index import NumpyIndex
from .conftest import make_trajectory

KINDS = ["numpy", "chroma-embedded", "chroma-server"]
DIM = 4


CONFORMANCE_DB = "mia-index-conformance"


def _chroma_client(kind: str, tmp_path, request):
    """An embedded client in the test's folder, or a client of the session's server on a
    database of its own: the index checks below use 4-d vectors, and a store opened on the
    server's default database refuses collections of another embedder."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if kind == "chroma-embedded":
        return chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=settings)
    server = request.getfixturevalue("chroma_server")
    admin = chromadb.AdminClient(
        Settings(
            anonymized_telemetry=False,
            chroma_api_impl="chromadb.api.fastapi.FastAPI",
            chroma_server_host=server["host"],
            chroma_server_http_port=server["port"],
        )
    )
    try:
        admin.get_database(CONFORMANCE_DB)
    except Exception:  # noqa: BLE001 - absent: the first test creates it
        admin.create_database(CONFORMANCE_DB)
    return chromadb.HttpClient(host=server["host"], port=server["port"], settings=settings, database=CONFORMANCE_DB)


@pytest.fixture(params=KINDS)
def open_index(request, tmp_path) -> Callable[[], MemoryIndex]:
    """Opens views of one index: a second call is another handle on the same storage (for
    Chroma, another client, as another process would hold)."""
    kind = request.param
    if kind == "numpy":
        shared = NumpyIndex()
        return lambda: shared
    embedder = PrecomputedEmbedder(DIM, "conformance")
    return lambda: ChromaIndex(_chroma_client(kind, tmp_path, request), embedder, kind)


@pytest.fixture()
def index(open_index) -> MemoryIndex:
    return open_index()


@pytest.fixture()
def ns() -> str:
    """A namespace of its own per test: the Chroma server is shared by the whole session."""
    return f"conf-{uuid.uuid4().hex[:8]}"


def vecs(*rows: list[float]) -> np.ndarray:
    return np.array(rows, dtype=np.float32)


def exact_cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_is_a_memory_index(index):
    assert isinstance(index, MemoryIndex)


def test_put_get_count(index, ns):
    v = vecs([1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0])
    index.put(ns, "pos", ["a", "b", "c"], v, ['{"n": 1}', '{"n": 2}', '{"n": 3}'])
    assert index.count(ns, "pos") == 3
    got = {e.id: e for e in index.get(ns, "pos", ["c", "a", "missing"], with_vectors=True)}
    assert set(got) == {"a", "c"}
    assert got["a"].record == '{"n": 1}' and got["c"].record == '{"n": 3}'
    np.testing.assert_allclose(got["c"].vector, [0, 0, 2, 0])  # the vector as given, not normalised
    everything = index.get(ns, "pos")
    assert sorted(e.id for e in everything) == ["a", "b", "c"] and all(e.vector is None for e in everything)
    ids_only = index.get(ns, "pos", ["b"], with_records=False)
    assert [(e.id, e.record) for e in ids_only] == [("b", "")]


def test_upsert_replaces_vector_and_record(index, ns):
    index.put(ns, "pos", ["a"], vecs([1, 0, 0, 0]), ["old"])
    index.put(ns, "pos", ["a"], vecs([0, 1, 0, 0]), ["new"])
    assert index.count(ns, "pos") == 1
    (entry,) = index.get(ns, "pos", ["a"], with_vectors=True)
    assert entry.record == "new"
    np.testing.assert_allclose(entry.vector, [0, 1, 0, 0])
    assert index.query(ns, "pos", np.array([0, 1, 0, 0]), 1)[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_query_is_nearest_first_with_exact_cosine(index, ns):
    rng = np.random.default_rng(7)
    v = rng.normal(size=(20, DIM)).astype(np.float32)
    ids = [f"m{i}" for i in range(20)]
    index.put(ns, "neg", ids, v, [f'{{"i": {i}}}' for i in range(20)])
    q = rng.normal(size=DIM).astype(np.float32)
    hits = index.query(ns, "neg", q, 5, with_vectors=True)
    expected = sorted(((exact_cosine(q, v[i]), ids[i]) for i in range(20)), reverse=True)[:5]
    assert [h.id for h in hits] == [rid for _, rid in expected]
    for hit, (cos, rid) in zip(hits, expected):
        assert hit.similarity == pytest.approx(cos, abs=1e-4)
        assert hit.record == f'{{"i": {ids.index(rid)}}}'
        np.testing.assert_allclose(hit.vector, v[ids.index(rid)], rtol=1e-6)
    assert len(index.query(ns, "neg", q, 100)) == 20  # n beyond the bucket: all of it
    assert all(h.vector is None for h in index.query(ns, "neg", q, 3))


def test_update_changes_records_only_of_existing_ids(index, ns):
    index.put(ns, "pos", ["a"], vecs([1, 0, 0, 0]), ["one"])
    index.update(ns, "pos", ["a", "ghost"], ["two", "boo"])
    assert [(e.id, e.record) for e in index.get(ns, "pos")] == [("a", "two")]
    np.testing.assert_allclose(index.get(ns, "pos", ["a"], with_vectors=True)[0].vector, [1, 0, 0, 0])
    index.update(ns, "neg", ["a"], ["x"])  # a bucket that does not exist: nothing happens
    assert index.count(ns, "neg") == 0


def test_delete(index, ns):
    index.put(ns, "pos", ["a", "b", "c"], vecs([1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]), ["1", "2", "3"])
    index.delete(ns, "pos", ["b", "missing"])
    assert index.count(ns, "pos") == 2
    assert sorted(e.id for e in index.get(ns, "pos")) == ["a", "c"]
    assert "b" not in [h.id for h in index.query(ns, "pos", np.array([0, 1, 0, 0]), 3)]
    index.delete(ns, "neg", ["a"])  # absent bucket: a no-op
    assert index.count(ns, "pos") == 2


def test_outcomes_are_separate_buckets(index, ns):
    index.put(ns, "pos", ["p"], vecs([1, 0, 0, 0]), ["pos"])
    index.put(ns, "neg", ["n"], vecs([1, 0, 0, 0]), ["neg"])
    index.put(ns, "traj", ["t"], vecs([1, 0, 0, 0]), ["traj"])
    assert [h.id for h in index.query(ns, "pos", np.array([1, 0, 0, 0]), 5)] == ["p"]
    assert [h.id for h in index.query(ns, "neg", np.array([1, 0, 0, 0]), 5)] == ["n"]
    assert index.get(ns, "pos", ["n"]) == [] and index.count(ns, "unk") == 0
    assert index.query(ns, "unk", np.array([1, 0, 0, 0]), 5) == []


def test_namespaces_are_isolated_and_dropped_alone(index, ns):
    other = ns + "-other"
    index.put(ns, "pos", ["a", "b"], vecs([1, 0, 0, 0], [0, 1, 0, 0]), ["1", "2"])
    index.put(ns, "traj", ["t"], vecs([1, 0, 0, 0]), ["t"])
    index.put(other, "pos", ["a"], vecs([0, 0, 1, 0]), ["other"])
    assert {ns, other} <= set(index.namespaces())
    assert index.get(other, "pos", ["a"])[0].record == "other"  # same id, another namespace
    assert index.count(ns, "pos") == 2 and index.count(other, "pos") == 1
    assert index.drop(ns) == 2  # memories only, not trajectory entries
    assert ns not in index.namespaces() and other in index.namespaces()
    assert index.count(ns, "pos") == 0 and index.count(ns, "traj") == 0 and index.get(ns, "pos") == []
    assert index.count(other, "pos") == 1
    assert index.drop(ns) == 0


def test_absent_namespace_reads_empty(index, ns):
    assert index.count(ns, "pos") == 0 and index.get(ns, "pos") == [] and index.get(ns, "pos", ["x"]) == []
    assert index.query(ns, "pos", np.ones(DIM), 3) == []
    assert ns not in index.namespaces()


def test_handles_survive_a_drop_through_another_handle(open_index, ns):
    first, second = open_index(), open_index()
    first.put(ns, "pos", ["a"], vecs([1, 0, 0, 0]), ["1"])
    assert second.count(ns, "pos") == 1
    second.drop(ns)
    assert first.count(ns, "pos") == 0 and first.query(ns, "pos", np.ones(DIM), 2) == []
    first.put(ns, "pos", ["b"], vecs([0, 1, 0, 0]), ["2"])  # the cached handle writes again
    assert [e.id for e in second.get(ns, "pos")] == ["b"]


def test_bad_vectors_are_refused(index, ns):
    with pytest.raises(ValueError, match="shape"):
        index.put(ns, "pos", ["a", "b"], vecs([1, 0, 0, 0]), ["1", "2"])


# ---------------------------------------------------------------- the store over each index
@pytest.fixture(params=KINDS)
def any_store(request, tmp_path, embedder):
    kind = request.param
    if kind == "numpy":
        st = MemoryStore.in_memory(embedder=embedder, log_dir=tmp_path / "log")
    elif kind == "chroma-embedded":
        st = MemoryStore.open(tmp_path / "memory", embedder=embedder)
    else:
        server = request.getfixturevalue("chroma_server")
        st = MemoryStore.open_http(server["host"], server["port"], log_dir=tmp_path / "log", embedder=embedder)
    yield st
    st.close()


def test_store_round_trip_on_each_index(any_store, ns):
    st = any_store
    first = st.memorise(make_trajectory("What is the capital of France?", namespace=ns, answer="Paris"))
    st.memorise(make_trajectory("Who wrote Hamlet?", "incorrect", namespace=ns, answer="Marlowe"))
    st.memorise(make_trajectory("How tall is Mount Everest?", namespace=ns, answer="8849 m"))
    # the same question again, same outcome: deduplicated into the first memory
    again = st.memorise(make_trajectory("What is the capital of France? ", namespace=ns, answer="Paris"))
    assert again.id == first.id and st.count(ns) == 3
    st.update_stats([first.id], success=False)
    got = st.retrieve("capital city of France?", namespace=ns, k_pos=1, k_neg=1)
    assert isinstance(got, Retrieved) and all(isinstance(m, ScoredMemory) for m in got.positives + got.negatives)
    assert [m.record.question for m in got.positives] == ["What is the capital of France?"]
    assert [m.record.outcome for m in got.negatives] == ["incorrect"]
    assert got.positives[0].similarity > 0.8 and got.positives[0].record.usage_count == 1
    assert st.update_stats(got.ids, success=True) == 2
    assert (st.get(first.id, ns).usage_count, st.get(first.id, ns).success_count) == (2, 1)
    (best,) = st.search_trajectories("Who was the author of Hamlet?", ns, k=1)
    assert best.trajectory.question == "Who wrote Hamlet?" and best.similarity > 0.5
    assert st.reset(ns) == 3 and st.count(ns) == 0 and ns not in st.namespaces()


def test_chroma_reads_trajectory_entries_written_before_the_index(tmp_path, embedder):
    """Trajectory-index rows of older stores kept their fields as plain metadata keys: a store
    opened now still finds those trajectories."""
    st = MemoryStore.open(tmp_path / "memory", embedder=embedder)
    traj = make_trajectory("Who painted the Mona Lisa?", answer="Leonardo")
    (offset,) = st.trajectory_log.append_many([traj])
    col = st.index.collections.handle("default", "traj", create=True)
    col.upsert(
        ids=[traj.id],
        embeddings=[embedder.embed_query(traj.question)],
        documents=[traj.question],
        metadatas=[{"offset": offset, "outcome": "correct", "created_at": traj.created_at}],
    )
    st.trajectories.mark_synced("default")  # the row above is the index, as an old store left it
    (found,) = st.search_trajectories("Mona Lisa painter", "default", k=1)
    assert found.trajectory.id == traj.id
    st.close()
