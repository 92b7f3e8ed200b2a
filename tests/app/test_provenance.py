"""Provenance of a run: the commit of the checkout the package runs from (nothing made up outside
one), and the llama.cpp build and settings its seconds depend on."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mia import __version__
from mia.app import provenance


def test_in_this_checkout_the_commit_is_gits_head() -> None:
    root = Path(provenance.__file__).resolve().parent.parent
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    got = provenance.code_version()
    assert got["version"] == __version__
    if head.returncode != 0:  # a copy without .git (a wheel, an archive)
        assert got["commit"] is None and got["dirty"] is None
    else:
        assert got["commit"] == head.stdout.strip() and isinstance(got["dirty"], bool)


def test_outside_a_checkout_commit_and_dirty_are_unknown(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(provenance, "_ROOT", tmp_path)
    assert provenance.code_version() == {"version": __version__, "commit": None, "dirty": None}


def test_a_git_checkout_with_a_change_is_dirty(tmp_path: Path, monkeypatch) -> None:
    run = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (tmp_path / "f.txt").write_text("one\n")
    run("add", "f.txt")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    monkeypatch.setattr(provenance, "_ROOT", tmp_path)
    clean = provenance.code_version()
    assert len(clean["commit"]) == 40 and clean["dirty"] is False
    (tmp_path / "f.txt").write_text("two\n")
    assert provenance.code_version()["dirty"] is True


def test_a_frozen_copy_names_the_commit_it_was_archived_from(tmp_path: Path, monkeypatch) -> None:
    """scripts/frozen_run.sh runs a `git archive` of one commit: no .git, a CODE_COMMIT file."""
    (tmp_path / provenance.FROZEN_MARKER).write_text("c41be4d8e14ba32efc3942cc3d62fe215ed5938f\n")
    monkeypatch.setattr(provenance, "_ROOT", tmp_path)
    assert provenance.code_version() == {
        "version": __version__,
        "commit": "c41be4d8e14ba32efc3942cc3d62fe215ed5938f",
        "dirty": False,
    }


@pytest.mark.parametrize(
    ("env", "spec"),
    [({}, "off"), ({"MIA_LLAMACPP_SPEC": "ngram-mod", "MIA_LLAMACPP_SPEC_N": "4"}, "ngram-mod:4:")],
)
def test_a_runs_llamacpp_record_says_whether_it_speculated(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], spec: str
) -> None:
    """Seconds are compared between runs that decoded alike: the record names the speculation."""
    for name in ("MIA_LLAMACPP_SPEC", "MIA_LLAMACPP_SPEC_N", "MIA_LLAMACPP_SPEC_M"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert provenance.llamacpp_build()["spec"] == spec
