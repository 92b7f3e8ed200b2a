"""Issue 16.4: every hostile import file, store folder and argument ends in a one-line error
or a reported skip; the good records of a file land, and nothing acknowledged is lost."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from mia.app.commands.memory import app
from mia.memory import MemoryStore, MemoryStoreError

from .conftest import make_trajectory

HEADER = json.dumps({"mia_memory_export": 1, "schema_version": 1})
GOOD = json.dumps(
    {
        "id": "good1",
        "question": "Who wrote the novel Dracula?",
        "workflow": "1. Search the author",
        "outcome": "correct",
    }
)


def record(**fields) -> str:
    return json.dumps(
        {"question": "Who painted the Mona Lisa?", "workflow": "1. Search the painter", "outcome": "correct", **fields}
    )


HOSTILE = {  # one bad line each; the GOOD line after it must land
    "schema_version null": json.dumps({"mia_memory_export": 1, "schema_version": None}),
    "deeply nested": "[" * 100_000 + "]" * 100_000,
    "empty id": record(id=""),
    "id with a newline": record(id="a\nb"),
    "lone surrogate": '{"id": "s1", "question": "q", "workflow": "1. \\ud800 x"}',  # a JSON escape of U+D800
    "lone surrogate in a key": '{"\\udc00": 1, "question": "q", "workflow": "1. w"}',
    "created_at NaN": '{"id": "n1", "question": "q", "workflow": "1. w", "created_at": NaN}',
    "created_at huge": record(id="h1", created_at=1e300),
    "negative usage": record(id="u1", usage_count=-3),
    "success above usage": record(id="u2", usage_count=1, success_count=5),
    "bad outcome": record(id="o1", outcome="maybe"),
    "not an object": "[1, 2, 3]",
    "binary": "\x00\x01\x02\xff",
    "invalid namespace": record(id="ns1", namespace="../etc"),
    "store item without a key": json.dumps({"mia_store_item": 1, "namespace": "default", "value": {"a": 1}}),
    "store item with a list value": json.dumps({"mia_store_item": 1, "namespace": "default", "key": "k", "value": [1]}),
    "store item in a bad namespace": json.dumps({"mia_store_item": 1, "namespace": "../x", "key": "k", "value": {}}),
}


def cli(data_dir, *args):
    return CliRunner().invoke(
        app, ["--data-dir", str(data_dir), *args], env={"MIA_CHROMA_MODE": "persistent", "COLUMNS": "200"}
    )


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_bad_line_is_reported_and_the_good_ones_land(tmp_path, embedder, case):
    path = tmp_path / "in.jsonl"
    raw = (HEADER + "\n" + HOSTILE[case] + "\n" + GOOD + "\n").encode("utf-8", "surrogateescape")
    if case == "binary":
        raw = HEADER.encode() + b"\n" + bytes(range(11, 256)) + b"\x00\x01\n" + GOOD.encode() + b"\n"
    path.write_bytes(raw)
    with MemoryStore.open(tmp_path / "memory", embedder=embedder) as st:
        skipped: list[str] = []
        counts = st.import_jsonl(path, None, on_skip=skipped.append)
        assert counts["added"] == 1 and counts["invalid_lines"] == 1, (counts, skipped)
        assert len(skipped) == 1 and "\n" not in skipped[0] and skipped[0].startswith(("line 2", "id ns1"))
        assert [r.id for r in st.list("default")] == ["good1"]
        assert all(_readable(r) for r in st.list(None))


def _readable(rec) -> bool:
    from mia.memory import MemoryRecord

    return MemoryRecord.model_validate_json(rec.model_dump_json()) == rec


def test_duplicate_ids_in_one_file_with_no_dedup(tmp_path, embedder):
    path = tmp_path / "dup.jsonl"
    path.write_text("\n".join([HEADER, record(id="d1"), record(id="d1", question="Another question?"), GOOD]) + "\n")
    with MemoryStore.open(tmp_path / "memory", embedder=embedder) as st:
        counts = st.import_jsonl(path, "default", dedup=False)
        assert counts["added"] == 2 and counts["invalid_lines"] == 1
        assert sorted(r.id for r in st.list()) == ["d1", "good1"]


def test_cli_import_prints_each_skip_on_one_line(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join([HEADER, HOSTILE["created_at NaN"], HOSTILE["empty id"], GOOD]) + "\n")
    out = cli(tmp_path, "import", str(path))
    assert out.exit_code == 0, out.output
    assert "added 1" in out.output and "invalid lines 2" in out.output
    assert sum(line.startswith("skipped line") for line in out.output.splitlines()) == 2
    shown = cli(tmp_path, "show", "good1")
    assert shown.exit_code == 0 and "Dracula" in shown.output


def test_cli_import_no_dedup_duplicates_and_a_missing_file(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text("\n".join([HEADER, record(id="d1"), record(id="d1")]) + "\n")
    out = cli(tmp_path, "import", "--no-dedup", str(path))
    assert out.exit_code == 0 and "added 1" in out.output and "repeated in the file" in out.output
    missing = cli(tmp_path, "import", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_a_foreign_sqlite_file_is_refused_and_left_alone(tmp_path):
    chroma = tmp_path / "memory" / "chroma"
    chroma.mkdir(parents=True)
    with sqlite3.connect(chroma / "chroma.sqlite3") as conn:
        conn.execute("create table invoices (id integer primary key, amount real)")
    conn.close()
    with pytest.raises(MemoryStoreError, match="another program's SQLite database"):
        MemoryStore.open(tmp_path / "memory")
    conn = sqlite3.connect(chroma / "chroma.sqlite3")
    assert [r[0] for r in conn.execute("select name from sqlite_master where type='table'")] == ["invoices"]
    conn.close()
    out = cli(tmp_path, "list")
    assert out.exit_code == 1 and len(out.output.strip().splitlines()) == 1 and "invoices" in out.output


def test_chroma_path_that_is_a_file(tmp_path):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "chroma").write_text("x")
    out = cli(tmp_path, "stats")
    assert out.exit_code == 1 and "is a file" in out.output and len(out.output.strip().splitlines()) == 1


MIA = [sys.executable, "-c", "from mia.app.cli import main; main()"]


def _run_read_only(folder, args: list) -> subprocess.CompletedProcess:
    """Run the CLI with `folder` read-only: a read-only bind mount in a private mount namespace
    when we are root (chmod does not stop root), else plain permissions."""
    env = {**os.environ, "COLUMNS": "200"}
    if os.geteuid() != 0:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        return subprocess.run(MIA + args, capture_output=True, timeout=300, env=env)
    if shutil.which("unshare") is None:
        pytest.skip("no unshare to make a read-only mount")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    out = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, str(folder), *MIA, *args], capture_output=True, timeout=300, env=env
    )
    if b"mount:" in out.stderr[:200] or b"unshare:" in out.stderr[:200]:
        pytest.skip(f"cannot make a read-only mount here: {out.stderr[:200]!r}")
    return out


def test_list_stats_show_and_search_work_on_a_read_only_store(tmp_path, embedder):
    with MemoryStore.open(tmp_path / "memory", embedder=embedder) as st:
        rec = st.memorise(make_trajectory("Which river is longer, the Danube or the Rhine?"))
    args = ["memory", "--data-dir", str(tmp_path)]
    listed = _run_read_only(tmp_path, args + ["list", "--json"])
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert json.loads(listed.stdout.splitlines()[0])["id"] == rec.id
    stats = _run_read_only(tmp_path, args + ["stats", "--json"])
    assert stats.returncode == 0 and json.loads(stats.stdout)["namespaces"]["default"]["memories"] == 1
    found = _run_read_only(tmp_path, args + ["search", "Is the Rhine longer than the Danube?", "--json"])
    assert found.returncode == 0 and rec.id in found.stdout.decode()
    refused = _run_read_only(tmp_path, args + ["prune", "--max-size", "1", "--yes"])
    assert refused.returncode == 1 and b"read-only" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    with MemoryStore.open(tmp_path / "memory", embedder=embedder) as st:
        assert st.count() == 1  # nothing was written or lost


def test_invalid_utf8_arguments(tmp_path, embedder):
    with MemoryStore.open(tmp_path / "memory", embedder=embedder) as st:
        st.memorise(make_trajectory("Who wrote the novel Dracula?"))
    base = [*MIA, "memory", "--data-dir", str(tmp_path)]
    bad_ns = subprocess.run([*base, "--namespace", b"team\xff", "list"], capture_output=True, timeout=300)
    assert (
        bad_ns.returncode == 1
        and b"invalid namespace" in bad_ns.stderr
        and len(bad_ns.stderr.strip().splitlines()) == 1
    )
    search = subprocess.run([*base, "search", b"who wrote \xff Dracula", "--json"], capture_output=True, timeout=300)
    assert search.returncode == 0 and b"Dracula" in search.stdout, search.stderr[-2000:]
    show = subprocess.run([*base, "show", b"\xff"], capture_output=True, timeout=300)
    assert show.returncode == 1 and len(show.stderr.strip().splitlines()) == 1, show.stderr[-2000:]


def test_mia_index_read_only_data_dir_and_a_non_utf8_folder_name(tmp_path):
    docs = tmp_path / os.fsdecode(b"docs-\xff")  # a folder name that is not UTF-8
    docs.mkdir()
    (docs / "a.txt").write_text("Mars has two moons, Phobos and Deimos.\n")
    data = tmp_path / "data"
    data.mkdir()
    ok = subprocess.run(
        [*MIA, "index", os.fsencode(docs), "--data-dir", str(tmp_path / "rw")], capture_output=True, timeout=300
    )
    assert ok.returncode == 0 and b"Indexed for corpus" in ok.stdout, ok.stderr[-2000:]
    refused = _run_read_only(data, ["index", str(docs), "--data-dir", str(data)])
    lines = [line for line in refused.stderr.decode().splitlines() if line.startswith("Error")]
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr[-2000:]
    assert "Read-only" in lines[0] or "Permission denied" in lines[0]


def _digest(folder) -> dict[str, str]:
    import hashlib

    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_snapshot_reader_leaves_the_folder_byte_for_byte_and_does_not_wait_for_the_writer(tmp_path, embedder):
    """Chroma rewrites its sqlite and HNSW files even when a store is only read; `snapshot=True`
    reads a private copy instead, so a committed store stays unchanged, and it takes no lock, so
    it opens while another store holds the folder for writing."""
    folder = tmp_path / "memory"
    with MemoryStore.open(folder, embedder=embedder) as st:
        for q in ("Which river is longer, the Danube or the Rhine?", "Who wrote the novel Dracula?"):
            st.memorise(make_trajectory(q))
    holder = (
        "import sys, time; from pathlib import Path; from mia.memory.locking import FolderLock; "
        "FolderLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(120)"
    )
    writer = subprocess.Popen([sys.executable, "-c", holder, str(folder)], stdout=subprocess.PIPE)
    try:
        assert writer.stdout.readline().strip() == b"held"  # another process holds the folder's lock
        before = _digest(folder)
        with pytest.raises(MemoryStoreError, match="in use by another process"):
            MemoryStore.open(folder, embedder=embedder, read_only=True, lock_timeout=0.5)
        with MemoryStore.open(folder, embedder=embedder, read_only=True, snapshot=True, lock_timeout=0.5) as ro:
            assert ro.read_only and ro.count() == 2
            assert (
                ro.retrieve("Is the Rhine longer than the Danube?")
                .positives[0]
                .record.question.startswith("Which river")
            )
            with pytest.raises(MemoryStoreError, match="read-only"):
                ro.memorise(make_trajectory("What is the capital of Peru?"))
        assert _digest(folder) == before
    finally:
        writer.kill()
        writer.wait()


def test_store_items_without_a_taker_are_counted_not_lost_silently(tmp_path, embedder):
    """The memory layer reads an app's store items but cannot put them (MiaStore, a layer above,
    does): without `put_items` they are counted as not imported, and the memories still land."""
    path = tmp_path / "items.jsonl"
    item = json.dumps({"mia_store_item": 1, "namespace": "default", "key": "k", "value": {"a": 1}})
    path.write_text("\n".join([HEADER, item, GOOD]) + "\n")
    with MemoryStore.open(tmp_path / "memory", embedder=embedder) as st:
        counts = st.import_jsonl(path, None)
        assert counts["added"] == 1 and counts["items_not_imported"] == 1 and counts["invalid_lines"] == 0
        taken: list[tuple[list[dict], str | None]] = []
        counts = st.import_jsonl(path, "other", put_items=lambda items, ns: taken.append((items, ns)) or len(items))
        assert counts["items_added"] == 1 and taken == [
            ([{"namespace": "default", "key": "k", "value": {"a": 1}}], "other")
        ]
