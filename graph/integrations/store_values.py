"""What a `MiaStore` item's value is: a MIA workflow memory, or any other JSON dict.

A value whose fields are all MemoryRecord fields and include `question` and `workflow` is a
workflow memory: it becomes a MemoryRecord that MIA's own retrieval reads, and a value of that
shape that MemoryRecord rejects is an error (not silently stored as something else). Any other
dict is a generic item, kept as JSON and returned as it was put; what its vector embeds is chosen
by index paths, as InMemoryStore chooses them (`"$"` is the whole value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import SearchItem, get_text_at_path
from pydantic import ValidationError

from mia.graph.integrations.namespaces import to_tuple
from mia.graph.integrations.store_items import Stored
from mia.memory import MemoryRecord

#: Record fields that are not part of an item's value (the key and the namespace say them).
ADDRESS = frozenset({"id", "namespace"})
MEMORY_FIELDS = frozenset(MemoryRecord.model_fields) - ADDRESS
REQUIRED = ("question", "workflow")


def as_value(value: object) -> dict[str, Any]:
    """A put's value as a dict of JSON types, or ValueError saying where it is not one."""
    if not isinstance(value, Mapping):
        raise ValueError(f"an item's value is a dict, got {type(value).__name__}")
    value = dict(value)
    check_json(value, "value")
    return value


def check_json(value: object, where: str) -> None:
    """Only what JSON keeps: str keys; str, numbers, bools, None, lists (a tuple comes back as a list)."""
    if value is None or isinstance(value, (str, int, float)):  # bool is an int
        return
    if isinstance(value, (list, tuple)):
        for i, element in enumerate(value):
            check_json(element, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, element in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where} has the key {key!r}: the keys of an item's value are strings")
            check_json(element, f"{where}[{key!r}]")
        return
    raise ValueError(f"{where} is a {type(value).__name__}: an item's value holds JSON types only")


def is_memory(value: Mapping[str, Any]) -> bool:
    """Whether the value has the shape of a MIA workflow memory (see the module docstring)."""
    return set(value) <= MEMORY_FIELDS and all(name in value for name in REQUIRED)


def memory_record(key: str, namespace: str, value: Mapping[str, Any]) -> MemoryRecord:
    """The MemoryRecord of a memory-shaped value, or ValueError naming the bad field."""
    empty = [name for name in REQUIRED if not isinstance(value[name], str) or not value[name].strip()]
    if empty:
        raise ValueError(f"a MIA memory needs a non-empty {' and '.join(empty)} (text)")
    try:
        return MemoryRecord(
            **{"source": "langgraph-store", "compression": "manual", **value}, id=key, namespace=namespace
        )
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "value"
        raise ValueError(f"invalid MIA memory {key!r}: {where}: {first['msg']}") from None


def item_text(value: Mapping[str, Any], paths: Sequence[str]) -> str:
    """The text a generic item is embedded by: the texts at `paths`, one per line ("" when none)."""
    texts: list[str] = []
    for path in paths:
        texts += get_text_at_path(value, path)
    return "\n".join(text for text in texts if text.strip())


def memory_view(record: MemoryRecord, score: float | None = None) -> SearchItem:
    """A memory as an item: the record's fields but its address; updated when last used."""
    value = record.model_dump(mode="json", exclude=set(ADDRESS))
    updated = max(record.last_used_at, record.created_at)
    return SearchItem(to_tuple(record.namespace), record.id, value, _time(record.created_at), _time(updated), score)


def generic_view(namespace: str, stored: Stored, score: float | None = None) -> SearchItem:
    """A generic item as it was put."""
    created, updated = _time(stored.created_at), _time(stored.updated_at)
    return SearchItem(to_tuple(namespace), stored.key, stored.value, created, updated, score)


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)
