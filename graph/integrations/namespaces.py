"""LangGraph namespaces (tuples of labels) <-> MIA namespaces (one string).

LangGraph forbids '.' inside a label, so joining the labels with '.' is one-to-one:
("users", "alice") is MIA's namespace "users.alice", and MIA's "default" is ("default",)."""

from __future__ import annotations

SEPARATOR = "."


def to_mia(namespace: tuple[str, ...]) -> str:
    """The MIA namespace string of a LangGraph namespace tuple."""
    if not namespace or not all(isinstance(label, str) and label for label in namespace):
        raise ValueError(f"a namespace is a non-empty tuple of non-empty strings, got {namespace!r}")
    if any(SEPARATOR in label for label in namespace):
        raise ValueError(f"namespace labels cannot contain {SEPARATOR!r}: {namespace!r}")
    return SEPARATOR.join(namespace)


def to_tuple(namespace: str) -> tuple[str, ...]:
    """The LangGraph tuple of a MIA namespace string."""
    return tuple(namespace.split(SEPARATOR))


def under(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    """Whether `namespace` starts with `prefix` (the empty prefix holds every namespace)."""
    return namespace[: len(prefix)] == prefix
