"""scripts/study_row.sh, the one way a study's run.sh and the ladder run a row: the frozen eval with
its label and folder, the checkpointing beside it, the commit a resumed row began on, and a usage
message without a study. The two scripts it calls are replaced by recorders (its own variables)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "study_row.sh"


def row(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the script with recorders that write their arguments to tmp_path/<name>.args."""
    for name in ("frozen", "checkpoint"):
        fake = tmp_path / name
        fake.write_text(f'#!/usr/bin/env bash\necho "$*" > {tmp_path / name}.args\n')
        fake.chmod(0o755)
    env = {
        **os.environ,
        "STUDY_ROW_FROZEN": str(tmp_path / "frozen"),
        "STUDY_ROW_CHECKPOINT": str(tmp_path / "checkpoint"),
    }
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env, cwd=ROOT, check=False)


def recorded(tmp_path: Path, name: str) -> str:
    path = tmp_path / f"{name}.args"
    for _ in range(50):  # the checkpointer runs in the background
        if path.is_file():
            return path.read_text().strip()
        time.sleep(0.1)
    raise AssertionError(f"{name} never ran")


def test_a_row_is_a_checkpointed_frozen_eval_on_the_commit_its_study_began_on(tmp_path: Path) -> None:
    first = tmp_path / "memory"
    first.mkdir()
    (first / "config.json").write_text(json.dumps({"code": {"commit": "a" * 40}}))
    study = tmp_path / "s"
    done = row(tmp_path, "--commit-of", str(first), str(study), "ttl", "--dataset", "2wiki", "--n", "3")
    assert done.returncode == 0, done.stderr
    assert recorded(tmp_path, "frozen") == (
        f"--commit {'a' * 40} {study}/ttl.log -- eval --dataset 2wiki --n 3 --label ttl --out {study}/ttl"
    )
    assert recorded(tmp_path, "checkpoint") == f"{study}/ttl"
    assert (study / "checkpoints.log").is_file()


def test_a_new_row_runs_the_checked_out_commit(tmp_path: Path) -> None:
    done = row(tmp_path, "--commit-of", str(tmp_path / "missing"), str(tmp_path / "s"), "none", "--n", "1")
    assert done.returncode == 0 and recorded(tmp_path, "frozen").startswith(f"{tmp_path}/s/none.log -- eval --n 1")


@pytest.mark.parametrize("args", [(), ("results/s",), ("--commit", "abc", "--n")])
def test_without_a_study_and_a_name_it_prints_its_usage(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = row(tmp_path, *args)
    assert done.returncode == 2 and "One row of a study" in done.stdout
    assert not (tmp_path / "frozen.args").exists()


@pytest.mark.parametrize("run_sh", sorted(ROOT.glob("results/*/run.sh")), ids=lambda p: p.parent.name)
def test_every_study_script_parses_and_runs_its_rows_through_it(run_sh: Path) -> None:
    assert subprocess.run(["bash", "-n", str(run_sh)], check=False).returncode == 0
    code = [line for line in run_sh.read_text().splitlines() if not line.lstrip().startswith("#")]
    assert any("scripts/study_row.sh" in line for line in code)
    assert not any("frozen_run.sh" in line or "checkpoint_run.sh" in line for line in code)
