"""How a MemoryStore is opened: on the embedded Chroma folder (locked, or a private copy for a
read-only reader), on a Chroma server, or in memory. MemoryStore binds the four openers as its
classmethods (`MemoryStore.open(...)`), so store.py itself is only the store: closing, locks, CRUD."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mia.memory import config
from mia.memory.embeddings import resolve_embedder
from mia.memory.errors import MemoryStoreError
from mia.memory.locking import FolderLock

if TYPE_CHECKING:  # the store binds these functions; importing it at run time would be a cycle
    from mia.memory.store import MemoryStore


def open_embedded(
    cls: type[MemoryStore],
    path: str | Path | None = None,
    *,
    embedder: Any = None,
    lock_timeout: float = 5.0,
    read_only: bool = False,
    snapshot: bool = False,
    **options: Any,
) -> MemoryStore:
    """The embedded store in `path` (default $MIA_DATA_DIR/memory): Chroma in `path/chroma`,
    the trajectory log in `path/trajectories.jsonl`. One process at a time (see locking.py);
    `read_only` and `snapshot` read a private copy instead (see `prepare_folder`)."""
    ready = prepare_folder(path, lock_timeout, read_only=read_only, snapshot=snapshot)
    with ready.opening():
        store = cls(
            ready.client(),
            log_dir=ready.folder,
            embedder=resolve_embedder(embedder),
            location=str(ready.folder),
            mode="persistent",
            folder_lock=ready.lock,
            **options,
        )
        store.private_copy = ready.snapshot
    return store


def open_http(
    cls: type[MemoryStore],
    host: str | None = None,
    port: int | None = None,
    *,
    log_dir: str | Path | None = None,
    embedder: Any = None,
    token: str | None = None,
    auth_header: str | None = None,
    basic_auth: str | None = None,
    **options: Any,
) -> MemoryStore:
    """A store on a Chroma server shared by several processes (`chroma run --path DIR --port P`).
    `log_dir` holds the trajectory log and the write lock: give every process the same one.
    Credentials: see `http_client`."""
    folder = Path(log_dir or config.memory_dir()).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    client, location = http_client(host, port, token, auth_header, basic_auth)
    return cls(client, log_dir=folder, embedder=resolve_embedder(embedder), location=location, mode="http", **options)


def open_in_memory(
    cls: type[MemoryStore], *, embedder: Any = None, log_dir: str | Path | None = None, **options: Any
) -> MemoryStore:
    """A store over the in-process NumPy index (exact cosine): for tests and small
    deployments. Memories vanish with the process; the trajectory log goes to `log_dir`
    (default: a temporary folder removed at close)."""
    from mia.memory.numpy_index import NumpyIndex

    tmp = tempfile.TemporaryDirectory(prefix="mia-memory-") if log_dir is None else None
    folder = Path(tmp.name) if tmp is not None else Path(str(log_dir)).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    store = cls(
        log_dir=folder,
        embedder=resolve_embedder(embedder),
        location=f"memory:{folder}",
        mode="memory",
        index=NumpyIndex(f"memory:{folder}"),
        **options,
    )
    store.temporary_log_dir = tmp
    return store


def open_from_env(
    cls: type[MemoryStore],
    data_dir: str | Path | None = None,
    *,
    mode: str | None = None,
    host: str | None = None,
    port: int | None = None,
    **options: Any,
) -> MemoryStore:
    """Open as the environment says (MIA_CHROMA_MODE, MIA_CHROMA_HOST/PORT, MIA_DATA_DIR)."""
    folder = Path(data_dir).expanduser() / "memory" if data_dir else config.memory_dir()
    if (mode or config.chroma_mode()) == "http":
        return cls.open_http(host, port, log_dir=folder, **options)
    return cls.open(folder, **options)


@dataclass
class EmbeddedFolder:
    """An embedded store's folder made ready to open: its lock taken, or (read-only) a private copy."""

    folder: Path
    lock: FolderLock | None
    snapshot: Any  # the TemporaryDirectory of the private copy, or None

    def client(self) -> Any:
        """A Chroma PersistentClient on the folder (or on its private copy)."""
        import chromadb
        from chromadb.config import Settings

        base = self.folder if self.snapshot is None else Path(self.snapshot.name)
        return chromadb.PersistentClient(
            path=str(base / "chroma"), settings=Settings(anonymized_telemetry=False, allow_reset=True)
        )

    def release(self) -> None:
        """Give back the lock and remove the private copy (an open that failed keeps neither)."""
        if self.lock is not None:
            self.lock.release()
        if self.snapshot is not None:
            self.snapshot.cleanup()

    @contextmanager
    def opening(self) -> Iterator[None]:
        """Release everything if opening fails; any unexpected Chroma failure means an unusable
        store, so it becomes a MemoryStoreError that says how to recover."""
        try:
            yield
        except (MemoryStoreError, TypeError, FileNotFoundError, ModuleNotFoundError):
            self.release()
            raise
        except Exception as err:  # noqa: BLE001 - any Chroma failure here means an unusable store
            self.release()
            raise MemoryStoreError(
                f"the memory store at {self.folder / 'chroma'} cannot be read ({type(err).__name__}: {err}). "
                "It may be corrupt or written by another Chroma version: move it aside and rebuild it "
                "from the trajectory log (`mia memory import` of an export, or MemoryStore.rebuild_from_log)."
            ) from err


