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
    return subprocess.Popen(
        [sys.executable, "-m", "tests.online.learner_proc", str(folder), mode],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


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


def test_ctrl_c_during_a_real_batch_stops_the_learner_and_exits_cleanly(tmp_path) -> None:
    """Ctrl-C while the learner samples plans on the real embedded model: close() returns in
    seconds (the sampling is cut at the next token), the process exits normally (the learner
    thread used to run on into interpreter shutdown and abort it: "terminate called without an
    active exception"), and the episode stays pending for the next run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.online.interrupt_proc", str(tmp_path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not (tmp_path / "in_batch").exists():
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "the learner never started its batch"
        time.sleep(0.05)
    time.sleep(2.0)  # well inside a sampling forced to thousands of tokens
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, out
    assert "terminate called" not in out, out
    report = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    assert report["closed"] is True and report["close_s"] < 30, report
    assert (report["cursor"], report["pending"], report["current"]) == (0, 1, "base"), report
    assert report["last_error"] is None, report
