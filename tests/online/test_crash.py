"""A learner SIGKILLed in the middle of a training step loses no episode: a new process resumes
from the queue file and the cursor, and learns the interrupted batch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def spawn(folder: Path, mode: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "tests.online.learner_proc", str(folder), mode], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_killed_learner_restarts_from_its_saved_episodes(tmp_path) -> None:
    proc = spawn(tmp_path, "hang")
    deadline = time.monotonic() + 120
    while not (tmp_path / "in_step").exists():
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "the learner never reached its second training step"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert (tmp_path / "in_step").read_text() == "e2,e3"
    learned = [json.loads(line) for line in (tmp_path / "learned.jsonl").read_text().splitlines()]
    assert learned == [["e0", "e1"]]
    cursor = json.loads((tmp_path / "online" / "cursor.json").read_text())["consumed"]
    assert cursor == 2  # the interrupted batch was not marked learned
    episodes = (tmp_path / "online" / "episodes.jsonl").read_text().splitlines()
    assert len(episodes) == 4

    again = spawn(tmp_path, "resume")
    out, _ = again.communicate(timeout=120)
    assert again.returncode == 0, out
    assert "drained 4" in out, out
    learned = [json.loads(line) for line in (tmp_path / "learned.jsonl").read_text().splitlines()]
    assert learned == [["e0", "e1"], ["e2", "e3"]]
    registry = json.loads((tmp_path / "adapters" / "registry.json").read_text())
    assert registry["current"] == "v0002"
