"""The append-only raw trajectory log (JSONL): the training data, and what memories can be
rebuilt from. One write per call, under an exclusive file lock (`trajectories.jsonl.lock`), then fsync; a crash can only
leave a torn last line, which readers skip with a warning (and the next append starts a new line).

A finished study keeps its log gzip-compressed (`trajectories.jsonl.gz`: results/ keeps text, and
compressed logs are a seventh of the size): readers read it as it is, and the first append expands
it back to the plain log, so a run resumed or started from it (`mia eval --memory-from`) goes on as before.
"""

from __future__ import annotations

import gzip
import logging
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import ValidationError

from mia.memory.trajectory import Trajectory

log = logging.getLogger(__name__)


class TrajectoryLog:
    """`trajectories.jsonl` beside the store."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.compressed = self.path.with_name(self.path.name + ".gz")
        # appends from every process and thread go through this lock file beside the log
        self._lock = FileLock(str(self.path.with_name(self.path.name + ".lock")), thread_local=False)
        self._thread_lock = threading.Lock()

    def append(self, trajectory: Trajectory) -> int:
        """Append one trajectory durably (fsync) and atomically with respect to other writers;
        returns the byte offset of its line."""
        return self.append_many([trajectory])[0]

    def append_many(self, trajectories: list[Trajectory]) -> list[int]:
        """Append several trajectories with one lock and one fsync; returns their line offsets."""
        if not trajectories:
            return []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = [t.to_json_line().encode("utf-8") for t in trajectories]
        with self._thread_lock, self._lock:
            self.expand()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
            try:
                start = os.fstat(fd).st_size
                prefix = b"\n" if _ends_torn(self.path) else b""  # a crashed writer left half a line
                offsets, position = [], start + len(prefix)
                for line in lines:
                    offsets.append(position)
                    position += len(line)
                view = memoryview(prefix + b"".join(lines))
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
        return offsets

    def exists(self) -> bool:
        """Whether there is a log, plain or compressed."""
        return self.path.is_file() or self.compressed.is_file()

    def expand(self) -> None:
        """A compressed log becomes the plain one (written beside it, then renamed) before an append."""
        if self.path.exists() or not self.compressed.is_file():
            return
        partial = self.path.with_name(self.path.name + ".expanding")
        with gzip.open(self.compressed, "rb") as source, partial.open("wb") as target:
            shutil.copyfileobj(source, target)
            target.flush()
            os.fsync(target.fileno())
        os.replace(partial, self.path)
        self.compressed.unlink()

    def _open(self) -> Any:
        """The log for reading, the plain one first (offsets are the plain file's, or the expanded stream's)."""
        return self.path.open("rb") if self.path.exists() else gzip.open(self.compressed, "rb")

    def __iter__(self) -> Iterator[Trajectory]:
        return self.read()

    def read(self, namespace: str | None = None) -> Iterator[Trajectory]:
        """Yield every readable trajectory; damaged lines are skipped with a warning."""
        for trajectory, _ in self.read_with_offsets(namespace):
            yield trajectory

    def read_with_offsets(self, namespace: str | None = None) -> Iterator[tuple[Trajectory, int]]:
        """Like `read`, with each line's byte offset (the trajectory index stores it)."""
        if not self.exists():
            return
        with self._open() as handle:
            offset = 0
            for number, raw in enumerate(handle, 1):
                line_offset, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                try:
                    trajectory = Trajectory.model_validate_json(raw)
                except (ValidationError, ValueError) as err:
                    torn = not raw.endswith(b"\n")
                    log.warning(
                        "%s line %d: skipped %s line (%s)",
                        self.path,
                        number,
                        "torn last" if torn else "unreadable",
                        str(err).splitlines()[0],
                    )
                    continue
                if namespace is None or trajectory.namespace == namespace:
                    yield trajectory, line_offset

    def read_at(self, offset: int, trajectory_id: str | None = None) -> Trajectory | None:
        """The trajectory whose line starts at `offset` (None if the log changed under it)."""
        try:
            with self._open() as handle:
                handle.seek(offset)
                raw = handle.readline()
            trajectory = Trajectory.model_validate_json(raw)
        except (OSError, ValidationError, ValueError):
            trajectory = None
        if trajectory is None or (trajectory_id and trajectory.id != trajectory_id):
            return next((t for t in self.read() if t.id == trajectory_id), None) if trajectory_id else None
        return trajectory

    def count(self) -> int:
        """Number of readable trajectories."""
        return sum(1 for _ in self.read())


def _ends_torn(path: Path) -> bool:
    """True when the file is non-empty and its last byte is not a newline."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if size == 0:
        return False
    with path.open("rb") as handle:
        handle.seek(size - 1)
        return handle.read(1) != b"\n"
