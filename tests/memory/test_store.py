"""The embedded store on disk with the real MiniLM embedder: memorise, retrieve, dedup, upkeep,
export/import, trajectory search, persistence across processes, locks, corruption, crashes."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from mia.memory import MemoryRecord, MemoryStore, SchemaMismatchError, UpkeepPolicy
from mia.memory.embeddings import PrecomputedEmbedder

from .conftest import make_trajectory, run_python

QUESTIONS = {
    "mag": "Which magazine was started first, Arthur's Magazine or First for Women?",
    "film": "Who directed the 1994 film that starred the actor who played Forrest Gump?",
    "river": "Which river is longer, the Danube or the Rhine?",
    "band": "Were the members of the band Coldplay born in the same country?",
}


def test_memorise_retrieve_and_stats(store):
    recs = {}
    for key, q in QUESTIONS.items():
        recs[key] = store.memorise(
            make_trajectory(q, outcome="incorrect" if key == "river" else "correct", queries=(f"{key} search",))
        )
    assert store.count("default") == 4
    got = store.retrieve("Which magazine came out first: Arthur's Magazine or First for Women?")
    assert got.positives[0].record.id == recs["mag"].id
    assert [m.record.id for m in got.negatives] == [recs["river"].id]
    rec = got.positives[0].record
    assert rec.compression == "extractive" and rec.trajectory_id and rec.source == "test-run" and rec.dataset == "unit"
    assert rec.trace_tokens > rec.workflow_tokens > 0
    assert "Retrieved Relevant Memories" in got.to_prompt_text() and rec.workflow in got.to_prompt_text()
    stats = store.stats("default")["default"]
    assert (stats["memories"], stats["correct"], stats["incorrect"]) == (4, 3, 1)
    assert stats["compression_ratio"] > 1
    assert len(list(store.trajectory_log.read())) == 4  # memorise logs the raw trajectory


def test_a_similarity_floor_hides_unrelated_memories_and_keeps_related_ones(store):
    """MIA's min-max shows the best candidates however unrelated (HotpotQA: median cosine 0.24,
    bench/memory/relatedness.md); `min_similarity` keeps only memories about as close as asked."""
    recs = {
        key: store.memorise(make_trajectory(q, outcome="incorrect" if key == "river" else "correct"))
        for key, q in QUESTIONS.items()
    }
    question = "Which magazine came out first: Arthur's Magazine or First for Women?"
    everything = store.retrieve(question)
    assert len(everything.positives) == 2 and len(everything.negatives) == 1  # the river shown too
    sims = {m.record.id: m.similarity for m in [*everything.positives, *everything.negatives]}
    assert sims[recs["mag"].id] > 0.8 > max(v for k, v in sims.items() if k != recs["mag"].id)
    floored = store.retrieve(question, min_similarity=0.6)
    assert [m.record.id for m in floored.positives] == [recs["mag"].id] and not floored.negatives
    assert not store.retrieve("What is the boiling point of mercury?", min_similarity=0.6).ids
    assert [t.trajectory.question for t in store.search_trajectories(question, k=4, min_similarity=0.6)] == [
        QUESTIONS["mag"]
    ]
    assert len(store.search_trajectories(question, k=4)) == 4


def test_near_duplicates(store):
    q = QUESTIONS["mag"]
    bad = store.memorise(make_trajectory(q, outcome="incorrect"))
    store.update_stats([bad.id], success=False)
    good = store.memorise(make_trajectory(q + " ", outcome="correct", answer="Arthur's Magazine"))
    assert good.id != bad.id and store.count() == 2  # a success and a failure of one question: both lessons kept
    got = store.retrieve(q)
    assert [m.record.id for m in got.positives] == [good.id] and [m.record.id for m in got.negatives] == [bad.id]
    worse = store.memorise(make_trajectory(q + "!", outcome="incorrect", queries=("x", "y", "z", "w")))
    assert worse.id == bad.id and store.count() == 2  # a longer failure does not displace the stored one
    store.update_stats([good.id], success=True)
    longer = make_trajectory(q, outcome="correct", queries=("a", "b", "c", "d"))
    kept = store.memorise(longer)
    assert kept.id == good.id and kept.trajectory_id == good.trajectory_id  # longer workflow does not replace
    shorter = make_trajectory(q.replace("?", ""), outcome="correct", queries=())
    replaced = store.memorise(shorter)
    assert replaced.id == good.id and replaced.trajectory_id == shorter.id
    assert (replaced.usage_count, replaced.success_count) == (1, 1)  # same outcome: the counts carry over
    assert store.get(bad.id).usage_count == 1  # the negative kept its own track record
    other = store.memorise(make_trajectory(QUESTIONS["river"]))
    assert other.id not in {good.id, bad.id} and store.count() == 3
    assert len(list(store.trajectory_log.read())) == 6  # every raw trajectory is kept


def test_size_bound_and_eviction(tmp_path):
    st = MemoryStore.open(
        tmp_path / "m", embedder=PrecomputedEmbedder(4, "rand4"), policy=UpkeepPolicy(max_per_namespace=10)
    )
    now = time.time()
    rng = np.random.default_rng(0)
    records = []
    for i in range(10):
        rec = MemoryRecord(
            id=f"r{i}",
            question=f"q{i}",
            workflow="1. x",
            outcome="correct",
            created_at=now - 90 * 86400,
            last_used_at=now - 60 * 86400,
            usage_count=4,
            success_count=3,
        )
        records.append(rec)
    records[0].success_count = 0  # a loser, long unused: evicted first
    records[1].last_used_at = now  # recently used: kept
    st.add_many(records, rng.standard_normal((10, 4)))
    assert st.count() == 10
    st.add(MemoryRecord(id="new", question="fresh", workflow="1. y", outcome="incorrect"), rng.standard_normal(4))
    ids = {r.id for r in st.list()}
    assert len(ids) == 9 and "new" in ids and "r1" in ids and "r0" not in ids  # pruned to 90% of the bound
    before = st.count()
    would = st.prune(max_size=3, dry_run=True)  # what it would evict, nothing evicted
    assert len(would) == before - 3 and st.count() == before
    assert st.prune(max_size=3) == would and st.count() == 3
    st.close()


def test_consolidate_merges_duplicates_and_reindexes(store, embedder):
    q = QUESTIONS["film"]
    a = MemoryRecord(question=q, workflow="1. a b c", outcome="correct", usage_count=2, success_count=1)
    b = MemoryRecord(question=q + "!", workflow="1. a b", outcome="correct", usage_count=3, success_count=3)
    c = MemoryRecord(question=q, workflow="1. z", outcome="incorrect", usage_count=1)
    c2 = MemoryRecord(question=q + "?", workflow="1. z y x", outcome="incorrect", usage_count=2)
    d = MemoryRecord(question=QUESTIONS["band"], workflow="1. d", outcome="correct")
    store.add_many([a, b, c, c2, d])  # add_many does no dedup: consolidation cleans up
    store.trajectory_log.append(make_trajectory("logged but never indexed"))
    report = store.consolidate("default")["default"]
    assert report == {"merged": 2, "evicted": 0, "kept": 3, "reindexed": 1}
    survivor = store.get(b.id)
    assert survivor is not None and (survivor.usage_count, survivor.success_count) == (5, 4)
    negative = store.get(c.id)  # one positive and one negative per question survive
    assert negative is not None and negative.usage_count == 3
    assert store.get(a.id) is None and store.get(c2.id) is None
    assert (
        store.search_trajectories("logged but never indexed", k=1)[0].trajectory.question == "logged but never indexed"
    )


def test_export_import_roundtrip(store, tmp_path):
    for q in QUESTIONS.values():
        store.memorise(make_trajectory(q, namespace="team-a"))
    store.update_stats([store.list("team-a")[0].id], success=True)
    path = tmp_path / "export.jsonl"
    assert store.export_jsonl(path, "team-a") == 4
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["mia_memory_export"] == 1 and len(lines) == 5
    with path.open("a") as handle:
        handle.write('{"question": "no workflow"}\n{not json\n')
    counts = store.import_jsonl(path, namespace="team-b")
    assert counts == {"read": 4, "invalid_lines": 2, "added": 4, "merged_or_kept": 0, "already_present": 0, "failed": 0}
    a = {r.question: r for r in store.list("team-a")}
    b = {r.question: r for r in store.list("team-b")}
    assert set(a) == set(b) and all(a[q].workflow == b[q].workflow and a[q].usage_count == b[q].usage_count for q in a)
    assert not {r.id for r in a.values()} & {r.id for r in b.values()}  # ids stay unique store-wide
    store.reset("team-b")
    assert store.import_jsonl(path)["already_present"] == 4  # same namespace, same ids: nothing to do
    assert store.import_jsonl(path, namespace="team-b")["added"] == 4
    assert store.count("team-b") == 4 and store.count("team-a") == 4
    with pytest.raises(FileNotFoundError):
        store.import_jsonl(tmp_path / "missing.jsonl")


def test_search_trajectories_and_rebuild(store):
    for key, q in QUESTIONS.items():
        store.log_trajectory(make_trajectory(q, outcome="incorrect" if key == "band" else "correct"))
    store.log_trajectory(make_trajectory("Which river is longer, the Danube or the Rhine?", namespace="other"))
    hits = store.search_trajectories("Is the Rhine longer than the Danube?", "default", k=2)
    assert hits[0].trajectory.question == QUESTIONS["river"] and len(hits) == 2
    assert hits[0].similarity > hits[1].similarity
    assert hits[0].trajectory.steps[1].args == {"query_list": ["first query"]}
    assert store.count() == 0
    assert store.rebuild_from_log(namespace="default", progress=False) == 4 and store.count("default") == 4
    assert store.count("other") == 0


def test_other_process_reads_what_this_one_wrote(tmp_path, embedder):
    path = tmp_path / "memory"
    with MemoryStore.open(path, embedder=embedder) as st:
        mem = st.memorise(make_trajectory(QUESTIONS["river"], queries=("Danube length",)))
    code = textwrap.dedent("""
        import sys
        from mia.memory import MemoryStore
        with MemoryStore.open(sys.argv[1]) as st:
            got = st.retrieve("Is the Danube longer than the Rhine?")
            print(got.positives[0].record.id, got.positives[0].record.workflow.count("Danube length"))
    """)
    out = run_python(code, str(path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [mem.id, "1"]


def test_a_collection_built_with_a_large_sync_threshold_is_set_back_when_the_store_opens(tmp_path):
    """Former mia versions could create collections with sync_threshold 100,000 (a bulk-load
    option), which made every later single add cost 0.4-2 s. Opening the store sets it back to
    1000."""
    from mia.memory.chroma_collections import HNSW_SYNC_THRESHOLD

    path = tmp_path / "old"
    vectors = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    with MemoryStore.open(path, embedder=PrecomputedEmbedder(8, "rand8")) as st:
        st.add_many(
            [MemoryRecord(id=f"m{i}", question=f"q{i}", workflow="1. w", outcome="correct") for i in range(4)], vectors
        )
        col = next(c for c in st.client.list_collections() if c.name.endswith("-pos"))
        col.modify(configuration={"hnsw": {"sync_threshold": 100_000}})  # as the old option left it

    def threshold(store: MemoryStore) -> int:
        col = next(c for c in store.client.list_collections() if c.name.endswith("-pos"))
        return store.client.get_collection(col.name).configuration["hnsw"]["sync_threshold"]

        assert threshold(st) == 100_000

    with MemoryStore.open(path, embedder=PrecomputedEmbedder(8, "rand8")) as st:
        assert threshold(st) == HNSW_SYNC_THRESHOLD == 1000
        st.add(MemoryRecord(id="m9", question="q9", workflow="1. w", outcome="correct"), vectors[1] + 0.5)
        assert st.count() == 5


def test_writes_not_yet_synced_to_the_hnsw_files_are_not_lost(tmp_path):
    """Vectors Chroma has not yet written to its HNSW files (300 writes, under the sync threshold
    of 1000) are replayed from its write-ahead log: another process, opening later, finds all of
    them."""
    path = tmp_path / "bulk"
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((300, 8)).astype(np.float32)
    recs = [
        MemoryRecord(id=f"m{i}", question=f"q{i}", workflow="1. w", outcome="correct" if i % 2 else "incorrect")
        for i in range(300)
    ]
    with MemoryStore.open(path, embedder=PrecomputedEmbedder(8, "rand8")) as st:
        st.add_many(recs, vectors)
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from mia.memory import MemoryStore
        from mia.memory.embeddings import PrecomputedEmbedder
        vectors = np.random.default_rng(1).standard_normal((300, 8)).astype(np.float32)
        with MemoryStore.open(sys.argv[1], embedder=PrecomputedEmbedder(8, "rand8")) as st:
            hits = [st.retrieve("", k_pos=1, k_neg=1, query_embedding=vectors[i]) for i in (7, 250)]
            print(st.count(), hits[0].positives[0].record.id, hits[1].negatives[0].record.id)
    """)
    done = run_python(code, str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["300", "m7", "m250"]


def test_second_process_gets_a_clear_lock_error(tmp_path, embedder):
    path = tmp_path / "memory"
    with MemoryStore.open(path, embedder=embedder):
        code = (
            "import sys\nfrom mia.memory import MemoryStore, StoreLockedError\n"
            "try:\n    MemoryStore.open(sys.argv[1], lock_timeout=0.2)\nexcept StoreLockedError as e:\n    print('LOCKED', e)\n"
        )
        out = run_python(code, str(path))
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("LOCKED") and "Chroma server" in out.stdout
        again = MemoryStore.open(path, embedder=embedder)  # the same process shares the lock
        again.close()
    out = run_python(code, str(path))
    assert "LOCKED" not in out.stdout and out.returncode == 0  # released on close


def test_corrupt_store_gives_a_clear_error(tmp_path):
    path = tmp_path / "memory"
    (path / "chroma").mkdir(parents=True)
    (path / "chroma" / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    code = (
        "import sys\nfrom mia.memory import MemoryStore, MemoryStoreError\n"
        "try:\n    MemoryStore.open(sys.argv[1])\nexcept MemoryStoreError as e:\n    print('ERR', e)\n"
    )
    out = run_python(code, str(path))  # another process: chromadb caches clients per path in-process
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ERR") and "cannot be read" in out.stdout and "Traceback" not in out.stdout


def test_schema_and_embedder_mismatch(tmp_path):
    path = tmp_path / "memory"
    st = MemoryStore.open(path, embedder=PrecomputedEmbedder(3, "three"))
    st.add(MemoryRecord(question="q", workflow="1. w", outcome="correct"), np.ones(3))
    st.close()  # closes its Chroma client too: the collection is modified below through a client of its own
    with pytest.raises(SchemaMismatchError, match="embedder 'three'"):
        MemoryStore.open(path, embedder=PrecomputedEmbedder(5, "five"))
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(path / "chroma"), settings=Settings(anonymized_telemetry=False, allow_reset=True)
    )
    col = client.get_collection(next(c.name for c in client.list_collections()))
    col.modify(metadata={**col.metadata, "mia_schema_version": 99})
    with pytest.raises(SchemaMismatchError, match="schema version 99"):
        MemoryStore.open(path, embedder=PrecomputedEmbedder(3, "three"))


def test_damaged_record_is_skipped_not_fatal(tmp_path):
    st = MemoryStore.open(tmp_path / "m", embedder=PrecomputedEmbedder(2, "two"))
    st.add(MemoryRecord(id="ok", question="q", workflow="1. w", outcome="correct"), np.array([1.0, 0.0]))
    st.add(MemoryRecord(id="bad", question="q2", workflow="1. w", outcome="correct"), np.array([0.9, 0.1]))
    st.index.update("default", "pos", ["bad"], ['{"question": "q2", "usage_count": "lots"'])
    got = st.retrieve("q", query_embedding=np.array([1.0, 0.0]))
    assert got.ids == ["ok"]
    st.close()


def test_crash_in_the_middle_of_writes_leaves_a_readable_store(tmp_path, embedder):
    path = tmp_path / "memory"
    code = textwrap.dedent("""
        import sys, numpy as np
        from mia.memory import MemoryStore, MemoryRecord
        from mia.memory.embeddings import PrecomputedEmbedder
        st = MemoryStore.open(sys.argv[1], embedder=PrecomputedEmbedder(384, "minilm"))
        rng = np.random.default_rng(0)
        i = 0
        while True:
            recs = [MemoryRecord(question=f"q{i}-{j}", workflow="1. w " * 50, outcome="correct") for j in range(200)]
            st.add_many(recs, rng.standard_normal((200, 384)))
            i += 1
            print(i, flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    for _ in range(3):
        assert proc.stdout.readline()  # at least three batches committed, then die mid-write
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    with MemoryStore.open(path, embedder=embedder) as st:  # the lock died with the process
        n = st.count()
        assert n >= 600 and n % 200 == 0  # whole batches only
        assert len(st.retrieve("q1-5", k_pos=2).positives) == 2
        rec = st.memorise(make_trajectory(QUESTIONS["band"]))
        assert st.get(rec.id) is not None
    con = sqlite3.connect(path / "chroma" / "chroma.sqlite3")
    assert con.execute("pragma integrity_check").fetchone()[0] == "ok"


DIFFERENT_ANSWERS = [  # cosine >= 0.95 with MiniLM, yet different questions with different answers
    ("Who is older, Jimmy Page or Robert Plant?", "Who is younger, Jimmy Page or Robert Plant?"),
    ("Who owns the office tower at 888 7th Avenue?", "Who owns the office tower at 888 8th Avenue?"),
]


@pytest.mark.parametrize("first,second", DIFFERENT_ANSWERS)
def test_dedup_never_merges_different_questions(store, embedder, first, second):
    """Defect 12.3: cosine alone merged these and summed their counts."""
    vectors = embedder.embed_documents([first, second])
    assert float(vectors[0] @ vectors[1]) >= store.policy.dedup_threshold  # the case the old rule merged
    a = store.memorise(make_trajectory(first, answer="Robert Plant"))
    store.update_stats([a.id], success=True)
    b = store.memorise(make_trajectory(second, answer="Jimmy Page", queries=()))  # shorter: it would have won
    assert b.id != a.id and store.count() == 2
    assert store.get(a.id).question == first and (store.get(a.id).usage_count, store.get(b.id).usage_count) == (1, 0)
    store.add_many([MemoryRecord(question=second, workflow="1. x", outcome="correct")])
    assert store.consolidate("default")["default"]["merged"] == 1  # consolidation: the two copies of `second` only
    assert {r.question for r in store.list()} == {first, second}


def test_dedup_key_ignores_case_punctuation_and_spacing_only():
    from mia.memory.upkeep import question_key

    q = "Who is older, Jimmy Page or Robert Plant?"
    assert (
        question_key(q)
        == question_key("  who is OLDER   jimmy page, or robert plant!! ")
        == question_key(q.replace(",", " ,"))
    )
    assert question_key(q) != question_key(q.replace("older", "younger"))
    assert question_key("888 7th Avenue") != question_key("888 8th Avenue")
    assert question_key(q, "a red car") != question_key(q, "a blue car") != question_key(q)
    assert question_key("Ｃａｆé ?") == question_key("café")  # Unicode forms (NFKC) and case folding


def test_a_kill_during_add_many_leaves_whole_chunks_and_a_rerun_completes_it(tmp_path):
    """16.7: an add_many spans one Chroma collection per (namespace, outcome) and writes each in
    chunks; a kill can leave some chunks written (docs/memory.md says so). Adds are upserts by
    id, so re-running the same call completes it without duplicates."""
    path = tmp_path / "memory"
    code = textwrap.dedent("""
        import sys, numpy as np
        from mia.memory import MemoryStore, MemoryRecord
        from mia.memory.embeddings import PrecomputedEmbedder
        st = MemoryStore.open(sys.argv[1], embedder=PrecomputedEmbedder(8, "p8"))
        recs = [MemoryRecord(id=f"{o}{j}", question=f"q{j}", workflow="1. w", outcome=o)
                for o in ("correct", "incorrect") for j in range(3000)]
        vectors = np.random.default_rng(0).standard_normal((6000, 8))
        if len(sys.argv) > 2:
            print("start", flush=True)
        st.add_many(recs, vectors, batch_size=500)
        print("done", st.count(), flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code, str(path), "kill"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "start"
    time.sleep(0.5)  # not an assert on time: a kill before or after the writes is a valid case too
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    with MemoryStore.open(path, embedder=PrecomputedEmbedder(8, "p8")) as st:
        assert st.count() % 500 == 0  # whole chunks only
    rerun = run_python(code, str(path))
    assert rerun.returncode == 0 and rerun.stdout.strip() == "done 6000", rerun.stderr[-2000:]


def test_a_rebuild_from_the_log_alone_gives_the_same_memories_and_credits(tmp_path, embedder):
    """A study keeps its trajectory log, never Chroma files: rebuilt in order, each record has its
    trajectory's id, so the ids each episode logged as used are credited again as the graph did."""
    first = make_trajectory(QUESTIONS["river"], outcome="correct")
    second = make_trajectory(QUESTIONS["band"], outcome="correct").model_copy(update={"used_memory_ids": [first.id]})
    third = make_trajectory(QUESTIONS["film"], outcome="incorrect").model_copy(
        update={"used_memory_ids": [first.id, second.id]}
    )
    with MemoryStore.open(tmp_path / "live", embedder=embedder) as live:
        for traj in (first, second, third):
            record = live.memorise(traj)
            assert record.id == traj.id
            live.update_stats(traj.used_memory_ids, success=traj.outcome == "correct")
        before = {r.id: (r.workflow, r.usage_count, r.success_count) for r in live.list(namespace="default")}
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "trajectories.jsonl").write_bytes((tmp_path / "live" / "trajectories.jsonl").read_bytes())
    with MemoryStore.open(tmp_path / "log", embedder=embedder) as rebuilt:
        assert rebuilt.rebuild_from_log(progress=False) == 3
        after = {r.id: (r.workflow, r.usage_count, r.success_count) for r in rebuilt.list(namespace="default")}
    assert after == before and before[first.id][1:] == (2, 1)


def test_replace_moves_a_changed_outcome_and_a_failed_write_keeps_the_old_record(store, monkeypatch):
    rec = store.memorise(make_trajectory("Who painted the Mona Lisa?"))
    assert rec.outcome == "correct"
    moved = store.replace(rec.model_copy(update={"outcome": "incorrect", "workflow": "1. Guessed"}))
    assert [r.id for r in store.list(outcome="incorrect")] == [rec.id] and store.list(outcome="correct") == []
    assert store.get(rec.id).workflow == "1. Guessed" == moved.workflow

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(store.index, "put", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        store.replace(rec.model_copy(update={"outcome": "correct", "workflow": "1. Search"}))
    assert store.get(rec.id).workflow == "1. Guessed" and store.count() == 1  # nothing lost
