"""The on-disk index cache: `$MIA_DATA_DIR/index/<name>-<content-hash>/`.

Why atomic: indexing the demo corpus takes minutes on a laptop CPU, and a crash (or two processes
indexing at once) must never leave a half-written folder that later loads as a broken index. A
build is written into a hidden temp folder next to the target and renamed into place; `meta.json`
is written last, and a folder that fails any check on load is treated as corrupt and rebuilt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mia.memory import config

from mia.graph.tools.paragraphs import INDEX_FORMAT_VERSION, Paragraph, read_json, write_json

META = "meta.json"
EMBEDDINGS = "embeddings.npy"
BM25_DIR = "bm25"
PARAGRAPHS = "paragraphs.json"


class CorruptIndexError(RuntimeError):
    """A cache folder exists but cannot be loaded (missing file, bad shape, unreadable JSON...)."""


def data_dir(explicit: str | Path | None = None) -> Path:
    """`explicit`, else MIA_DATA_DIR (environment or .env), else ~/.local/share/mia."""
    return config.data_dir(explicit)


def safe_name(name: str) -> str:
    """A corpus name usable as a folder-name prefix (no separators, no dots at the start)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name.strip()).strip(".-")
    return cleaned or "corpus"


def index_root(data: str | Path | None = None) -> Path:
    return data_dir(data) / "index"


def index_dir(name: str, digest: str, data: str | Path | None = None) -> Path:
    return index_root(data) / f"{safe_name(name)}-{digest}"


@dataclass
class LoadedIndex:
    """What a cache folder holds once checked."""

    meta: dict[str, Any]
    embeddings: np.ndarray
    bm25: Any
    paragraphs: list[Paragraph] | None  # None unless asked for (the caller may have them already)


def save(target: Path, *, paragraphs: list[Paragraph], embeddings: np.ndarray, bm25: Any, meta: dict[str, Any]) -> Path:
    """Write an index into a temp folder and rename it to `target`; if another process got there
    first, keep theirs (same content hash, so same content) and drop ours."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".tmp-{target.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        np.save(tmp / EMBEDDINGS, np.ascontiguousarray(embeddings, dtype=np.float32))
        if bm25 is not None:
            bm25.save(str(tmp / BM25_DIR), show_progress=False)
        write_json(paragraphs, tmp / PARAGRAPHS)
        full_meta = {
            **meta,
            "format": INDEX_FORMAT_VERSION,
            "count": len(paragraphs),
            "dim": int(embeddings.shape[1]),
            "bm25": bm25 is not None,
            "created": time.time(),
        }
        (tmp / META).write_text(json.dumps(full_meta, indent=2), encoding="utf-8")
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / META).is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # lost the race to an identical index
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def load(folder: Path, *, with_paragraphs: bool = False) -> LoadedIndex:
    """Load and check a cache folder; raises CorruptIndexError with the reason on any problem."""
    import bm25s

    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
        if meta.get("format") != INDEX_FORMAT_VERSION:
            raise CorruptIndexError(f"index format {meta.get('format')!r}, expected {INDEX_FORMAT_VERSION}")
        count = int(meta["count"])
        embeddings = np.load(folder / EMBEDDINGS, allow_pickle=False)
        if embeddings.shape != (count, int(meta["dim"])) or embeddings.dtype != np.float32:
            raise CorruptIndexError(f"embeddings have shape {embeddings.shape}, expected ({count}, {meta['dim']})")
        bm25 = bm25s.BM25.load(str(folder / BM25_DIR), show_progress=False) if meta.get("bm25", True) else None
        if bm25 is not None and int(bm25.scores["num_docs"]) != count:
            raise CorruptIndexError(f"bm25 index holds {bm25.scores['num_docs']} documents, expected {count}")
        paragraphs = None
        if with_paragraphs:
            paragraphs = read_json(folder / PARAGRAPHS)
            if len(paragraphs) != count:
                raise CorruptIndexError(f"{len(paragraphs)} paragraphs stored, expected {count}")
    except CorruptIndexError:
        raise
    except Exception as err:  # any unreadable piece means the folder cannot be trusted
        raise CorruptIndexError(f"{type(err).__name__}: {err}") from err
    return LoadedIndex(meta=meta, embeddings=embeddings, bm25=bm25, paragraphs=paragraphs)


def discard(folder: Path) -> None:
    """Move a corrupt folder out of the way (rename first, so a reader never sees it half-deleted)."""
    if not folder.exists():
        return
    trash = folder.parent / f".corrupt-{folder.name}-{uuid.uuid4().hex[:8]}"
    try:
        os.rename(folder, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def find_named(name: str, data: str | Path | None = None) -> Path | None:
    """The newest complete cache folder for a corpus name (for `corpus="<name>"` without a path)."""
    root = index_root(data)
    if not root.is_dir():
        return None
    prefix = f"{safe_name(name)}-"
    best: tuple[float, Path] | None = None
    for folder in root.iterdir():
        if not folder.name.startswith(prefix) or not re.fullmatch(r"[0-9a-f]{16}", folder.name[len(prefix) :]):
            continue
        try:
            created = float(json.loads((folder / META).read_text(encoding="utf-8")).get("created", 0))
        except (OSError, ValueError):
            created = folder.stat().st_mtime
        if best is None or created > best[0]:
            best = (created, folder)
    return best[1] if best else None
