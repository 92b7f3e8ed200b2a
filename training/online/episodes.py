"""The durable episode queue of test-time learning: what the answer path hands to the learner.

Why a file and not an in-memory queue: a learner may crash or be killed in the middle of a GRPO
step, and the episodes it had not learned from yet must survive. Every episode is appended to
`episodes.jsonl` and fsynced before `append` returns; the learner's progress is a separate
`cursor.json` (replaced atomically) that only moves once a batch is fully learned from. A restart
reads the file and starts again at the cursor, so an episode is learned from at least once and
never lost. A torn last line (a kill mid-write) is skipped, never fatal.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mia.memory.text import cleaned_data

log = logging.getLogger(__name__)

EPISODES_FILE = "episodes.jsonl"
CURSOR_FILE = "cursor.json"


class OnlineEpisode(BaseModel):
    """One answered question, as the learner needs it (GRPO prompt, rollout sandbox, reward)."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    question: str
    gold_answers: list[str] = Field(default_factory=list)  # empty: no ground truth (reviewers decide)
    paragraphs: list[dict[str, str]] = Field(default_factory=list)  # the rollouts' search sandbox
    memories: str = ""  # the memory block the planner saw
    used_memory_ids: list[str] = Field(default_factory=list)
    plan: str = ""
    answer: str = ""
    outcome: str = "unknown"  # correct | incorrect | unknown (ground truth or the reviewer panel)
    feedback: str = ""  # the judge's feedback (the reviewers' reasons without ground truth)
    reward: float | None = None  # the served episode's reward (drives rollback)
    adapter_version: str | None = None  # planner adapter that served this answer (None: base)
    namespace: str = "default"
    created_at: float = Field(default_factory=time.time)

    @model_validator(mode="before")
    @classmethod
    def _clean(cls, data: Any) -> Any:
        """A lone surrogate or NUL cleaned as the episode is made, so its queue line can be written
        (the namespace is kept as given: a bad one is refused where it is used, never rewritten)."""
        return cleaned_data(data, keep=("namespace",))


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - some filesystems do not allow opening a directory
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_json(path: Path, data: Any) -> None:
    """Write JSON so that a reader sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class EpisodeQueue:
    """Append-only JSONL of episodes plus a cursor (how many the learner has consumed)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / EPISODES_FILE
        self.cursor_path = self.folder / CURSOR_FILE
        self._lock = threading.Lock()  # appenders only; never held by a training step

    # ---------------------------------------------------------------- writing (the answer path)
    def append(self, episode: OnlineEpisode) -> None:
        """Append one episode durably (flush + fsync) before returning."""
        line = episode.model_dump_json() + "\n"
        with self._lock:
            self._repair_tail()
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())

    def _repair_tail(self) -> None:
        """A kill mid-write can leave a last line without newline; end it so the next is whole."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0:
            return
        with self.path.open("rb") as fh:
            fh.seek(size - 1)
            last = fh.read(1)
        if last != b"\n":
            with self.path.open("ab") as fh:
                fh.write(b"\n")

    # ---------------------------------------------------------------- reading (the learner)
    def read_all(self) -> list[OnlineEpisode]:
        """Every whole episode in the file, in order (torn or damaged lines are skipped)."""
        if not self.path.is_file():
            return []
        out: list[OnlineEpisode] = []
        with self.path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    out.append(OnlineEpisode.model_validate_json(line))
                except ValueError:
                    log.warning("%s:%d: damaged episode line skipped", self.path, n)
        return out

    def cursor(self) -> int:
        """How many episodes (in file order) have been learned from."""
        try:
            return int(json.loads(self.cursor_path.read_text(encoding="utf-8"))["consumed"])
        except FileNotFoundError:
            return 0
        except (ValueError, KeyError, TypeError):
            log.warning("%s is damaged; learning starts again from the first episode", self.cursor_path)
            return 0

    def pending(self) -> list[OnlineEpisode]:
        """Episodes not learned from yet (after the cursor)."""
        return self.read_all()[self.cursor() :]

    def advance(self, n: int) -> int:
        """Mark `n` more episodes as learned from (atomic); returns the new cursor."""
        new = self.cursor() + int(n)
        atomic_write_json(self.cursor_path, {"consumed": new, "updated_at": time.time()})
        return new

    def __len__(self) -> int:
        return len(self.read_all())
