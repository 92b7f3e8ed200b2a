"""scripts/study_row.sh, the one way a study's run.sh runs a row: the eval's label and folder, the
commit a resumed study began on, and a usage message without a study."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "study_row.sh"


def dry_run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STUDY_ROW_DRY_RUN": "1"}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env, cwd=ROOT, check=False)


def test_a_row_is_a_frozen_eval_with_its_label_and_folder_on_the_commit_its_study_began_on(tmp_path: Path) -> None:
    first = tmp_path / "memory"
    first.mkdir()
    (first / "config.json").write_text(json.dumps({"code": {"commit": "a" * 40}}))
    out = dry_run("--commit-of", str(first), "results/s", "ttl", "--dataset", "2wiki", "--n", "3")
    assert out.returncode == 0, out.stderr
    checkpoint, frozen = out.stdout.splitlines()
    assert checkpoint == "scripts/checkpoint_run.sh results/s/ttl"
    assert frozen == (
        f"scripts/frozen_run.sh --commit {'a' * 40} results/s/ttl.log -- eval --dataset 2wiki --n 3 "
        "--label ttl --out results/s/ttl"
    )


def test_a_new_study_runs_the_checked_out_commit(tmp_path: Path) -> None:
    out = dry_run("--commit-of", str(tmp_path / "missing"), "results/s", "none", "--n", "1")
    assert out.returncode == 0 and "--commit" not in out.stdout


@pytest.mark.parametrize("args", [(), ("results/s",), ("--commit", "abc", "--n")])
def test_without_a_study_and_a_name_it_prints_its_usage(args: tuple[str, ...]) -> None:
    out = dry_run(*args)
    assert out.returncode == 2 and "One row of a study" in out.stdout


@pytest.mark.parametrize("run_sh", sorted(ROOT.glob("results/*/run.sh")), ids=lambda p: p.parent.name)
def test_every_study_script_parses_and_runs_its_rows_through_it(run_sh: Path) -> None:
    assert subprocess.run(["bash", "-n", str(run_sh)], check=False).returncode == 0
    code = [line for line in run_sh.read_text().splitlines() if not line.lstrip().startswith("#")]
    assert any("scripts/study_row.sh" in line for line in code)
    assert not any("frozen_run.sh" in line or "checkpoint_run.sh" in line for line in code)
