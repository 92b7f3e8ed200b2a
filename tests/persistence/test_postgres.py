"""The PostgreSQL checkpointer and store against a real server (see conftest.py): the MIA graph
(scripted models) checkpoints into PostgreSQL, another connection resumes the thread, and the
PostgresStore serves `runtime.store`; `mia ask --checkpointer postgresql://...` end to end."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from mia.graph.builder import build_graph
from mia.graph.persistence import PersistenceError, open_checkpointer, open_store, redact, resolve_checkpointer

from tests.graph.fakes import make_deps
from tests.graph.test_graph_logic import ctx, models

pytestmark = [pytest.mark.server, pytest.mark.slow]
EMPTY = {"plan": None, "gold_answers": None, "paragraphs": None, "caption": None}


def test_graph_checkpoints_into_postgres_and_resumes_elsewhere(fresh_db: str) -> None:
    deps, _ = make_deps(models(planner=["1. Look it up.", "no"], executor=["<answer>Shakespeare</answer>"]))
    cfg = {"configurable": {"thread_id": "pg-thread"}}
    with open_checkpointer(fresh_db) as saver:
        out = build_graph(checkpointer=saver, deps=deps).invoke(
            {"question": "Who wrote Hamlet?", **EMPTY}, cfg, context=ctx()
        )
    assert out["answer"] == "Shakespeare"
    with open_checkpointer(fresh_db) as saver:  # a new connection: the state lives in the server
        state = build_graph(checkpointer=saver, deps=deps).get_state(cfg)
        history = list(saver.list(cfg))
    assert state.values["answer"] == "Shakespeare" and state.values["question"] == "Who wrote Hamlet?"
    assert not state.next and len(history) > 3


def test_build_graph_takes_postgres_urls(fresh_db: str) -> None:
    deps, _ = make_deps(models(planner=["1.", "no"], executor=["<answer>url</answer>"]))
    from langgraph.checkpoint.postgres import PostgresSaver

    graph = build_graph(checkpointer=fresh_db, store=fresh_db, deps=deps)
    assert isinstance(graph.checkpointer, PostgresSaver) and type(graph.store).__name__ == "PostgresStore"
    cfg = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"question": "Q", **EMPTY}, cfg, context=ctx())["answer"] == "url"
    assert resolve_checkpointer(fresh_db).get_tuple(cfg).checkpoint["channel_values"]["answer"] == "url"


def test_ainvoke_and_astream_with_the_postgres_shortcuts(fresh_db: str) -> None:
    """Issue 39: `build_graph(checkpointer="postgresql://...")` gave a sync saver; `ainvoke` raised
    NotImplementedError."""
    deps, _ = make_deps(
        models(
            planner=["1. Look.", "no", "1. Look again.", "no"],
            executor=["<answer>async</answer>", "<answer>again</answer>"],
        )
    )
    graph = build_graph(checkpointer=fresh_db, store=fresh_db, deps=deps)
    cfg = {"configurable": {"thread_id": "async-pg"}}

    async def both() -> tuple[dict, list]:
        out = await graph.ainvoke({"question": "Q", **EMPTY}, cfg, context=ctx())
        chunks = [
            c async for c in graph.astream({"question": "Q2", **EMPTY}, cfg, context=ctx(), stream_mode="updates")
        ]
        return out, chunks

    out, chunks = asyncio.run(both())
    assert out["answer"] == "async" and any("close_question" in c for c in chunks)
    with open_checkpointer(fresh_db) as saver:  # a new connection sees both questions' checkpoints
        history = list(saver.list(cfg))
        assert saver.get_tuple(cfg).checkpoint["channel_values"]["answer"] == "again"
        assert len({h.checkpoint["channel_values"].get("question") for h in history}) >= 2


def test_postgres_store_serves_runtime_store(fresh_db: str) -> None:
    class S(TypedDict):
        key: str
        seen: str

    def node(state: S, runtime: Runtime) -> dict[str, str]:
        runtime.store.put(("mia", "notes"), state["key"], {"text": f"note {state['key']}"})
        item = runtime.store.get(("mia", "notes"), state["key"])
        return {"seen": item.value["text"]}

    builder = StateGraph(S)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    with open_store(fresh_db) as store:
        assert builder.compile(store=store).invoke({"key": "k1", "seen": ""})["seen"] == "note k1"
    with open_store(fresh_db) as store:  # persisted in the server
        assert store.get(("mia", "notes"), "k1").value == {"text": "note k1"}
        assert [i.key for i in store.search(("mia",))] == ["k1"]


def test_unreachable_server_is_one_clear_line_without_password() -> None:
    url = "postgresql://bob:secret@127.0.0.1:1/nothing"
    with pytest.raises(PersistenceError) as err, open_checkpointer(url):
        pass
    assert "secret" not in str(err.value) and "127.0.0.1:1" in str(err.value) and "\n" not in str(err.value)
    assert redact(url) == "postgresql://bob@127.0.0.1:1/nothing"
    with pytest.raises(PersistenceError, match="sqlite"):
        resolve_checkpointer("mysql://x")


def test_sqlite_targets(tmp_path: Path) -> None:
    with open_checkpointer(f"sqlite:///{tmp_path}/a/c.sqlite") as saver:
        assert isinstance(saver, SqliteSaver)
    assert (tmp_path / "a" / "c.sqlite").is_file()
    assert isinstance(resolve_checkpointer(tmp_path / "b.sqlite"), SqliteSaver)
    assert isinstance(
        resolve_checkpointer(str(tmp_path / "c.sqlite")), SqliteSaver
    )  # a plain path, as the CLI takes it
    for bad, why in (("", "use postgresql"), (str(tmp_path), "is a folder")):
        with pytest.raises(PersistenceError, match=why):
            resolve_checkpointer(bad)


def test_cli_ask_with_postgres_checkpointer(fresh_db: str, tmp_path: Path) -> None:
    """`mia ask --checkpointer postgresql://...` with a preset plan and SmolLM2 through llama.cpp."""
    paragraphs = tmp_path / "p.json"
    paragraphs.write_text(json.dumps([{"title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare."}]))
    spec = "llamacpp:smollm2"
    roles = [a for r in ("planner", "executor", "manager", "judge") for a in (f"--{r}-model", spec)]
    cmd = [
        sys.executable,
        "-m",
        "mia.app.cli",
        "ask",
        "Who wrote Hamlet?",
        *roles,
        "--plan",
        "1. Search.",
        "--max-tool-calls",
        "1",
        "--max-replans",
        "0",
        "--max-tokens",
        "16",
        "--no-memorise",
        "--judge-mode",
        "off",
        "--paragraphs",
        str(paragraphs),
        "--checkpointer",
        fresh_db,
        "--json",
        "--data-dir",
        str(tmp_path),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    thread = json.loads(done.stdout)["thread_id"]
    assert not (tmp_path / "checkpoints.sqlite").exists()
    import psycopg

    with psycopg.connect(fresh_db) as conn:
        rows = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread,)).fetchone()
    assert rows[0] > 3

    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "mia.app.cli",
            "ask",
            "Q",
            "--checkpointer",
            "postgresql://u:pw@127.0.0.1:1/x",
            "--json",
            *roles,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert bad.returncode != 0 and "cannot use PostgreSQL at postgresql://u@127.0.0.1:1/x" in bad.stderr
    assert "pw" not in bad.stderr.replace("PostgreSQL", "")