def prepare_folder(path: str | Path | None, lock_timeout: float, *, read_only: bool, snapshot: bool) -> EmbeddedFolder:
    """The store folder `path` (default $MIA_DATA_DIR/memory), locked for one process at a time.

    `read_only=True` (the CLI's list, show, search, stats and export) also works on a folder
    that cannot be written: it then opens a private copy of the Chroma folder, takes no
    lock, and every write raises MemoryStoreError. `snapshot=True` does that for any folder (and
    so is read-only too):
    Chroma rewrites its files even when only read, so a reader that must leave the folder as
    it found it (training prompts from a committed store), or must not wait for a live writer's
    lock, reads a copy instead (the copy costs the Chroma folder's size on disk)."""
    from mia.memory.embedded_files import check_chroma_folder, read_only_copy, writable

    folder = Path(path or config.memory_dir()).expanduser()
    check_chroma_folder(folder / "chroma")
    if not folder.exists() or writable(folder):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise MemoryStoreError(f"cannot create the memory folder {folder}: {err}") from err
    elif not read_only:
        raise MemoryStoreError(
            f"the memory folder {folder} is read-only: writing needs a writable data folder "
            "(list, show, search, stats and export still work)"
        )
    private = read_only_copy(folder) if snapshot or not writable(folder) else None
    lock = FolderLock(folder, timeout=lock_timeout) if private is None else None
    if lock is not None:
        lock.acquire()
    return EmbeddedFolder(folder, lock, private)


def http_client(
    host: str | None, port: int | None, token: str | None, auth_header: str | None, basic_auth: str | None
) -> tuple[Any, str]:
    """A Chroma HttpClient that answered a heartbeat, and its location ("http://host:port").

    Credentials go with every request (config.chroma_headers): a `token` sent as `auth_header`
    says, or `basic_auth` USER:PASSWORD (else $MIA_CHROMA_TOKEN, $MIA_CHROMA_AUTH_HEADER,
    $MIA_CHROMA_BASIC_AUTH). `chroma run` (Rust) checks none, Chroma's Python server or a proxy
    in front does (docs/security.md)."""
    import chromadb
    from chromadb.config import Settings

    host = host or config.chroma_host()
    port = int(port or config.chroma_port())
    headers = config.chroma_headers(token, auth_header, basic_auth)
    try:
        client = chromadb.HttpClient(
            host=host, port=port, headers=headers or None, settings=Settings(anonymized_telemetry=False)
        )
        client.heartbeat()
    except Exception as err:  # noqa: BLE001
        if any(word in str(err) for word in ("401", "403", "Unauthorized", "Forbidden")):
            raise MemoryStoreError(
                f"the Chroma server at {host}:{port} refused the credentials ({type(err).__name__}: {err}). "
                "Set MIA_CHROMA_TOKEN (and MIA_CHROMA_AUTH_HEADER if it expects X-Chroma-Token), "
                "or MIA_CHROMA_BASIC_AUTH=USER:PASSWORD."
            ) from err
        raise MemoryStoreError(
            f"cannot reach the Chroma server at {host}:{port} ({type(err).__name__}: {err}). "
            f"Start one with `chroma run --path DIR --port {port}` or use MIA_CHROMA_MODE=persistent."
        ) from err
    return client, f"http://{host}:{port}"
