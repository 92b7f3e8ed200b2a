"""Export and import of memories as JSONL: a header line, then one record per line. Vectors are
not exported (they depend on the embedder); import re-embeds, so a file moves between stores
with different embedders. Damaged lines are counted and skipped, never fatal."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from pydantic import ValidationError

from mia.memory.records import SCHEMA_VERSION, MemoryRecord
from mia.memory.trajectory import new_id


class TransferStore(Protocol):
    """What export and import need from a store (the store imports this module, not the reverse:
    no cycle between store.py and transfer.py, not even for type checking)."""

    embedder: Any

    def list(self, namespace: str | None = None) -> list[MemoryRecord]: ...

    def existing_ids(self, ids: Iterable[str], namespace: str | None = None) -> set[str]: ...

    def add_many(self, records: Sequence[MemoryRecord], vectors: Any) -> int: ...

    def add_deduplicated(self, record: MemoryRecord, vector: Any) -> MemoryRecord: ...

log = logging.getLogger(__name__)
HEADER_KEY = "mia_memory_export"


def export_records(store: TransferStore, path: Path, namespace: str | None = None) -> int:
    """Write to a temporary file and rename it, so a crash never leaves half an export."""
    records = store.list(namespace)
    records.sort(key=lambda r: (r.namespace, r.created_at))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    header = {HEADER_KEY: 1, "schema_version": SCHEMA_VERSION, "embedder": store.embedder.name,
              "namespace": namespace, "count": len(records), "exported_at": time.time()}
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps(header) + "\n")
        for record in records:
            handle.write(record.model_dump_json() + "\n")
    tmp.replace(path)
    return len(records)


def read_export(path: Path) -> tuple[list[MemoryRecord], int]:
    """Records of an export file and the number of unreadable lines."""
    records: list[MemoryRecord] = []
    bad = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
                if isinstance(data, dict) and HEADER_KEY in data:
                    if int(data.get("schema_version", SCHEMA_VERSION)) > SCHEMA_VERSION:
                        log.warning("%s: written by a newer schema (%s); unknown fields are ignored", path, data["schema_version"])
                    continue
                records.append(MemoryRecord.model_validate(data))
            except (ValueError, ValidationError) as err:
                bad += 1
                log.warning("%s line %d skipped: %s", path, number, str(err).splitlines()[0])
    return records, bad


def import_records(store: TransferStore, path: Path, namespace: str | None = None, dedup: bool = True) -> dict[str, int]:
    """Add the records of an export. `namespace` moves them all into one namespace. With dedup,
    each record goes through the near-duplicate rule (kept, replaced or added). Ids already in
    the store are left alone, so importing the same file twice changes nothing."""
    if not path.is_file():
        raise FileNotFoundError(f"no export file at {path}")
    records, bad = read_export(path)
    if namespace is not None:
        records = [r.model_copy(update={"namespace": namespace}) for r in records]
    counts = {"read": len(records), "invalid_lines": bad, "added": 0, "merged_or_kept": 0, "already_present": 0}
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
        stored = store.add_deduplicated(record, vector)
        counts["added" if stored.id == record.id and stored.workflow == record.workflow else "merged_or_kept"] += 1
    return counts
