"""Text that every record can be written with: lone surrogates and control characters cleaned.

Why in memory, the lowest layer: the trajectory log, Chroma and every JSON line are written here,
and a trajectory can reach `MemoryStore.memorise` through the library without passing the graph's
boundary nodes. One definition serves the records, the graph's boundary (graph/protocol/text.py
re-exports it) and the model server, so the rule cannot drift between them.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def valid_unicode(text: str) -> str:
    """`text` if it encodes to UTF-8, else with each lone surrogate replaced by U+FFFD (a valid
    pair, legal in JSON's \\u escapes, is joined into its character)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def clean_text(value: Any) -> str:
    """A str that encodes to UTF-8 and JSON: lone surrogates become U+FFFD, control characters
    other than tab and newlines (NUL among them) are dropped. Never raises."""
    text = value if isinstance(value, str) else ("" if value is None else safe_str(value))
    return _CONTROL.sub("", valid_unicode(text))


def drop_controls(value: str) -> str:
    """`value` without control characters other than tab and newlines (NUL among them); a lone
    surrogate is left for the caller to refuse (a memory record does, naming the field)."""
    return _CONTROL.sub("", value)


def clean_value(value: Any, text: Any = clean_text) -> Any:
    """`text` (by default `clean_text`) applied to every string inside lists, tuples and dicts (keys too)."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {clean_value(k, text): clean_value(v, text) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(clean_value(v, text) for v in value)
    return value


# what orjson writes for a control character other than tab and newlines: \u0000-\u001f, \b, \f, and
# DEL as itself (a text that spells an escape out with a backslash matches too: it is only cleaned,
# harmlessly). Plain substring searches: a regex alternation took 50 us over a 5.6 kB trajectory.
_ESCAPED_CONTROL = (b"\\u00", b"\\b", b"\\f", b"\x7f")


def needs_cleaning(value: Any) -> bool:
    """False when `value` (JSON-like data) holds no text `clean_value` would change, found in C:
    orjson refuses a lone surrogate and escapes every control character. Why: a trajectory is
    validated each time the log is read, and walking every string in Python made that 12x slower."""
    try:
        dumped = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # a surrogate, or not plain JSON data: look closer
        return True
    return any(mark in dumped for mark in _ESCAPED_CONTROL)


def cleaned_data(data: Any, keep: tuple[str, ...] = ()) -> Any:
    """`data` with every string cleaned (`clean_value`), or `data` itself when nothing needs it:
    the before-validator of each record that is written as a JSON line (a trajectory, an
    evaluation result, an online episode), so text from any API can always be written. The keys
    in `keep` (a namespace) stay as given, for their own validator to refuse: cleaning "a\x1f"
    into "a" would write into another tenant's namespace."""
    if not needs_cleaning(data):
        return data
    cleaned = clean_value(data)
    if isinstance(data, dict):
        cleaned.update({key: data[key] for key in keep if key in data})
    return cleaned


def safe_str(value: Any) -> str:
    """str(value), or its type's name when a hostile __str__ raises."""
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - keep the type name, lose nothing else
        return f"<unprintable {type(value).__name__}>"
