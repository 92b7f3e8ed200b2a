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


def _span_at(text: str, start: int) -> tuple[int, bool, bool]:
    """(end, closed, too_deep) of the bracketed span opening at `start`. Strings (double or
    single quoted) are skipped so brackets inside them do not count; a span left open runs to
    the end of the text; a span nested deeper than MAX_DEPTH is refused where it gets too deep."""
    depth, in_str, escaped = 0, "", False
    for j in range(start, len(text)):
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
            if depth > MAX_DEPTH:  # refused: stop here (the next opener is tried, cheaply)
                return j + 1, False, True
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return j + 1, True, False
    return len(text), False, False


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
    """Every JSON value (objects, or arrays too when want is list/None) recoverable from text, in order.

    Spans are taken left to right without overlap; only a span that runs unclosed to the end and
    yields nothing is retried from its next opener (an apostrophe in prose can open a "string"
    that swallows the rest). At most MAX_SPANS spans are tried, so the work stays linear."""
    text = bounded(text or "")
    openers = "{" if want is dict else "[" if want is list else "{["
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    tried = 0
    for source in sources:
        pos = _next_opener(source, 0, openers)
        while pos >= 0 and tried < MAX_SPANS:
            tried += 1
            end, closed, too_deep = _span_at(source, pos)
            value = None
            if not too_deep:
                try:
                    value = _repair(source[pos : min(end, pos + MAX_JSON_CHARS)])
                except JSONRepairError:
                    value = None
            found = value is not None and (want is None or isinstance(value, want))
            if found:
                yield value
            pos = _next_opener(source, end if closed or found else pos + 1, openers)


def parse_json_loose(text: str, *, want: type | None = dict) -> Any:
    """The first JSON object (or array when want is list/None) in `text`.

    Raises JSONRepairError, with a short excerpt, when nothing can be recovered."""
    for value in json_values(text, want=want):
        return value
    raise JSONRepairError(f"no JSON {'object' if want is dict else 'value'} found in: {str(text)[:200]!r}")


def lenient_json(text: str) -> Any:
    """Parse JSON the way small models write it: the first object or array in text."""
    return parse_json_loose(text, want=None)
