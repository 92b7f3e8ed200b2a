"""Which code produced a run: the package version and, in a git checkout, its commit.

Why: a resumable evaluation can span sessions and commits; a figure is only reproducible when the
run folder says what code wrote each part of it. Read once per run, never per question.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent  # the project root when installed editable from a checkout


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(_ROOT), *args], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def code_version() -> dict[str, Any]:
    """{"version", "commit", "dirty"}: commit and dirty are None outside a git checkout (a wheel)."""
    from mia import __version__

    commit = _git("rev-parse", "HEAD") if (_ROOT / ".git").exists() else None
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"version": __version__, "commit": commit, "dirty": bool(status) if status is not None else None}
