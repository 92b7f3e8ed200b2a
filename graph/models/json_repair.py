"""Lenient JSON extraction for small-model output: code fences, prose around the object,
single quotes, Python literals, trailing commas and truncated endings."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_UNQUOTED_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w-]*)\s*:")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


class JSONRepairError(ValueError):
    """No JSON value could be recovered from the text."""


def _balanced_span(text: str, start: int) -> tuple[str, bool]:
    """The text from `start` to its matching close bracket; (span, closed)."""
    stack: list[str] = []
    in_str: str | None = None
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == in_str:
                in_str = None
            continue
        if ch in "\"'":
            in_str = ch
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if stack and stack[-1] == ch:
                stack.pop()
            if not stack:
                return text[start : i + 1], True
    # Truncated: close an open string and every open bracket.
    tail = (in_str or "") + "".join(reversed(stack))
    return text[start:] + tail, False


def _attempts(candidate: str) -> list[str]:
    fixed = _TRAILING_COMMA.sub(r"\1", candidate)
    keyed = _UNQUOTED_KEY.sub(r'\1"\2":', fixed)  # {query_list: [...]} -> {"query_list": [...]}
    return [candidate, fixed, keyed]


def _loads(candidate: str) -> Any:
    for attempt in _attempts(candidate):
        try:
            return json.loads(attempt)
        except json.JSONDecodeError:
            pass
        pythonish = re.sub(r"\btrue\b", "True", attempt)
        pythonish = re.sub(r"\bfalse\b", "False", pythonish)
        pythonish = re.sub(r"\bnull\b", "None", pythonish)
        try:
            value = ast.literal_eval(pythonish)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, (dict, list)):
            return json.loads(json.dumps(value))
    raise JSONRepairError(candidate[:200])


def parse_json_loose(text: str, *, want: type | None = dict) -> Any:
    """Return the first JSON object (or array when want is list/None) found in `text`.

    Raises JSONRepairError with a short excerpt when nothing parses.
    """
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    openers = "{" if want is dict else "[" if want is list else "{["
    for source in sources:
        for start, ch in enumerate(source):
            if ch not in openers:
                continue
            span, _closed = _balanced_span(source, start)
            try:
                return _loads(span)
            except JSONRepairError:
                continue
    raise JSONRepairError(f"no JSON {'object' if want is dict else 'value'} found in: {text[:200]!r}")
