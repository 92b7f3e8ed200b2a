"""The one rule for namespace names, checked wherever a namespace enters the memory layer
(the store's methods, imported records, the CLI, the environment variable).

A namespace is a user, tenant or project. It names Chroma collections (through a slug and a
hash) and, in other layers, folders (adapter registries, learner queues), so it is kept to a
plain name: 1 to 64 characters from ASCII letters, digits and `. _ - : @ +`, starting with a
letter or a digit. `""` used to read "default" and write "": no silent fallback any more.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from mia.memory import config
from mia.memory.errors import InvalidNamespaceError

MAX_LENGTH = 64
_VALID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]*")


def check_namespace(namespace: object) -> str:
    """Return the namespace unchanged if it is valid, else raise InvalidNamespaceError with a
    one-line message that says the rule."""
    if not isinstance(namespace, str):
        raise InvalidNamespaceError(f"a namespace must be a string, not {type(namespace).__name__}")
    if not namespace:
        raise InvalidNamespaceError("the namespace is empty: give a name such as 'default'")
    if len(namespace) > MAX_LENGTH or not _VALID.fullmatch(namespace):
        shown = ascii(namespace[:MAX_LENGTH]) + ("..." if len(namespace) > MAX_LENGTH else "")
        raise InvalidNamespaceError(
            f"invalid namespace {shown}: use 1 to {MAX_LENGTH} characters from A-Z a-z 0-9 . _ - : @ +, "
            "starting with a letter or a digit"
        )
    return namespace


def resolve_namespace(namespace: str | None) -> str:
    """None means the configured default ($MIA_MEMORY_NAMESPACE or 'default'); anything else,
    the empty string included, must be a valid name."""
    return check_namespace(config.namespace() if namespace is None else namespace)


def namespace_folder(namespace: str) -> str:
    """A valid namespace as one path component (its learner queue and adapter history live under
    it): the name itself, with `:`, `@` and `+` percent-encoded (`users:alice` -> `users%3Aalice`),
    so any name the store accepts has a folder on any filesystem, one-to-one, and none can leave
    the data directory (no `/`, and a valid name never is `.` or `..`)."""
    return quote(check_namespace(namespace), safe="._-")


def is_valid_namespace(namespace: object) -> bool:
    """Whether `check_namespace` would accept it."""
    try:
        check_namespace(namespace)
    except InvalidNamespaceError:
        return False
    return True
