"""`mia studio` serves the graph with `langgraph dev` (a real subprocess on a free port); one run
over HTTP with langgraph_sdk and the real embedded model (no tools, a few tokens)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from mia.app.commands.agent import free_port, studio_env

pytestmark = [pytest.mark.server, pytest.mark.real_model]
ROOT = Path(__file__).resolve().parents[2]


def _wait_ok(url: str, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    pytest.fail(f"langgraph dev did not answer in {timeout}s:\n{log.read_text()[-3000:]}")


@contextmanager
def served(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """A `langgraph dev` process (its own process group) until it answers /ok: its URL and process;
    the group is stopped on the way out (SIGTERM, then SIGKILL after 30 s)."""
    with log.open("w") as fh:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{command[command.index('--port') + 1]}"
    try:
        _wait_ok(url, proc, log)
        yield url, proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_studio_serves_the_graph(tmp_path: Path, data_dir: Path) -> None:
    from langgraph_sdk import get_sync_client

    port = free_port()
    env = studio_env() | {"MIA_DATA_DIR": str(data_dir)}
    log = tmp_path / "server.log"
    mia = Path(sys.executable).with_name("mia")
    with served([str(mia), "studio", "--port", str(port)], tmp_path, env, log) as (url, _):
        client = get_sync_client(url=url)
        assistant = client.assistants.search(graph_id="mia")[0]
        schemas = client.assistants.get_schemas(assistant["assistant_id"])
        props = schemas["context_schema"]["properties"]
        assert props["max_tool_calls"]["default"] == 30 and props["memory_mode"]["description"]
        assert "question" in schemas["input_schema"]["properties"]
        thread = client.threads.create()
        out = client.runs.wait(
            thread["thread_id"],
            "mia",
            input={"question": "What is the capital of France?"},
            context={
                "memory_mode": "none",
                "max_tool_calls": 0,
                "executor_max_tokens": 8,
                "judge_mode": "off",
                "memorise": False,
            },
        )
        assert isinstance(out, dict) and "answer" in out, out
        assert out["stop_reason"] == "forced:budget" and out["usage"]["executor"]["calls"] == 1
        state = client.threads.get_state(thread["thread_id"])
        assert state["values"]["answer"] == out["answer"]
        chat = client.runs.wait(
            None,
            "mia-chat",
            input={"messages": [{"type": "human", "content": "Capital of France?"}]},
            context={
                "memory_mode": "none",
                "max_tool_calls": 0,
                "executor_max_tokens": 8,
                "judge_mode": "off",
                "memorise": False,
            },
        )
        assert [m["type"] for m in chat["messages"]] == ["human", "ai"], chat  # Studio's chat view: Q and A only
        assert chat["messages"][-1]["content"] == chat["answer"] and chat["question"] == "Capital of France?"
        assert "BlockingError" not in log.read_text()
