"""`mia doctor` offline: a real subprocess, exit 0 with the defaults, exit 1 naming the variable
when a configured role cannot run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mia.app.doctor import collect
from mia.app.settings import Settings


def _run(env_extra: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"HF_HUB_OFFLINE": "1", "COLUMNS": "200", **env_extra})
    return subprocess.run(
        [sys.executable, "-m", "mia.app.cli", "doctor", "--no-device"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def test_doctor_offline_defaults(data_dir: Path, tmp_path: Path) -> None:
    done = _run({"MIA_DATA_DIR": str(data_dir)}, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for text in (
        "Roles",
        "planner",
        "llamacpp:qwen-coder-1.5b",
        "transformers",
        "xllamacpp",
        "langchain-core",
        "qwen-coder-1.5b GGUF",
        "assembled",
        "All configured roles can run",
    ):
        assert text in out, text


def test_doctor_on_an_empty_data_dir_says_how_to_fetch(tmp_path: Path) -> None:
    done = _run({"MIA_DATA_DIR": str(tmp_path / "data")}, tmp_path)
    assert done.returncode == 1
    assert "mia models fetch qwen-coder-1.5b" in done.stdout.replace("\n", " ")


def test_doctor_fails_when_a_role_cannot_run(data_dir: Path, tmp_path: Path) -> None:
    done = _run({"MIA_DATA_DIR": str(data_dir), "MIA_JUDGE_MODEL": "openai:gpt-4o-mini"}, tmp_path)
    assert done.returncode == 1
    assert "OPENAI_API_KEY is not set" in done.stdout and "Unusable roles: judge" in done.stdout


def test_report_sees_a_converted_model(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mia.graph.models.convert import ensure_converted

    ensure_converted("smollm2", data_dir)
    report = collect(Settings(data_dir=data_dir), probe_device=False)
    row = next(c for c in report.paths if c.name == "smollm2 GGUF")
    assert "de-quantised for training" in row.detail
    assert report.ok and {c.name for c in report.roles} == {"planner", "executor", "manager", "judge"}
    versions = {c.name: c.value for c in report.packages}
    assert versions["langgraph"] not in ("", "-")


def test_doctor_shows_a_long_path_whole_in_80_columns(tmp_path: Path) -> None:
    """Issue 39: paths were cut at 80 columns ("/tmp/.../long…"), so the one thing to fix was hidden."""
    data = tmp_path / ("a-data-folder-with-a-long-name-" * 3) / "data"
    done = _run({"MIA_DATA_DIR": str(data), "COLUMNS": "80"}, tmp_path)
    # the second column of every table row, its folded lines joined back
    column = "".join(
        cells[2].strip() for cells in (line.split("│") for line in done.stdout.splitlines()) if len(cells) > 3
    )
    assert "…" not in done.stdout and str(data) in column, done.stdout
