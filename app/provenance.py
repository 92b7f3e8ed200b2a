"""Which code produced a run: the package version and, in a git checkout, its commit.

Why: a resumable evaluation can span sessions and commits; a figure is only reproducible when the
run folder says what code wrote each part of it. Read once per run, never per question.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent  # the project root when installed editable from a checkout
#: In a copy of the code archived from one commit (scripts/frozen_run.sh), the file naming that commit.
FROZEN_MARKER = "CODE_COMMIT"


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(_ROOT), *args], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def code_version() -> dict[str, Any]:
    """{"version", "commit", "dirty"}: commit and dirty are None outside a git checkout (a wheel),
    except in a frozen copy (`git archive` of one commit), whose CODE_COMMIT file names it."""
    from mia import __version__

    if not (_ROOT / ".git").exists():
        marker = _ROOT / FROZEN_MARKER
        frozen = marker.read_text(encoding="utf-8").strip() if marker.is_file() else ""
        return {"version": __version__, "commit": frozen or None, "dirty": False if frozen else None}
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"version": __version__, "commit": commit, "dirty": bool(status) if status is not None else None}


def llamacpp_build() -> dict[str, Any]:
    """Which llama.cpp build a `llamacpp:` role of this process loads (a run's config records it, so
    seconds are compared build to build): {"build", "xllamacpp", "cpu", "threads", "repack", "spec"}
    (spec: the speculative decoding, off or "TYPE:N:M", N and M empty for llama.cpp's own)."""
    from mia.app.settings import get_settings
    from mia.graph.models.native import cpu_signature, installed_version, selected_build
    from mia.graph.models.servers import repack_weights

    settings = get_settings()
    native = selected_build(settings.data_dir, settings.llamacpp_build)
    return {
        "build": "prebuilt" if native is None else "native",
        "xllamacpp": installed_version(),
        "cpu": cpu_signature(),
        "threads": settings.llamacpp_threads,
        "repack": repack_weights(settings.llamacpp_repack, native is not None),
        "spec": (
            settings.llamacpp_spec
            if settings.llamacpp_spec == "off"
            else f"{settings.llamacpp_spec}:{settings.llamacpp_spec_n or ''}:{settings.llamacpp_spec_m or ''}"
        ),
    }
