"""scripts/checkpoint_run.sh: a running evaluation's folder is committed after an answer, without
what .gitignore names (Chroma files, the index link, the progress log, locks, owner files, GGUF copies
of adapters), and once more when the run ends.

Real git, real bash, a real process whose command line names the run folder (as `mia eval --out`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("pgrep") is None, reason="needs git and pgrep"
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def test_commits_the_run_without_ignored_files_and_once_more_at_the_end(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("checkpoint_run.sh", "run_dir.sh"):
        shutil.copy(ROOT / "scripts" / name, repo / "scripts" / name)
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "start")

    run = f"results/r-{uuid.uuid4().hex[:8]}"
    store = repo / run / "store"
    (store / "memory").mkdir(parents=True)
    (store / "adapters" / "v0001").mkdir(parents=True)
    (repo / run / "results.jsonl").write_text('{"id": "q1"}\n')
    (repo / f"{run}.log").write_text("log\n")
    (store / "memory" / "trajectories.jsonl").write_text("{}\n")
    (store / "memory" / "chroma" / "0a1b").mkdir(parents=True)
    (store / "memory" / "chroma" / "chroma.sqlite3").write_bytes(b"db")
    (store / "memory" / "chroma" / "0a1b" / "data_level0.bin").write_bytes(b"hnsw")
    (store / "index").symlink_to(tmp_path, target_is_directory=True)
    for ignored in (
        ".lock",
        "store/memory/.mia-memory.lock",
        "store/memory/.mia-memory.owner",
        "store/adapters/v0001/adapter.0123abcd.gguf",
        "store/adapters/v0001/.adapter.gguf.lock",
    ):
        (repo / run / ignored).write_text("x")
    (store / "adapters" / "v0001" / "adapter_model.safetensors").write_bytes(b"weights")

    # the "evaluation": any process whose command line has `--out RUN`
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "--out", run], cwd=repo)
    checkpointer = subprocess.Popen(
        ["bash", "scripts/checkpoint_run.sh", run, "10"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    answers = 1

    def answer() -> None:
        nonlocal answers
        answers += 1
        with (repo / run / "results.jsonl").open("a") as fh:
            fh.write(f'{{"id": "q{answers}"}}\n')

    def checkpoints() -> str:
        return git(repo, "log", "--format=%s")

    try:
        # after one interval (10 s) it waits for the next answer: answer every 2 s until it commits
        end = time.monotonic() + 60
        while "checkpoint at" not in checkpoints() and time.monotonic() < end:
            answer()
            time.sleep(2)
        assert "checkpoint at" in checkpoints(), checkpoints()
        committed = set(git(repo, "ls-files", run, f"{run}.log").split())
        assert committed == {
            f"{run}/results.jsonl",
            f"{run}/store/memory/trajectories.jsonl",
            f"{run}/store/adapters/v0001/adapter_model.safetensors",
        }

        answer()
        writer.terminate()
        writer.wait(10)
        out, _ = checkpointer.communicate(timeout=60)  # the run is over: a last commit, then it ends
    finally:
        writer.kill()
        checkpointer.kill()
    assert checkpointer.returncode == 0, out
    assert f"checkpoint at {answers} answers" in git(repo, "log", "-1", "--format=%s")
    assert git(repo, "show", f"HEAD:{run}/results.jsonl").count("\n") == answers
