"""Errors the memory layer raises on purpose, so callers (the CLI, the graph) can show a message
instead of a stack trace when a store is corrupt, locked, from another schema, or unreachable."""

from __future__ import annotations


class MemoryStoreError(RuntimeError):
    """The store cannot be used as asked; the message says why and what to do."""


class StoreLockedError(MemoryStoreError):
    """Another process holds the embedded (PersistentClient) store folder."""


class SchemaMismatchError(MemoryStoreError):
    """The store on disk was written by another schema version or with another embedder."""


class InvalidNamespaceError(MemoryStoreError, ValueError):
    """A namespace that is empty or not a plain name (see `mia.memory.namespaces`)."""


class EmbeddingModelMissingError(MemoryStoreError, FileNotFoundError):
    """The embedding model the memory needs is not installed: memory cannot work at all in this
    install, so the graph raises it instead of answering without memory (a set-up mistake, not a
    passing failure); the message says what to run."""
