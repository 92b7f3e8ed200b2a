"""Export and import of memories as JSONL: a header line, then one record per line. Vectors are
not exported (they depend on the embedder); import re-embeds, so a file moves between stores
with different embedders. Damaged lines are reported and skipped, never fatal.

Other items kept in the same store (a LangGraph app's own values put through `MiaStore`) travel in
the same file, one `{"mia_store_item": 1, ...}` line each: this layer writes and reads them as
given and leaves their meaning to the caller that passes them (`items=`, `put_items=`)."""

from __future__ import annotations

import builtins
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import orjson
from pydantic import ValidationError

from mia.memory.errors import MemoryStoreError
from mia.memory.namespaces import check_namespace, is_valid_namespace
from mia.memory.records import SCHEMA_VERSION, MemoryRecord
from mia.memory.trajectory import new_id


class TransferStore(Protocol):
    """What export and import need from a store (the store imports this module, not the reverse:
    no cycle between store.py and transfer.py, not even for type checking)."""

    embedder: Any

    def list(self, namespace: str | None = None) -> list[MemoryRecord]: ...

    def existing_ids(self, ids: Iterable[str], namespace: str | None = None) -> set[str]: ...

    def add_many(self, records: builtins.list[MemoryRecord], embeddings: Any = None) -> int: ...

    def add_deduplicated(self, record: MemoryRecord, vector: Any) -> MemoryRecord: ...


log = logging.getLogger(__name__)
HEADER_KEY = "mia_memory_export"
ITEM_KEY = "mia_store_item"  # a line holding a store item that is not a workflow memory


def export_records(
    store: TransferStore,
    path: str | Path,
    namespace: str | None = None,
    overwrite: bool = False,
    items: Iterable[Mapping[str, Any]] = (),
) -> int:
    """Write a header line and one record per line (vectors are not exported: re-embedded on import),
    to a temporary file beside `path` renamed into place, so a crash never leaves half an export.

    The rename would replace whatever `path` is, so what it could destroy is refused first
    (`check_export_target`): anything but a regular file (a device such as /dev/full, a symlink,
    a folder), an existing file unless `overwrite`, and a folder that does not exist (never made)."""
    path = Path(path)
    check_export_target(path, overwrite)
    records = store.list(namespace)
    records.sort(key=lambda r: (r.namespace, r.created_at))
    extra = [{ITEM_KEY: 1, **item} for item in items]
    header = {
        HEADER_KEY: 1,
        "schema_version": SCHEMA_VERSION,
        "embedder": store.embedder.name,
        "namespace": namespace,
        "count": len(records),
        "items": len(extra),
        "exported_at": time.time(),
    }
    handle = tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    )
    try:
        with handle:
            handle.write(json.dumps(header) + "\n")
            for record in records:
                handle.write(record.model_dump_json() + "\n")
            for line in extra:
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        check_export_target(path, overwrite)  # nothing took its place while the records were written
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    return len(records)


def check_export_target(path: Path, overwrite: bool = False) -> None:
    """Raise FileExistsError or FileNotFoundError, with the reason, for a path an export must not write."""
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path.parent} is not a folder; create it first (export never makes folders)")
    if path.is_symlink():
        raise FileExistsError(f"{path} is a symbolic link; export writes a regular file only, never through a link")
    if path.exists():
        if not path.is_file():
            raise FileExistsError(f"{path} exists and is not a regular file (a folder or a device): not replaced")
        if not overwrite:
            raise FileExistsError(f"{path} exists; pass --force (overwrite=True) to replace it")


