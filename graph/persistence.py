"""Checkpointers and stores from a target string: the production path of LangGraph users.

`postgresql://...` (or `postgres://...`) gives LangGraph's PostgresSaver / PostgresStore (the
`postgres` extra), a file path or `sqlite:///path` gives a SqliteSaver; objects pass through. The
savers serve `invoke` and `ainvoke` alike (`ThreadedAsync`).
Why one module: `mia ask --checkpointer` and `build_graph(checkpointer="postgresql://...")` must
agree on what a target means, and the tables must be created (`setup()`) exactly once per open.

Two forms:
- `open_checkpointer(target)` / `open_store(target)`: context managers that close the connection
  (the CLI: one run, then close);
- `resolve_checkpointer(target)` / `resolve_store(target)`: for `build_graph`, which returns a
  long-lived compiled graph; a Postgres target gets a connection pool that lives as long as the
  process (closed at exit).
"""

from __future__ import annotations

import asyncio
import atexit
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
INSTALL_HINT = "pip install 'mia-agent[postgres]'"


class PersistenceError(RuntimeError):
    """A checkpointer/store target that cannot be used (bad string, missing extra, unreachable server)."""


class ThreadedAsync:
    """Async checkpointer methods that run the saver's own sync methods in a worker thread.

    Why: `build_graph` is synchronous and LangGraph's native async savers (AsyncSqliteSaver,
    AsyncPostgresSaver) can only be opened inside a running event loop, so a target string would
    otherwise give a graph whose `ainvoke`/`astream` raise NotImplementedError. The event loop never
    waits on the database: each call runs in asyncio's default executor, serialised by the saver's
    own lock (SQLite) or connection pool (PostgreSQL). A caller inside a loop may still pass a native
    async saver object; it passes through untouched."""

    async def aget_tuple(self, config: Any) -> Any:
        return await asyncio.to_thread(self.get_tuple, config)  # type: ignore[attr-defined]

    async def alist(
        self, config: Any, *, filter: dict[str, Any] | None = None, before: Any = None, limit: int | None = None
    ) -> AsyncIterator[Any]:
        found = await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))  # type: ignore[attr-defined]
        for item in found:
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)  # type: ignore[attr-defined]

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)  # type: ignore[attr-defined]

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)  # type: ignore[attr-defined]


_Saver = TypeVar("_Saver")


def threaded(saver_cls: type[_Saver]) -> type[_Saver]:
    """`saver_cls` with `ThreadedAsync`'s async methods (one subclass per saver class, cached)."""
    if saver_cls not in _THREADED:
        _THREADED[saver_cls] = type(
            saver_cls.__name__,
            (ThreadedAsync, saver_cls),
            {"__module__": __name__, "__doc__": f"{saver_cls.__name__} that also serves ainvoke (see ThreadedAsync)."},
        )
    return _THREADED[saver_cls]


_THREADED: dict[type, type[Any]] = {}


def is_postgres(target: Any) -> bool:
    return isinstance(target, str) and target.strip().lower().startswith(POSTGRES_SCHEMES)


def redact(url: str) -> str:
    """The URL without its password (for error messages)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    user = f"{parts.username}@" if parts.username else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"


def _sqlite_path(target: str | Path) -> Path:
    """sqlite:///relative/path, sqlite:////absolute/path, or a plain path."""
    text = str(target)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    if "://" in text or not text.strip():
        raise PersistenceError(f"checkpointer {text!r}: use postgresql://..., sqlite:///PATH or a file path")
    path = Path(text).expanduser()
    if path.is_dir():
        raise PersistenceError(
            f"checkpointer {text!r} is a folder: name a file in it (e.g. {path / 'checkpoints.sqlite'})"
        )
    return path


def _postgres_modules() -> tuple[Any, Any, Any, Any]:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.store.postgres import PostgresStore
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool
    except ModuleNotFoundError as err:
        raise PersistenceError(
            f"a PostgreSQL checkpointer or store needs the 'postgres' extra: {INSTALL_HINT}"
        ) from err
    return PostgresSaver, PostgresStore, dict_row, ConnectionPool


def _connect_error(url: str, err: Exception) -> PersistenceError:
    first = (str(err).strip().splitlines() or [type(err).__name__])[0]
    return PersistenceError(f"cannot use PostgreSQL at {redact(url)}: {first}")


@contextmanager
def open_checkpointer(target: str | Path) -> Iterator[Any]:
    """A checkpointer for one run (tables created when missing), closed on exit."""
    if is_postgres(target):
        saver_cls, _, _, _ = _postgres_modules()
        import psycopg

        try:
            manager = threaded(saver_cls).from_conn_string(str(target))
            saver = manager.__enter__()
            saver.setup()
        except psycopg.Error as err:
            raise _connect_error(str(target), err) from err
        try:
            yield saver
        finally:
            manager.__exit__(None, None, None)
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = _sqlite_path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    with threaded(SqliteSaver).from_conn_string(str(path)) as saver:
        yield saver


@contextmanager
def open_store(target: str) -> Iterator[Any]:
    """A PostgresStore for one run (tables created when missing), closed on exit."""
    if not is_postgres(target):
        raise PersistenceError(f"store {target!r}: only postgresql://... targets name a store")
    _, store_cls, _, _ = _postgres_modules()
    import psycopg

    try:
        manager = store_cls.from_conn_string(str(target))
        store = manager.__enter__()
        store.setup()
    except psycopg.Error as err:
        raise _connect_error(str(target), err) from err
    try:
        yield store
    finally:
        manager.__exit__(None, None, None)


def _pool(url: str) -> Any:
    _, _, dict_row, pool_cls = _postgres_modules()
    import psycopg

    pool = pool_cls(
        url,
        min_size=1,
        max_size=4,
        open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    )
    try:
        pool.open(wait=True, timeout=30)
    except (psycopg.Error, Exception) as err:  # PoolTimeout is not a psycopg.Error
        pool.close()
        raise _connect_error(url, err) from err
    atexit.register(pool.close)
    return pool


def resolve_checkpointer(target: Any) -> Any:
    """What `build_graph(checkpointer=...)` compiles with: a Postgres URL or a SQLite path becomes a
    saver (with its tables), anything else (None, a saver, True/False) is LangGraph's business."""
    if is_postgres(target):
        saver_cls, _, _, _ = _postgres_modules()
        saver = threaded(saver_cls)(_pool(target))
        saver.setup()
        return saver
    if isinstance(target, (str, Path)):  # sqlite:///PATH or a file path, as `mia ask --checkpointer` takes it
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        path = _sqlite_path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        return threaded(SqliteSaver)(sqlite3.connect(str(path), check_same_thread=False))
    return target


def resolve_store(target: Any) -> Any:
    """What `build_graph(store=...)` compiles with: a Postgres URL becomes a PostgresStore (with its
    tables); a BaseStore or None passes through."""
    if is_postgres(target):
        _, store_cls, _, _ = _postgres_modules()
        store = store_cls(_pool(target))
        store.setup()
        return store
    if isinstance(target, str):
        raise PersistenceError(f"store {target!r}: only postgresql://... targets name a store")
    return target
