"""Checks on the embedded store's files before Chroma opens them.

- A foreign SQLite database at `chroma/chroma.sqlite3` was accepted, and Chroma silently added
  its tables to it: we refuse any database that has tables but not Chroma's.
- A read-only data folder made even `mia memory list` fail (Chroma's PersistentClient opens
  SQLite for writing). Read-only use opens a private copy of the Chroma folder instead.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from mia.memory.errors import MemoryStoreError

CHROMA_TABLES = frozenset({"collections", "migrations", "embeddings"})


def writable(folder: Path) -> bool:
    """Whether the store folder, its Chroma folder and database can be written (EROFS included)."""
    paths = [folder, folder / "chroma", folder / "chroma" / "chroma.sqlite3"]
    return all(os.access(p, os.W_OK) for p in paths if p.exists())


def check_chroma_folder(chroma: Path) -> None:
    """Raise MemoryStoreError when `chroma` is not a folder, or holds a database that is not
    Chroma's; an absent or empty database is fine (Chroma creates its tables)."""
    if chroma.exists() and not chroma.is_dir():
        raise MemoryStoreError(f"{chroma} is a file, not a Chroma folder: move it aside")
    database = chroma / "chroma.sqlite3"
    if not database.is_file() or database.stat().st_size == 0:
        return
    with database.open("rb") as handle:
        magic = handle.read(16)
    if magic != b"SQLite format 3\x00":
        raise MemoryStoreError(
            f"the memory store at {database} cannot be read: not a SQLite database. "
            "Move it aside; rebuild from an export or the trajectory log"
        )
    conn = None
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        tables = {row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")}
    except sqlite3.DatabaseError:
        return  # e.g. a journal left by a killed writer needs a writable open: Chroma's open recovers it
    finally:
        if conn is not None:
            conn.close()
    if tables and not CHROMA_TABLES <= tables:
        shown = ", ".join(sorted(tables)[:5])
        raise MemoryStoreError(
            f"{database} is another program's SQLite database (tables: {shown}), not a memory "
            "store: move it aside or choose another --data-dir"
        )


def read_only_copy(folder: Path) -> tempfile.TemporaryDirectory[str]:
    """A private copy of `folder/chroma` that Chroma may open for writing; the caller removes it."""
    tmp = tempfile.TemporaryDirectory(prefix="mia-memory-ro-")
    source = folder / "chroma"
    try:
        if source.is_dir():
            shutil.copytree(source, Path(tmp.name) / "chroma")
    except OSError as err:
        tmp.cleanup()
        raise MemoryStoreError(f"cannot read the memory store at {source}: {err}") from err
    return tmp
