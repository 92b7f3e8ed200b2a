"""A llama.cpp build for this CPU: xllamacpp compiled with native optimisation, cached per CPU.

Why: the prebuilt xllamacpp wheel is built for portability (AVX2 and FMA, `GGML_NATIVE=OFF`), so a
CPU with AVX-512, VNNI or AMX leaves them unused; a self-build measured 1.30x on prompt processing
on an AVX-512 machine (issue 41), and prompt processing is nearly all of an agent's cost. Building
takes minutes and needs a compiler, so it is never implicit: `mia models build-native` builds the
installed xllamacpp version from its source distribution (the package index only: the flags below
turn off everything that would fetch), installs it under `$MIA_DATA_DIR/native/<version>-<cpu>/`,
and `import_xllamacpp` loads it from there when it matches this CPU and the installed version;
otherwise the prebuilt wheel, as before. `MIA_LLAMACPP_BUILD` = auto (that choice), prebuilt, or
native (a missing build is then an error that says how to make it).
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mia.graph.models.errors import BackendError

PACKAGE = "xllamacpp"
#: No network during the build beyond the package index (issue 41: BoringSSL and curl would download).
CMAKE_ARGS = "-DGGML_NATIVE=ON -DLLAMA_BUILD_BORINGSSL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DLLAMA_LLGUIDANCE=OFF"
#: The prebuilt Linux wheel's instruction sets; a CPU flag beyond these is left unused by it.
PREBUILT_FEATURES = frozenset({"sse4_2", "avx", "avx2", "fma", "f16c"})
SPEEDUPS = (
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx_vnni",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)
MANIFEST = "build.json"


class NativeBuildError(BackendError):
    """A native build that cannot be made or used (one line saying why and what to do): a backend
    error, so a run that requires it stops on it as on a missing key."""


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo; elsewhere none are known)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def cpu_signature(flags: frozenset[str] | None = None) -> str:
    """Names what a native build depends on: the machine type and the CPU's feature flags (two CPU
    models with the same flags run the same code)."""
    found = cpu_flags() if flags is None else flags
    digest = hashlib.sha256(" ".join(sorted(found)).encode()).hexdigest()[:12]
    return f"{platform.machine() or 'cpu'}-{digest}"


def unused_features(flags: frozenset[str] | None = None) -> list[str]:
    """The speed-relevant instruction sets this CPU has and the prebuilt wheel does not use."""
    found = cpu_flags() if flags is None else flags
    return [f for f in SPEEDUPS if f in found and f not in PREBUILT_FEATURES]


def installed_version() -> str | None:
    try:
        return md.version(PACKAGE)
    except md.PackageNotFoundError:
        return None


def build_dir(data_dir: str | Path, version: str, signature: str | None = None) -> Path:
    return Path(data_dir).expanduser() / "native" / f"{PACKAGE}-{version}-{signature or cpu_signature()}"


@dataclass(frozen=True)
class NativeBuild:
    """A finished build: where its package lies and what it was built for."""

    folder: Path
    version: str
    signature: str
    seconds: float

    @property
    def site(self) -> Path:
        return self.folder / "site"


def find_build(data_dir: str | Path, version: str | None = None) -> NativeBuild | None:
    """The native build for this CPU and the installed xllamacpp version, if one was made."""
    version = version or installed_version()
    if version is None:
        return None
    folder = build_dir(data_dir, version)
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    build = NativeBuild(
        folder, str(manifest.get("version")), str(manifest.get("signature")), float(manifest.get("seconds") or 0)
    )
    if build.version != version or build.signature != cpu_signature() or not (build.site / PACKAGE).is_dir():
        return None
    return build


def selected_build(data_dir: str | Path, mode: str) -> NativeBuild | None:
    """The native build `mode` (MIA_LLAMACPP_BUILD) selects: None for "prebuilt", or when there is
    none for this CPU and version (the prebuilt wheel is used). The one rule the loader, `mia doctor`
    and a run's config share."""
    return None if mode == "prebuilt" else find_build(data_dir)


def use_native(data_dir: str | Path, mode: str) -> NativeBuild | None:
    """Put the native build first on sys.path when `mode` asks for it ("auto": when one exists,
    "native": it must) and xllamacpp is not imported yet; the build used, or None (prebuilt)."""
    build = selected_build(data_dir, mode)
    if build is None:
        if mode == "native":
            raise NativeBuildError(
                f"MIA_LLAMACPP_BUILD=native, but there is no native build for this CPU and {PACKAGE} "
                f"{installed_version()} in {Path(data_dir).expanduser() / 'native'}: run `mia models build-native` "
                "(minutes; needs a C++ compiler and cmake), or set MIA_LLAMACPP_BUILD=auto"
            )
        return None
    if PACKAGE not in sys.modules and str(build.site) not in sys.path:
        sys.path.insert(0, str(build.site))
    return build


def loaded_build(module: Any) -> str:
    """ "native" when the imported xllamacpp comes from a native build folder, else "prebuilt"."""
    path = Path(getattr(module, "__file__", "") or "")
    return "native" if any((folder / MANIFEST).is_file() for folder in path.parents[:4]) else "prebuilt"


def build_native(data_dir: str | Path, *, jobs: int | None = None, force: bool = False, log: Any = None) -> NativeBuild:
    """Compile the installed xllamacpp version for this CPU and install it in its build folder.
    The folder appears only when the build succeeded (built in a temporary folder beside it)."""
    version = installed_version()
    if version is None:
        raise NativeBuildError(f"{PACKAGE} is not installed: pip install {PACKAGE}")
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise NativeBuildError(f"a native build needs {tool} on PATH (Debian: apt install cmake g++)")
    folder = build_dir(data_dir, version)
    if not force and (existing := find_build(data_dir, version)) is not None:
        return existing
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs or os.cpu_count() or 1)}
    started = time.perf_counter()
    try:
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-binary",
                PACKAGE,
                "-w",
                str(work / "wheel"),
                f"{PACKAGE}=={version}",
            ],
            env,
            log,
        )
        wheels = list((work / "wheel").glob(f"{PACKAGE}-*.whl"))
        if not wheels:
            raise NativeBuildError("pip built no wheel")
        _run(
            [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(work / "site"), str(wheels[0])],
            env,
            log,
        )
        manifest = {
            "version": version,
            "signature": cpu_signature(),
            "cmake_args": CMAKE_ARGS,
            "seconds": round(time.perf_counter() - started, 1),
            "features": sorted(cpu_flags() & (PREBUILT_FEATURES | set(SPEEDUPS))),
        }
        shutil.rmtree(work / "wheel", ignore_errors=True)
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)
        work.rename(folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    build = find_build(data_dir, version)
    if build is None:
        raise NativeBuildError(f"the build finished but {folder} does not hold a usable {PACKAGE}")
    return build


def _run(command: list[str], env: dict[str, str], log: Any) -> None:
    done = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT if log else None, check=False)
    if done.returncode != 0:
        raise NativeBuildError(f"{' '.join(command[2:4])} failed (exit {done.returncode}); its output says why")


__all__ = [
    "NativeBuild",
    "NativeBuildError",
    "build_native",
    "cpu_flags",
    "cpu_signature",
    "find_build",
    "loaded_build",
    "selected_build",
    "unused_features",
    "use_native",
]
