"""scripts/stop_at_boundary.sh: a running evaluation is stopped just after an answer, never half-way.

Real bash and a real process whose command line names the run folder (as `mia eval --out`), that
answers a "question" every second and, like `mia eval`, ends on SIGINT (KeyboardInterrupt)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("pgrep") is None, reason="needs pgrep")

# Appends one answer per second. On SIGINT it records how many answers it had written, so that the
# test can tell that nothing was written after the stop. The handler is installed explicitly, as the
# real entry point does: a process started in the background by a shell may inherit SIGINT ignored.
FAKE_EVAL = """
import json, signal, sys, time
from pathlib import Path
signal.signal(signal.SIGINT, signal.default_int_handler)
out = Path(sys.argv[sys.argv.index("--out") + 1])
n = 0
try:
    while True:
        time.sleep(1)
        with (out / "results.jsonl").open("a") as fh:
            fh.write(json.dumps({"id": f"q{n + 1}"}) + "\\n")
        n += 1
except KeyboardInterrupt:
    (out / "interrupted").write_text(str(n))
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    for name in ("stop_at_boundary.sh", "run_dir.sh"):
        shutil.copy(ROOT / "scripts" / name, tmp_path / "scripts" / name)
    return tmp_path


def stop_a_running_eval(repo: Path, run: str) -> subprocess.CompletedProcess[str]:
    """Start the fake eval writing `run`, stop it with the script; the script must succeed."""
    writer = subprocess.Popen([sys.executable, "-c", FAKE_EVAL, "--out", run], cwd=repo)
    try:
        stop = subprocess.run(
            ["bash", "scripts/stop_at_boundary.sh", run, "60"], cwd=repo, capture_output=True, text=True, timeout=180
        )
        writer.wait(10)  # it has ended (the script said so), so this only reaps it
    finally:
        writer.kill()
    assert stop.returncode == 0, stop.stdout + stop.stderr
    return stop


def test_stops_a_run_without_a_warmup_after_its_next_answer(repo: Path):
    run = f"results/r-{uuid.uuid4().hex[:8]}"  # unique: pgrep must find this test's process only
    (repo / run).mkdir(parents=True)  # no warmup/ folder: the case that once ended the script silently
    stop = stop_a_running_eval(repo, run)
    answered = (repo / run / "results.jsonl").read_text().count("\n")
    assert answered >= 1
    assert f"stopped after {answered} answers" in stop.stdout
    # SIGINT ended it (not SIGKILL), and nothing was written after the stop
    assert (repo / run / "interrupted").read_text() == str(answered)


def test_counts_a_warmups_answers_too(repo: Path):
    run = f"results/r-{uuid.uuid4().hex[:8]}"
    (repo / run / "warmup").mkdir(parents=True)
    (repo / run / "warmup" / "results.jsonl").write_text('{"id": "w1"}\n{"id": "w2"}\n')
    stop = stop_a_running_eval(repo, run)
    answered = (repo / run / "results.jsonl").read_text().count("\n")
    assert "waiting for question 3 " in stop.stdout
    assert f"stopped after {answered + 2} answers" in stop.stdout


def test_says_so_when_no_evaluation_writes_the_folder(repo: Path):
    run = f"results/r-{uuid.uuid4().hex[:8]}"
    stop = subprocess.run(
        ["bash", "scripts/stop_at_boundary.sh", run, "5"], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert stop.returncode == 1
    assert f"no running eval writes {run}" in stop.stderr
