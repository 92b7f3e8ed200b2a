"""The run folder: config.json, results.jsonl (the checkpoint), and a writer lock.

Why the log is the checkpoint: every finished question is one fsynced line, so a crashed or killed
run resumes by skipping the ids already there, and the summary is always recomputed from the log.
A superseded study keeps it gzip-compressed (results.jsonl.gz): it reads as it is, and a write
(a resumed run, a re-grade) expands it first.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from mia.app.evaluation.records import QuestionResult

CONFIG = "config.json"
RESULTS = "results.jsonl"
LOCK = ".lock"


class RunDirError(RuntimeError):
    """The run folder cannot be used as asked (another writer, a different config, a bad log)."""


def read_results(run_dir: Path, *, repair: bool = False) -> list[QuestionResult]:
    """Every valid line of the log. A torn last line (a crash mid-write) is dropped, and with
    `repair` cut from the file so appends start on a clean line; a bad line elsewhere is an error."""
    path = Path(run_dir) / RESULTS
    compressed = _compressed(run_dir)
    if not path.exists():
        return read_results_bytes(compressed, gzip.decompress(compressed.read_bytes())) if compressed.is_file() else []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    last_nonblank = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    results: list[QuestionResult] = []
    keep = 0  # bytes of the file that hold whole, valid lines
    offset = 0
    for i, line in enumerate(lines):
        end = offset + len(line) + (1 if i < len(lines) - 1 else 0)
        if line.strip():
            try:
                results.append(QuestionResult.model_validate_json(line))
            except ValidationError as err:
                if i == last_nonblank:  # torn tail: that question is simply run again
                    break
                raise RunDirError(f"{path}:{i + 1}: corrupt result line ({err.errors()[0]['msg']})") from err
            if i == len(lines) - 1:  # valid but unterminated: keep it, terminate it on repair
                keep = end
                break
        keep = end
        offset = end
    if repair and keep < len(raw):
        with path.open("r+b") as fh:
            fh.truncate(keep)
    if repair and raw and keep == len(raw) and not raw.endswith(b"\n"):
        with path.open("ab") as fh:
            fh.write(b"\n")
    return results


def read_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The log's lines as logged (plain dicts, for analyses that read fields as they were written),
    from results.jsonl or results.jsonl.gz; [] for a folder with neither."""
    path = Path(run_dir) / RESULTS
    if path.exists():
        raw = path.read_bytes()
    elif (compressed := _compressed(run_dir)).is_file():
        raw = gzip.decompress(compressed.read_bytes())
    else:
        return []
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def _compressed(run_dir: Path) -> Path:
    return Path(run_dir) / (RESULTS + ".gz")


def read_results_bytes(path: Path, raw: bytes) -> list[QuestionResult]:
    """Every line of a compressed log (a finished study: no torn line to drop or repair)."""
    try:
        return [QuestionResult.model_validate_json(line) for line in raw.splitlines() if line.strip()]
    except ValidationError as err:
        raise RunDirError(f"{path}: corrupt result line ({err.errors()[0]['msg']})") from err


def expand_results(run_dir: Path) -> Path:
    """The plain results log of a run folder, expanded from results.jsonl.gz first if that is all it has."""
    path, compressed = Path(run_dir) / RESULTS, _compressed(run_dir)
    if not path.exists() and compressed.is_file():
        partial = path.with_name(RESULTS + ".expanding")
        partial.write_bytes(gzip.decompress(compressed.read_bytes()))
        os.replace(partial, path)
        compressed.unlink()
    return path


def latest_by_id(results: Iterable[QuestionResult]) -> dict[str, QuestionResult]:
    """Later lines win (a retried question appends a new line rather than editing the file)."""
    out: dict[str, QuestionResult] = {}
    for r in results:
        out[r.id] = r
    return out


def append_result(run_dir: Path, result: QuestionResult) -> None:
    """One line, flushed and fsynced, so a crash loses at most the question in flight. Text set
    after construction that cannot be encoded is cleaned by validating the result again."""
    try:
        line = result.model_dump_json()
    except PydanticSerializationError:
        line = QuestionResult.model_validate(result.model_dump()).model_dump_json()
    with expand_results(run_dir).open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_config(run_dir: Path) -> dict[str, Any] | None:
    path = Path(run_dir) / CONFIG
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise RunDirError(f"{path}: not valid JSON ({err})") from err


def write_config(run_dir: Path, config: dict[str, Any]) -> None:
    path = Path(run_dir) / CONFIG
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    """One writer per run folder: a second `mia eval` on the same --out fails fast, a stale lock
    left by a killed process is taken over."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / LOCK

    def __enter__(self) -> RunLock:
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError as exists:
                try:
                    pid = int(self.path.read_text().strip() or 0)
                except (OSError, ValueError):
                    pid = 0
                if pid and pid != os.getpid() and _pid_alive(pid):
                    raise RunDirError(
                        f"{self.path.parent} is being written by process {pid}; wait or use another --out"
                    ) from exists
                self.path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(str(os.getpid()))
            return self
        raise RunDirError(f"could not lock {self.path.parent}")

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)
