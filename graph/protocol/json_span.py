"""Lenient JSON from model output: one balanced-span scan, then the `json-repair` library.

Small models write JSON with single quotes, unquoted keys, trailing commas, Python literals,
doubled template braces, code fences and missing closing brackets. The scan finds candidate
spans left to right without ever rescanning (linear time), refuses spans nested deeper than
MAX_DEPTH (json-repair and json recurse), and hands each span to json-repair. Nothing here raises
anything but JSONRepairError.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import json_repair
from mia.graph.protocol.text import bounded

MAX_JSON_CHARS = 32_768
"""Longest span handed to the repairer; a longer one is cut (and closed) there."""
MAX_DEPTH = 48
"""Deepest bracket nesting accepted (no tool call is nested this deep)."""
MAX_SPANS = 16
"""Candidate spans tried per text before giving up."""

_FENCE = re.compile(r"```(?:json)?[ \t]*\n?(.*?)```", re.DOTALL)


class JSONRepairError(ValueError):
    """No JSON value could be recovered from the text."""


def _spans(text: str, openers: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, too_deep) of each top-level bracketed span, left to right, never overlapping.

    Strings (double or single quoted) are skipped so brackets inside them do not count; a span
    left open at the end of the text runs to the end."""
    i, n = 0, len(text)
    while i < n:
        start = _next_opener(text, i, openers)
        if start < 0:
            return
        depth, deepest, in_str, escaped, j = 0, 0, "", False, start
        while j < n:
            ch = text[j]
            if in_str:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == in_str:
                    in_str = ""
            elif ch in "\"'":
                in_str = ch
            elif ch in "{[":
                depth += 1
                deepest = max(deepest, depth)
            elif ch in "}]":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        yield start, min(j + 1, n), deepest > MAX_DEPTH
        i = j + 1


def _next_opener(text: str, pos: int, openers: str) -> int:
    found = [k for k in (text.find(o, pos) for o in openers) if k >= 0]
    return min(found) if found else -1


def _repair(span: str) -> Any:
    """json.loads, else json-repair; JSONRepairError when neither yields an object or array."""
    try:
        return json.loads(span)
    except (ValueError, RecursionError):
        pass
    try:
        value = json_repair.loads(span)
    except (Exception, RecursionError) as exc:  # noqa: BLE001 - the library's own failure is ours to report
        raise JSONRepairError(f"unreadable JSON ({type(exc).__name__})") from None
    if not isinstance(value, (dict, list)) or value in ({}, []) and len(span.strip()) > 2:
        raise JSONRepairError("no JSON object")
    return value


def json_values(text: str, *, want: type | None = dict) -> Iterator[Any]:
    """Every JSON value (objects, or arrays too when want is list/None) recoverable from text, in order."""
    text = bounded(text or "")
    openers = "{" if want is dict else "[" if want is list else "{["
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    tried = 0
    for source in sources:
        for start, end, too_deep in _spans(source, openers):
            tried += 1
            if tried > MAX_SPANS:
                return
            if too_deep:
                continue
            try:
                value = _repair(source[start:min(end, start + MAX_JSON_CHARS)])
            except JSONRepairError:
                continue
            if want is None or isinstance(value, want):
                yield value


def parse_json_loose(text: str, *, want: type | None = dict) -> Any:
    """The first JSON object (or array when want is list/None) in `text`.

    Raises JSONRepairError, with a short excerpt, when nothing can be recovered."""
    for value in json_values(text, want=want):
        return value
    raise JSONRepairError(f"no JSON {'object' if want is dict else 'value'} found in: {str(text)[:200]!r}")


def lenient_json(text: str) -> Any:
    """Parse JSON the way small models write it: the first object or array in text."""
    return parse_json_loose(text, want=None)
