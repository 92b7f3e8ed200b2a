"""File locks that make the store safe with several processes (`filelock`, so they work on
Windows too; a top-level `import fcntl` did not).

- Embedded store (PersistentClient): Chroma keeps the HNSW index in each process's memory, so a
  second process on the same folder reads stale results and can overwrite index files. We hold
  an exclusive lock on the folder for the store's lifetime; a second process gets a clear
  `StoreLockedError` telling it to use a Chroma server instead.
- Server mode: writes that read-modify-write (stats, dedup replace, eviction) run under a
  short exclusive lock in the shared log folder, so concurrent processes lose no update.
- The trajectory log's appends run under a lock of their own (see trajectory_log.py).
The OS drops these locks when a process dies (flock on POSIX, LockFileEx on Windows), so a
crash never leaves a stale lock behind. Within one process a per-path registry shares one
lock between stores (two locks of one process on one file would block each other).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from mia.memory.errors import StoreLockedError

_REGISTRY: dict[str, tuple[FileLock, int]] = {}  # path -> (lock, refcount)
_REGISTRY_LOCK = threading.Lock()


class FolderLock:
    """An exclusive, process-lifetime lock on a folder (shared by stores in the same process)."""

    def __init__(self, folder: Path, timeout: float = 5.0) -> None:
        self.path = str((folder / ".mia-memory.lock").resolve())
        self.owner_path = Path(self.path).with_name(".mia-memory.owner")
        self.timeout = timeout
        self.held = False

    def acquire(self) -> None:
        with _REGISTRY_LOCK:
            if self.path in _REGISTRY:
                lock, refs = _REGISTRY[self.path]
                _REGISTRY[self.path] = (lock, refs + 1)
                self.held = True
                return
            lock = FileLock(self.path, thread_local=False)
            try:
                lock.acquire(timeout=self.timeout, poll_interval=0.1)
            except Timeout:
                raise StoreLockedError(
                    f"the memory store {Path(self.path).parent} is in use by another process{self._owner()}. "
                    "An embedded Chroma store serves one process at a time: stop the other process, "
                    "or share the memory through a Chroma server (`chroma run --path DIR --port PORT`, "
                    "then MIA_CHROMA_MODE=http MIA_CHROMA_PORT=PORT)."
                ) from None
            try:  # who holds it, for the message above (best effort: the lock is what counts)
                self.owner_path.write_text(str(os.getpid()))
            except OSError:
                pass
            _REGISTRY[self.path] = (lock, 1)
            self.held = True

    def _owner(self) -> str:
        try:
            pid = self.owner_path.read_text().strip()
        except OSError:
            return ""
        return f" (pid {pid})" if pid.isdigit() else ""

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        with _REGISTRY_LOCK:
            lock, refs = _REGISTRY.pop(self.path, (None, 0))
            if refs > 1:
                _REGISTRY[self.path] = (lock, refs - 1)  # type: ignore[assignment]
            elif lock is not None:
                lock.release(force=True)


class WriteLock:
    """A short exclusive lock around one write, across threads and processes; re-entrant in
    the thread that holds it (a write can call another write)."""

    def __init__(self, folder: Path, name: str = ".mia-memory-write.lock") -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / name
        self._thread_lock = threading.RLock()
        self._file_lock = FileLock(str(self.path), thread_local=False)
        self._depth = 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._thread_lock:
            if self._depth == 0:
                self._file_lock.acquire()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._file_lock.release(force=True)
