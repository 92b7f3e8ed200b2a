"""File locks that make the store safe with several processes.

- Embedded store (PersistentClient): Chroma keeps the HNSW index in each process's memory, so a
  second process on the same folder reads stale results and can overwrite index files. We hold
  an exclusive lock on the folder for the store's lifetime; a second process gets a clear
  `StoreLockedError` telling it to use a Chroma server instead.
- Server mode: writes that read-modify-write (stats, dedup replace, eviction) run under a
  short exclusive lock in the shared log folder, so concurrent processes lose no update.
Locks are `flock` locks: the kernel drops them when a process dies, so a crash never leaves a
stale lock behind. Within one process a per-path registry shares one lock between stores.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from contextlib import contextmanager
from collections.abc import Iterator
from pathlib import Path

from mia.memory.errors import StoreLockedError

_REGISTRY: dict[str, tuple[int, int]] = {}  # path -> (fd, refcount)
_REGISTRY_LOCK = threading.Lock()


class FolderLock:
    """An exclusive, process-lifetime lock on a folder (shared by stores in the same process)."""

    def __init__(self, folder: Path, timeout: float = 5.0) -> None:
        self.path = str((folder / ".mia-memory.lock").resolve())
        self.timeout = timeout
        self.held = False

    def acquire(self) -> None:
        with _REGISTRY_LOCK:
            if self.path in _REGISTRY:
                fd, refs = _REGISTRY[self.path]
                _REGISTRY[self.path] = (fd, refs + 1)
                self.held = True
                return
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        owner = _read_owner(fd)
                        os.close(fd)
                        raise StoreLockedError(
                            f"the memory store {Path(self.path).parent} is in use by another process{owner}. "
                            "An embedded Chroma store serves one process at a time: stop the other process, "
                            "or share the memory through a Chroma server (`chroma run --path DIR --port PORT`, "
                            "then MIA_CHROMA_MODE=http MIA_CHROMA_PORT=PORT).") from None
                    time.sleep(0.1)
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            _REGISTRY[self.path] = (fd, 1)
            self.held = True

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        with _REGISTRY_LOCK:
            fd, refs = _REGISTRY.pop(self.path, (-1, 0))
            if refs > 1:
                _REGISTRY[self.path] = (fd, refs - 1)
            elif fd >= 0:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)


def _read_owner(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


class WriteLock:
    """A short exclusive lock around one write, across threads and processes."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / ".mia-memory-write.lock"
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd = -1

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._thread_lock:
            if self._depth == 0:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                    os.close(self._fd)
                    self._fd = -1
