#!/usr/bin/env python
"""Write one small store per memory layout an earlier mia wrote (issue 42.3), as fixtures.

    python tests/memory/layouts/make_layouts.py [COMMIT ...]     (default: LAYOUTS below)

Each commit's package is installed from `git archive` into a temporary folder (no dependencies: this
checkout's .venv provides them) and writes, with its own code, a store holding two memories of
opposite outcomes and their trajectory log; the folder is packed as `<date>-<commit>.tar.gz` here,
without lock files. `tests/memory/test_store_layouts.py` opens every fixture with today's code.
Needs the embedded MiniLM (`mia models fetch minilm`) and the repository's history.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
#: Commits whose store writes differ: the first store with its CLI, image captions in records and
#: retrieval, the trajectory index moved out of the store, one HNSW sync threshold, the store split.
LAYOUTS = ("9e3d944", "0cbda41", "93ed1c1", "4c06b83", "6db4124")
WRITE = """
import sys
from mia.memory import MemoryStore, Trajectory, TrajectoryStep

with MemoryStore.open(sys.argv[1]) as st:
    for question, outcome in (
        ("Which river is longer, the Danube or the Rhine?", "correct"),
        ("Who directed the film The Duel (2010)?", "incorrect"),
    ):
        st.memorise(Trajectory(
            question=question, plan="1. Search both names.\\n2. Compare them.", answer="the Danube", outcome=outcome,
            steps=[TrajectoryStep(kind="tool_call", tool="search", args={"query_list": [question]}),
                   TrajectoryStep(kind="observation", content="The Danube is 2,850 km long."),
                   TrajectoryStep(kind="answer", content="the Danube")],
        ))
"""


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def write_layout(commit: str) -> Path:
    sha = git("rev-parse", "--verify", f"{commit}^{{commit}}")[:7]
    date = git("show", "-s", "--format=%ad", "--date=short", sha)
    with tempfile.TemporaryDirectory() as tmp:
        src, pkg, store = Path(tmp, "src"), Path(tmp, "pkg"), Path(tmp, "store")
        src.mkdir()
        archive = subprocess.run(["git", "archive", sha], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "--no-compile",
                "--target",
                str(pkg),
                str(src),
            ],
            check=True,
        )
        env = {"PYTHONPATH": str(pkg), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
        env.update({k: v for k, v in os.environ.items() if k.startswith(("MIA_", "HOME"))})
        subprocess.run([sys.executable, "-P", "-c", WRITE, str(store)], env=env, check=True)
        out = HERE / f"{date}-{sha}.tar.gz"
        with tarfile.open(out, "w:gz") as tar:
            tar.add(store, arcname="store", filter=lambda info: None if info.name.endswith(".lock") else info)
    return out


if __name__ == "__main__":
    for commit in sys.argv[1:] or LAYOUTS:
        print(write_layout(commit))
