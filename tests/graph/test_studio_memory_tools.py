"""A user's own graph under `langgraph dev` with MIA's memory as the server's store
(`"store": {"path": "mia.graph.studio.store"}`): `memory_tools()` made without a store find it
with `get_store()` at run time, and the namespace template `("users", "{user_id}")` keeps two
users' workflows apart. A real server process on a free port, real Chroma and MiniLM; no model."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from mia.app.commands.agent import free_port, studio_command, studio_env

from .test_studio_server import served

pytestmark = [pytest.mark.server, pytest.mark.real_model]
APP = Path(__file__).parent / "data" / "studio_tools"


def _call(client: Any, user: str, name: str, args: dict[str, Any]) -> str:
    """One tool call as the agent would make it, run by the server for `user`; the tool's reply."""
    out = client.runs.wait(
        None,
        "tools_agent",
        input={"messages": [{"type": "ai", "content": "", "tool_calls": [{"name": name, "args": args, "id": "c1"}]}]},
        config={"configurable": {"user_id": user}},
    )
    assert isinstance(out, dict) and out["messages"][-1]["type"] == "tool", out
    return str(out["messages"][-1]["content"])


def test_two_users_of_one_server_see_only_their_own_workflows(tmp_path: Path, data_dir: Path) -> None:
    from langgraph_sdk import get_sync_client

    app = tmp_path / "app"
    shutil.copytree(APP, app)
    port = free_port()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "models").symlink_to(data_dir / "models")  # MiniLM, without the session's memory
    env = studio_env() | {"MIA_DATA_DIR": str(tmp_path / "data")}
    log = tmp_path / "server.log"
    with served(studio_command(app / "langgraph.json", "127.0.0.1", port), app, env, log) as (url, proc):
        client = get_sync_client(url=url)
        alice = "Which magazine was started first, Arthur's Magazine or First for Women?"
        bob = "Who directed the film The Duel?"
        made = _call(
            client,
            "alice",
            "manage_workflow",
            {
                "action": "create",
                "question": alice,
                "workflow": "1. Search each magazine's founding year",
                "correct": True,
            },
        )
        assert made.startswith("Created workflow"), made
        _call(
            client,
            "bob",
            "manage_workflow",
            {"action": "create", "question": bob, "workflow": "1. Search the film's director", "correct": True},
        )
        seen_by_alice = _call(client, "alice", "search_workflows", {"question": alice})
        seen_by_bob = _call(client, "bob", "search_workflows", {"question": alice})
        assert "founding year" in seen_by_alice and "film's director" not in seen_by_alice, seen_by_alice
        assert "film's director" in seen_by_bob and "founding year" not in seen_by_bob, seen_by_bob
        # the store is MIA's memory on disk: both users' namespaces are there, apart
        from mia.memory import MemoryStore

        os.killpg(proc.pid, signal.SIGTERM)  # the server holds the store's lock
        proc.wait(timeout=30)
        stored = MemoryStore.open(tmp_path / "data" / "memory")
        try:
            owners = {r.question: r.namespace or "" for r in stored.list(limit=10)}
        finally:
            stored.close()
        assert set(owners) == {alice, bob} and "alice" in owners[alice] and "bob" in owners[bob], owners
