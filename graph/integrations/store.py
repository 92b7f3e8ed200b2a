"""`MiaStore`: MIA's workflow memory as a LangGraph `BaseStore`.

So any LangGraph app gets it with `graph.compile(store=MiaStore.open(path))` and reads it as
`runtime.store`. An item is one workflow memory: its key is the memory id and its value the
record's fields (`question` and `workflow` required; `outcome`, `plan`, `caption`,
`judge_feedback`, ... optional). `search(ns, query=...)` runs MIA's retrieval (ANN candidates,
then similarity and win rate combined) over the judged memories; without a query it lists the
newest. The store is synchronous underneath; `abatch` runs it in a worker thread so that an
async app's event loop never waits on Chroma or the embedder.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from langgraph.store.base import (BaseStore, GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchItem,
                                  SearchOp)

from mia.graph.integrations.namespaces import to_mia, to_tuple, under

#: Record fields that are not part of an item's value (the key and the namespace say them).
_ADDRESS = {"id", "namespace"}


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def unwrap(store: Any) -> Any:
    """The MemoryStore behind a MiaStore (a MemoryStore is returned as it is)."""
    return store.memory if isinstance(store, MiaStore) else store


class MiaStore(BaseStore):
    """A LangGraph BaseStore over a `mia.memory.MemoryStore` (embedded Chroma or a Chroma server)."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory

    @classmethod
    def open(cls, path: str | Path | None = None, **options: Any) -> MiaStore:
        """The embedded memory store in `path` (default: the data directory's `memory/`)."""
        from mia.memory import MemoryStore

        return cls(MemoryStore.open(path, **options))

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
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"MiaStore cannot run a {type(op).__name__}")

    # ------------------------------------------------------------------ operations
    def _item(self, record: Any, score: float | None = None, *, search: bool = False) -> Item:
        value = record.model_dump(mode="json", exclude=_ADDRESS)
        stamps = dict(created_at=_time(record.created_at), updated_at=_time(max(record.last_used_at, record.created_at)))
        if search:
            return SearchItem(to_tuple(record.namespace), record.id, value, score=score, **stamps)
        return Item(value=value, key=record.id, namespace=to_tuple(record.namespace), **stamps)

    def _get(self, op: GetOp) -> Item | None:
        record = self.memory.get(op.key, namespace=to_mia(op.namespace))
        return None if record is None else self._item(record)

    def _put(self, op: PutOp) -> None:
        namespace = to_mia(op.namespace)
        if op.value is None:
            self.memory.delete([op.key], namespace=namespace)
            return None
        self.memory.replace(_record(op.key, namespace, op.value))
        return None

    def _namespaces(self, prefix: tuple[str, ...]) -> list[str]:
        return [ns for ns in self.memory.namespaces() if under(to_tuple(ns), tuple(prefix))]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = dict(op.filter or {})
        outcome = wanted.get("outcome")
        found: list[SearchItem] = []
        if op.query:
            n = op.limit + op.offset
            k_pos = 0 if outcome in ("incorrect", "unknown") else n
            k_neg = 0 if outcome in ("correct", "unknown") else n
            for ns in self._namespaces(op.namespace_prefix):
                got = self.memory.retrieve(op.query, namespace=ns, k_pos=k_pos, k_neg=k_neg)
                found += [self._item(m.record, m.score, search=True) for m in [*got.positives, *got.negatives]]
            found.sort(key=lambda item: item.score or 0.0, reverse=True)
        else:
            for ns in self._namespaces(op.namespace_prefix):
                found += [self._item(r, search=True) for r in self.memory.list(ns, outcome=outcome)]
            found.sort(key=lambda item: item.created_at, reverse=True)
        found = [item for item in found if all(item.value.get(k) == v for k, v in wanted.items())]
        return found[op.offset:op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        for ns in map(to_tuple, self.memory.namespaces()):
            if all(_matches(ns, cond.match_type, tuple(cond.path)) for cond in op.match_conditions or ()):
                ns = ns[:op.max_depth] if op.max_depth is not None else ns
                if ns not in out:
                    out.append(ns)
        return out[op.offset:op.offset + op.limit]


def _matches(namespace: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    """LangGraph's match conditions ('*' matches any one label)."""
    if len(path) > len(namespace):
        return False
    part = namespace[:len(path)] if kind == "prefix" else namespace[len(namespace) - len(path):]
    return all(want in ("*", got) for want, got in zip(path, part))


def _record(key: str, namespace: str, value: dict[str, Any]) -> Any:
    """A MemoryRecord from an item's value; unknown fields are an error, not silently dropped."""
    from mia.memory import MemoryRecord

    if not isinstance(value, dict):
        raise ValueError(f"a MIA memory value is a dict, got {type(value).__name__}")
    allowed = set(MemoryRecord.model_fields) - _ADDRESS
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ValueError(f"unknown memory fields {unknown}; a MIA memory has {sorted(allowed)}")
    missing = [name for name in ("question", "workflow") if not str(value.get(name) or "").strip()]
    if missing:
        raise ValueError(f"a MIA memory needs a non-empty {' and '.join(missing)}")
    return MemoryRecord(**{"source": "langgraph-store", "compression": "manual", **value}, id=key, namespace=namespace)
