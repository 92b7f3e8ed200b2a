"""llama.cpp's own `llama-server`, built natively from the same llama.cpp that xllamacpp vendors, for
the backends table of issue 41: is the in-process binding (xllamacpp) as fast as the project's own
server on the same GGUF, prompt and threads?

The build is cached per xllamacpp version and CPU signature under
`$MIA_DATA_DIR/native/llama-server-<version>-<cpu>/`, beside `mia models build-native`'s wheel, from
the installed xllamacpp version's source distribution (the package index only) with the same CMake
flags (`mia.graph.models.native.CMAKE_ARGS`: nothing is fetched during the build). It is a bench tool:
MIA serves models in process and never needs this binary.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import httpx

from mia.graph.models.native import CMAKE_ARGS, PACKAGE, NativeBuildError, cpu_signature, installed_version

#: Only the server: tests and examples would double the build time.
EXTRA_ARGS = "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"


def server_dir(data_dir: str | Path, version: str) -> Path:
    return Path(data_dir).expanduser() / "native" / f"llama-server-{version}-{cpu_signature()}"


def find_server(data_dir: str | Path) -> Path | None:
    """The native llama-server for this CPU and the installed xllamacpp version, if one was built."""
    version = installed_version()
    binary = server_dir(data_dir, version or "none") / "llama-server"
    return binary if version and binary.is_file() and os.access(binary, os.X_OK) else None


def build_server(data_dir: str | Path, jobs: int | None = None, log: Path | None = None) -> Path:
    """Compile llama-server from the installed xllamacpp version's vendored llama.cpp (cached)."""
    if (found := find_server(data_dir)) is not None:
        return found
    version = installed_version()
    if version is None:
        raise NativeBuildError(f"{PACKAGE} is not installed: pip install {PACKAGE}")
    folder = server_dir(data_dir, version)
    folder.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix=".llama-server.", dir=folder.parent) as tmp,
        log.open("ab") if log else open(os.devnull, "wb") as out,
    ):
        work = Path(tmp)
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(work)]
        subprocess.run([*pip, f"{PACKAGE}=={version}"], stdout=out, stderr=subprocess.STDOUT, check=True)
        with tarfile.open(next(work.glob(f"{PACKAGE}-*.tar.gz"))) as sdist:
            sdist.extractall(work, filter="data")
        source = next(work.glob(f"{PACKAGE}-*/thirdparty/llama.cpp"))
        build = work / "build"
        flags = [*CMAKE_ARGS.split(), *EXTRA_ARGS.split(), "-DCMAKE_BUILD_TYPE=Release"]
        for command in (
            ["cmake", "-S", str(source), "-B", str(build), *flags],
            ["cmake", "--build", str(build), "-j", str(jobs or os.cpu_count() or 1), "--target", "llama-server"],
        ):
            if subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False).returncode != 0:
                raise NativeBuildError(f"{' '.join(command[:2])} failed; see {log or 'the build output'}")
        install(build / "bin", data_dir, " ".join(flags), time.perf_counter() - started)
    return folder / "llama-server"


def install(bin_dir: Path, data_dir: str | Path, cmake_args: str, seconds: float | None) -> Path:
    """Copy a finished build's llama-server (and its shared libraries) into the cache folder."""
    version = installed_version() or "none"
    folder = server_dir(data_dir, version)
    staged = folder.parent / f".{folder.name}.staging"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    shutil.copy2(bin_dir / "llama-server", staged / "llama-server")
    for lib in bin_dir.glob("*.so*"):  # a shared-library build keeps its libraries beside it
        shutil.copy2(lib, staged / lib.name, follow_symlinks=True)
    manifest = {"version": version, "signature": cpu_signature(), "cmake_args": cmake_args, "seconds": seconds}
    (staged / "build.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    if folder.exists():
        shutil.rmtree(folder)
    staged.rename(folder)
    return folder / "llama-server"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_server(binary: Path, gguf: Path, threads: int, prompts: list[str], gen: int) -> dict:
    """Prompt and generation speed from llama-server's own timings, with the requests and settings
    bench_backends.bench_llamacpp sends xllamacpp (8,192 context, 4 slots, no prompt cache)."""
    port = _free_port()
    command = [str(binary), "-m", str(gguf), "-c", "8192", "-np", "4", "-t", str(threads), "-tb", str(threads)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-warmup"]
    env = {**os.environ, "LD_LIBRARY_PATH": f"{binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=600) as client:
            for _ in range(600):
                if proc.poll() is not None:
                    raise RuntimeError(f"llama-server exited with {proc.returncode}")
                try:
                    if client.get("/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.5)
            client.post("/completion", json={"prompt": "Hello", "n_predict": 4, "temperature": 0})
            pp, tg, prompt_n = [], [], 0
            for prompt in prompts:
                body = {"prompt": prompt, "n_predict": gen, "temperature": 0, "ignore_eos": True}
                timings = client.post("/completion", json={**body, "cache_prompt": False}).json()["timings"]
                pp.append(timings["prompt_n"] / (timings["prompt_ms"] / 1000))
                tg.append(timings["predicted_n"] / (timings["predicted_ms"] / 1000))
                prompt_n = timings["prompt_n"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {
        "backend": "llama-server (native)",
        "threads": threads,
        "prompt_tokens": prompt_n,
        "prompt_tok_s": statistics.fmean(pp),
        "gen_tok_s": statistics.fmean(tg),
    }
