"""`MiaStore`: MIA's workflow memory as a LangGraph `BaseStore`, with InMemoryStore's semantics
for any dict value, so that an app can keep all it stores in one place.

So any LangGraph app gets it with `graph.compile(store=MiaStore.open(path))` and reads it as
`runtime.store`. What differs from InMemoryStore, and why:
- a value shaped like a workflow memory (store_values.py) is one: its key is the memory id, MIA's
  retrieval uses it, and it reads back as the record's fields (what was put, with MIA's defaults
  and usage counts); any other dict is a generic item (store_items.py), read back as it was put;
- a query search ranks memories and generic items together by MIA's score (store_search.py); a
  memory that screening flagged is never returned by one (kept for review, never shown); without
  a query the items come newest first; either way the filter (store_filter.py) is applied before
  offset and limit cut, so a page is never short while more items match;
- `index=` picks a generic item's text (default: the store's `fields`, ["$"], the whole value; an
  item with several texts gets one vector, of them joined); a memory is embedded by its question,
  so `index=` on one is refused;
- a put writes the new copy before it deletes an old one (a memory whose outcome changed, a value
  that changed kind), under the store's write lock: a put that fails leaves the old value;
- TTL is refused (`supports_ttl` is False): MIA's upkeep, not expiry, bounds the memory;
- the operations of a batch run in order: a put is visible to a later get of the same batch.
The store is synchronous underneath; `abatch` runs it in a worker thread so that an async app's
event loop never waits on Chroma or the embedder.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypedDict

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from mia.graph.integrations.namespaces import to_mia, to_tuple
from mia.graph.integrations.store_items import BUCKETS as ITEM_BUCKETS
from mia.graph.integrations.store_items import EMBEDDED, GenericItems
from mia.graph.integrations.store_search import search
from mia.graph.integrations.store_values import (
    as_value,
    generic_view,
    is_memory,
    item_text,
    memory_record,
    memory_view,
)
from mia.memory.index import MEMORY_BUCKETS
from mia.memory.namespaces import check_namespace


def unwrap(store: Any) -> Any:
    """The MemoryStore behind a MiaStore (a MemoryStore is returned as it is)."""
    return store.memory if isinstance(store, MiaStore) else store


class ExportedItem(TypedDict):
    """One app item as `mia memory export` writes it beside the memories (its value is the app's own
    JSON object, as LangGraph's `Item.value`)."""

    namespace: str
    key: str
    value: dict[str, Any]
    created_at: float
    updated_at: float
    indexed: bool


class MiaStore(BaseStore):
    """A LangGraph BaseStore over a `mia.memory.MemoryStore` (embedded Chroma, a Chroma server, or
    the in-memory index). `fields`: the paths of a generic item's value to embed when a put gives
    no `index=` (InMemoryStore's `index={"fields": ...}`)."""

    supports_ttl = False

    def __init__(self, memory: Any, *, fields: list[str] | None = None) -> None:
        self.memory = memory
        self.fields = _paths(fields, ["$"])
        self.items = GenericItems(memory)

    @classmethod
    def open(cls, path: str | Path | None = None, *, fields: list[str] | None = None, **options: Any) -> MiaStore:
        """The embedded memory store in `path` (default: the data directory's `memory/`)."""
        from mia.memory import MemoryStore

        return cls(MemoryStore.open(path, **options), fields=fields)

    def close(self) -> None:
        """Release the store (its folder lock, its threads)."""
        self.memory.close()

    def __enter__(self) -> MiaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (a put is visible to a later get of the same batch)."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return search(self.memory, self.items, op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"MiaStore cannot run a {type(op).__name__}")

    # ------------------------------------------------------------------ reads
    def _get(self, op: GetOp) -> Item | None:
        namespace = _address(op.namespace)
        if not op.key:
            return None
        record = self.memory.get(op.key, namespace=namespace)
        if record is not None:
            return _plain_item(memory_view(record))
        stored = self.items.get(namespace, op.key)
        return None if stored is None else _plain_item(generic_view(namespace, stored))

    # ------------------------------------------------------------------ writes
    def _put(self, op: PutOp) -> None:
        namespace = _address(op.namespace)
        if not isinstance(op.key, str) or not op.key:
            raise ValueError(f"an item's key is a non-empty string, got {op.key!r}")
        if op.ttl is not None:
            raise NotImplementedError(
                "MiaStore does not expire items (supports_ttl is False): MIA's upkeep bounds the memory; "
                "put without ttl"
            )
        if op.value is None:
            self.memory.check_writable()
            with self.memory.writing():
                self._drop(namespace, op.key)
            return
        value = as_value(op.value)
        if is_memory(value):
            if op.index is not None:
                raise ValueError("a MIA workflow memory is embedded by its question: leave index= out for it")
            with self.memory.writing():  # MemoryStore.replace: the new copy first, then any other
                self.memory.replace(memory_record(op.key, namespace, value))
                self._drop(namespace, op.key, keep=MEMORY_BUCKETS)  # a generic item of the same key
            return
        text = item_text(value, _paths(op.index, self.fields))
        vector = self.memory.embedder.embed_documents([text])[0] if text else None
        self.memory.check_writable()
        with self.memory.writing():
            old = self.items.get(namespace, op.key)
            bucket = self.items.put(namespace, op.key, value, vector, old.created_at if old else time.time())
            self._drop(namespace, op.key, keep=[bucket])

    def _drop(self, namespace: str, key: str, keep: Iterable[str] = ()) -> None:
        """Delete every copy of the key but those in the buckets `keep`."""
        kept = set(keep)
        for bucket in (*MEMORY_BUCKETS, *ITEM_BUCKETS):
            if bucket not in kept:
                self.memory.index.delete(namespace, bucket, [key])

    # ------------------------------------------------------------------ export and import
    def export_items(self, namespace: str | None = None) -> list[ExportedItem]:
        """The items that are not workflow memories, of one MIA namespace or all, as `mia memory
        export` writes them beside the memories (`indexed`: the item had a text to embed)."""
        return [
            {
                "namespace": ns,
                "key": item.key,
                "value": item.value,
                "created_at": item.created_at,
                "updated_at": item.updated_at,
                "indexed": bucket == EMBEDDED,
            }
            for ns in self.memory.scope(namespace)
            for bucket in ITEM_BUCKETS
            for item in self.items.all(ns, (bucket,))
        ]

    def import_items(self, items: Iterable[dict[str, Any]], namespace: str | None = None) -> int:
        """Put exported items back, into `namespace` when given (else each item's own), keeping
        their creation time; a key the namespace already holds is left alone, so importing twice
        changes nothing. An indexed item is embedded by this store's `fields` (the paths it was
        put with are not exported). Returns how many were added."""
        fresh: dict[tuple[str, str], tuple[dict[str, Any], str, float]] = {}
        for item in items:
            ns, key = check_namespace(namespace or item["namespace"]), str(item["key"])
            if (ns, key) in fresh or self.memory.get(key, namespace=ns) is not None or self.items.get(ns, key):
                continue
            value = as_value(item["value"])
            text = item_text(value, self.fields) if item.get("indexed", True) else ""
            fresh[(ns, key)] = (value, text, float(item.get("created_at") or time.time()))
        texts = [text for _, text, _ in fresh.values() if text]
        vectors = iter(self.memory.embedder.embed_documents(texts)) if texts else iter(())  # one batch
        self.memory.check_writable()
        with self.memory.writing():
            for (ns, key), (value, text, created) in fresh.items():
                self.items.put(ns, key, value, next(vectors) if text else None, created)
        added = len(fresh)
        return added

    # ------------------------------------------------------------------ namespaces
    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        held = [ns for ns in self.memory.namespaces() if self.memory.count(ns) or self.items.count(ns)]
        found = [
            ns
            for ns in map(to_tuple, held)
            if all(_matches(ns, cond.match_type, tuple(cond.path)) for cond in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            found = list({ns[: op.max_depth] for ns in found})
        return sorted(found)[op.offset : op.offset + op.limit]


def _address(namespace: tuple[str, ...]) -> str:
    """The MIA namespace an item lives in (InvalidNamespaceError when MIA cannot name it)."""
    return check_namespace(to_mia(namespace))


def _paths(index: object, default: list[str]) -> list[str]:
    """The value paths a generic item is embedded by: `index=` None is the store's, False none."""
    if index is None:
        return default
    if index is False:
        return []
    if isinstance(index, (list, tuple)) and all(isinstance(p, str) and p for p in index):
        return list(index)
    raise ValueError(f"index is None, False or a list of field paths such as ['text', 'meta.title'], not {index!r}")


def _plain_item(hit: SearchItem) -> Item:
    return Item(
        value=hit.value, key=hit.key, namespace=hit.namespace, created_at=hit.created_at, updated_at=hit.updated_at
    )


def _matches(namespace: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    """LangGraph's match conditions ('*' matches any one label)."""
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if kind == "prefix" else namespace[len(namespace) - len(path) :]
    return all(want in ("*", got) for want, got in zip(path, part))