@dataclass
class ExportFile:
    """What `read_export` found: the valid records, the store items (namespace, key, value), and one
    line of text per skipped line."""

    records: list[MemoryRecord] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _parse_line(raw: bytes) -> MemoryRecord | dict[str, Any] | None:
    """A record, a store item (dict), or None for the header; raises ValueError with a one-line reason.

    orjson rejects NaN/Infinity and nesting deeper than 1024 (json.loads raised RecursionError
    on a deeply nested line and accepted NaN, which was then stored unreadable)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise ValueError(f"not valid JSON ({str(err).splitlines()[0][:120]})") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    if HEADER_KEY in data:
        version = data.get("schema_version", SCHEMA_VERSION)
        if not isinstance(version, int) or isinstance(version, bool):
            raise ValueError(f"header: schema_version must be an integer, not {version!r:.40}")
        if version > SCHEMA_VERSION:
            log.warning("written by a newer schema (%s); unknown fields are ignored", version)
        return None
    if ITEM_KEY in data:
        namespace, key, value = data.get("namespace"), data.get("key"), data.get("value")
        if not (isinstance(namespace, str) and is_valid_namespace(namespace)):
            raise ValueError(f"item: invalid namespace {ascii(namespace)[:60]}")
        if not (isinstance(key, str) and key) or not isinstance(value, dict):
            raise ValueError("item: needs a non-empty string key and an object value")
        return {k: v for k, v in data.items() if k != ITEM_KEY}
    try:
        return MemoryRecord.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "record"
        raise ValueError(f"{where}: {first.get('msg', 'invalid')}") from None


def read_export(path: Path) -> ExportFile:
    """Every valid record of an export file; each unreadable line is skipped with a reason, so
    one bad record never stops the good ones."""
    found = ExportFile()
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                record = _parse_line(raw)
            except ValueError as err:
                found.skipped.append(f"line {number}: {err}")
                continue
            if isinstance(record, MemoryRecord):
                found.records.append(record)
            elif record is not None:
                found.items.append(record)
    return found


def import_records(
    store: TransferStore,
    path: str | Path,
    namespace: str | None = None,
    dedup: bool = True,
    on_skip: Callable[[str], None] | None = None,
    put_items: Callable[[list[dict[str, Any]], str | None], int] | None = None,
) -> dict[str, int]:
    """Add the records of an export. `namespace` moves them all into one namespace. With dedup,
    each record goes through the duplicate rule (kept, replaced or added). Ids already in the
    store are left alone, so importing the same file twice changes nothing; an id repeated in
    the file is imported once. Each skipped line is logged and passed to `on_skip` (one line of
    text); a record the store refuses is skipped the same way and counted as failed. The file's
    store items go to `put_items(items, namespace)` (it returns how many it added); without it they
    are counted as `items_not_imported`. Returns counts by action."""
    path = Path(path)
    if namespace is not None:
        check_namespace(namespace)
    if not path.is_file():
        raise FileNotFoundError(f"no export file at {path}")
    found = read_export(path)
    records, skipped = found.records, list(found.skipped)
    seen: set[str] = set()
    unique: list[MemoryRecord] = []
    for record in records:
        if namespace is None and not is_valid_namespace(record.namespace):
            skipped.append(f"id {record.id[:40]}: invalid namespace {ascii(record.namespace)[:60]}")
            continue
        if record.id in seen:
            skipped.append(f"id {record.id[:40]}: repeated in the file, imported once")
            continue
        seen.add(record.id)
        unique.append(record)
    records = unique
    if namespace is not None:
        records = [r.model_copy(update={"namespace": namespace}) for r in records]

    def skip(line: str) -> None:
        if on_skip is None:
            log.warning("%s: %s (skipped)", path, line)
        else:
            on_skip(line)

    for line in skipped:
        skip(line)
    counts = {
        "read": len(records),
        "invalid_lines": len(skipped),
        "added": 0,
        "merged_or_kept": 0,
        "already_present": 0,
        "failed": 0,
    }
    if found.items:
        if put_items is None:
            counts["items_not_imported"] = len(found.items)
        else:
            counts["items_added"] = put_items(found.items, namespace)
    fresh: list[MemoryRecord] = []
    for ns in sorted({r.namespace for r in records}):
        group = [r for r in records if r.namespace == ns]
        here = store.existing_ids([r.id for r in group], ns)
        elsewhere = store.existing_ids([r.id for r in group if r.id not in here])
        counts["already_present"] += sum(r.id in here for r in group)
        # ids are unique store-wide: a copy into another namespace gets a new id
        fresh += [r.model_copy(update={"id": new_id()}) if r.id in elsewhere else r for r in group if r.id not in here]
    records = fresh
    if not records:
        return counts
    vectors = store.embedder.embed_documents([r.embed_text for r in records])
    if not dedup:
        counts["added"] = store.add_many(records, vectors)
        return counts
    for record, vector in zip(records, vectors):
        try:
            stored = store.add_deduplicated(record, vector)
        except (MemoryStoreError, ValueError) as err:
            counts["failed"] += 1
            skip(f"id {record.id[:40]}: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
            continue
        counts["added" if stored.id == record.id and stored.workflow == record.workflow else "merged_or_kept"] += 1
    return counts
