"""Which llama.cpp build `llamacpp:` loads (mia.graph.models.native): this CPU's native build when
one was made for it and for the installed xllamacpp version, else the prebuilt wheel; a build for
another CPU or version is never loaded, and MIA_LLAMACPP_BUILD chooses. Each case imports in a fresh
process, with a stand-in xllamacpp package in the build folder (building one takes minutes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mia.graph.models.native import (
    MANIFEST,
    NativeBuildError,
    build_dir,
    cpu_signature,
    find_build,
    installed_version,
    unused_features,
    use_native,
)

VERSION = installed_version()
pytestmark = pytest.mark.skipif(VERSION is None, reason="xllamacpp is not installed")

LOAD = (
    "from mia.graph.models.servers import import_xllamacpp; from mia.graph.models.native import loaded_build; "
    "m = import_xllamacpp(); print(loaded_build(m), getattr(m, 'STAND_IN', False))"
)


def make_build(data_dir: Path, *, version: str | None = None, signature: str | None = None) -> Path:
    """A build folder as `mia models build-native` leaves it, holding a stand-in xllamacpp."""
    folder = build_dir(data_dir, version or str(VERSION), signature)
    package = folder / "site" / "xllamacpp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("STAND_IN = True\n")
    manifest = {"version": version or VERSION, "signature": signature or cpu_signature(), "seconds": 1.0}
    (folder / MANIFEST).write_text(json.dumps(manifest))
    return folder


def load(data_dir: Path, mode: str) -> str:
    env = {"MIA_DATA_DIR": str(data_dir), "MIA_LLAMACPP_BUILD": mode, "PATH": "/usr/bin:/bin", "HOME": str(data_dir)}
    done = subprocess.run([sys.executable, "-c", LOAD], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 or "MIA_LLAMACPP_BUILD=native" in done.stderr, done.stderr[-2000:]
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def test_the_native_build_for_this_cpu_is_loaded(tmp_path: Path) -> None:
    make_build(tmp_path)
    assert load(tmp_path, "auto") == "native True"
    assert load(tmp_path, "prebuilt") == "prebuilt False"  # the switch still reaches the wheel


@pytest.mark.parametrize("other", ["version", "cpu", "missing"])
def test_a_build_for_another_cpu_or_version_falls_back_to_the_prebuilt_wheel(tmp_path: Path, other: str) -> None:
    if other == "version":
        make_build(tmp_path, version="0.0.1")
    elif other == "cpu":
        make_build(tmp_path, signature="x86_64-000000000000")
    assert find_build(tmp_path) is None
    assert load(tmp_path, "auto") == "prebuilt False"


def test_native_required_without_a_build_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(NativeBuildError, match="mia models build-native"):
        use_native(tmp_path, "native")
    assert "run `mia models build-native`" in load(tmp_path, "native")


def test_a_build_folder_without_its_package_is_not_used(tmp_path: Path) -> None:
    folder = make_build(tmp_path)
    (folder / "site" / "xllamacpp" / "__init__.py").unlink()
    (folder / "site" / "xllamacpp").rmdir()
    assert find_build(tmp_path) is None


def test_the_signature_follows_the_cpu_flags() -> None:
    assert cpu_signature(frozenset({"avx2", "fma"})) == cpu_signature(frozenset({"fma", "avx2"}))
    assert cpu_signature(frozenset({"avx2"})) != cpu_signature(frozenset({"avx2", "avx512f"}))
    assert unused_features(frozenset({"avx2", "fma", "avx512f", "avx512_vnni"})) == ["avx512f", "avx512_vnni"]
    assert unused_features(frozenset({"avx2", "fma", "f16c"})) == []


def test_doctor_says_which_build_and_what_the_prebuilt_leaves_unused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mia.app import doctor
    from mia.app.settings import get_settings

    monkeypatch.setenv("MIA_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        row = next(
            c for c in doctor.collect(get_settings(), probe_device=False).backends if c.name == "llama.cpp build"
        )
        assert row.value == "prebuilt" and row.ok and "weight repacking on (MIA_LLAMACPP_REPACK=auto)" in row.detail
        make_build(tmp_path)
        row = next(
            c for c in doctor.collect(get_settings(), probe_device=False).backends if c.name == "llama.cpp build"
        )
        assert row.value == "native" and str(tmp_path) in row.detail and "weight repacking off" in row.detail
    finally:
        get_settings.cache_clear()
