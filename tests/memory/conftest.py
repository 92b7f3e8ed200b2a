"""Fixtures for the memory tests: the real MiniLM embedder, stores on disk, a real Chroma server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mia.memory import MemoryStore, Trajectory, TrajectoryStep

CHROMA = Path(sys.executable).with_name("chroma")


@pytest.fixture(scope="session")
def embedder():
    from mia.memory.embeddings import default_embedder

    emb = default_embedder()
    emb.embed_query("warm up")  # load once per session
    return emb


@pytest.fixture()
def store(tmp_path, embedder):
    st = MemoryStore.open(tmp_path / "memory", embedder=embedder)
    yield st
    st.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real `chroma run` server on a free port, for the whole session."""
    if not CHROMA.exists() and shutil.which("chroma") is None:
        pytest.skip("the chroma CLI is not installed")
    path = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen(
        [str(CHROMA if CHROMA.exists() else "chroma"), "run", "--path", str(path), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        env=env,
    )
    import httpx

    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://localhost:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the Chroma server did not start")
        time.sleep(0.2)
    yield {"host": "localhost", "port": port, "path": path}
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def make_trajectory(
    question: str,
    outcome: str = "correct",
    namespace: str = "default",
    answer: str = "42",
    queries: tuple[str, ...] = ("first query",),
    observation: str = "Some evidence text.",
) -> Trajectory:
    steps = []
    for query in queries:
        steps += [
            TrajectoryStep(kind="thought", content=f"I should search for {query}."),
            TrajectoryStep(kind="tool_call", tool="search", args={"query_list": [query]}),
            TrajectoryStep(kind="observation", content=observation),
        ]
    steps.append(TrajectoryStep(kind="answer", content=answer))
    return Trajectory(
        question=question,
        namespace=namespace,
        plan="1. Search for the entities.\n2. Compare.",
        steps=steps,
        answer=answer,
        outcome=outcome,
        judge_feedback="matches the gold answer" if outcome == "correct" else "wrong entity",
        gold_answers=[answer],
        source="test-run",
        dataset="unit",
    )


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run code in a fresh interpreter (another process) with the test environment."""
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, env={**os.environ}
    )
