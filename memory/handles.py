"""Cached Chroma collection handles that survive another process deleting the collection.

Chroma binds a collection object to the collection's id. When another process runs
`mia memory reset` through a shared server, the name is deleted (and maybe re-created with a
new id), and every later call on the cached object raised NotFoundError until the process
restarted. A `CollectionHandle` re-opens the collection by name on that error and retries the
call once: a write re-creates it, a read of a collection that is gone returns an empty result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Opener = Callable[[bool], Any]  # create -> a Chroma collection, or None when absent and not created


def is_not_found(err: BaseException) -> bool:
    """Chroma's 'collection does not exist' error, whatever its class in this version."""
    try:
        from chromadb.errors import NotFoundError
    except ImportError:  # pragma: no cover - older chromadb
        not_found: tuple[type[BaseException], ...] = ()
    else:
        not_found = (NotFoundError,)
    text = str(err).lower()
    return isinstance(err, not_found) or "does not exist" in text or "not found" in text


def _empty_get(**_: Any) -> dict[str, list[Any]]:
    return {"ids": [], "documents": [], "metadatas": [], "embeddings": [], "distances": []}


def _empty_query(**_: Any) -> dict[str, list[list[Any]]]:
    return {key: [[]] for key in ("ids", "documents", "metadatas", "embeddings", "distances")}


class CollectionHandle:
    """The few collection methods the store uses, each retried once on a re-opened collection."""

    def __init__(self, collection: Any, opener: Opener) -> None:
        self._col = collection
        self._opener = opener

    @property
    def name(self) -> str:
        return str(self._col.name)

    @property
    def metadata(self) -> dict[str, Any] | None:
        return self._col.metadata

    def _call(self, method: str, write: bool, empty: Callable[..., Any], **kwargs: Any) -> Any:
        try:
            return getattr(self._col, method)(**kwargs)
        except Exception as err:  # noqa: BLE001 - only "not found" is handled; the rest propagates
            if not is_not_found(err):
                raise
        fresh = self._opener(write)
        if fresh is None:  # gone, and a read: nothing is stored there any more
            return empty(**kwargs)
        self._col = fresh
        return getattr(fresh, method)(**kwargs)

    def upsert(self, **kwargs: Any) -> None:
        self._call("upsert", True, lambda **_: None, **kwargs)

    def update(self, **kwargs: Any) -> None:
        self._call("update", False, lambda **_: None, **kwargs)  # nothing to update in a new collection

    def delete(self, **kwargs: Any) -> None:
        self._call("delete", False, lambda **_: None, **kwargs)

    def get(self, **kwargs: Any) -> dict[str, Any]:
        return self._call("get", False, _empty_get, **kwargs)

    def query(self, **kwargs: Any) -> dict[str, Any]:
        return self._call("query", False, _empty_query, **kwargs)

    def count(self) -> int:
        return int(self._call("count", False, lambda **_: 0))
