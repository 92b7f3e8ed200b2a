"""The protocol's tags (`<think>`, `<tool_call>`, `<answer>`, `<tool_response>`), found in one pass.

Why a tokenizer instead of `<think>.*?</think>` regexes: a non-greedy block regex rescans to the
end of the text from every unclosed opening tag, which is quadratic on a reply with thousands of
`<answer>` tags. Here one `finditer` lists the tags, and every helper walks that list once.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from mia.graph.protocol.text import bounded

TAG_NAMES = ("think", "tool_call", "answer", "tool_response")
TAG_PATTERN = re.compile(r"<[ \t]*(/?)[ \t]*(think|tool_call|answer|tool_response)[ \t]*>", re.IGNORECASE)
"""One protocol tag: group 1 is "/" on a closing tag, group 2 the name (also read by `mia ask`'s
streamed text, app/commands/live_text.py)."""


class Tag(NamedTuple):
    """One protocol tag in a text."""

    name: str
    closing: bool
    start: int
    end: int


@lru_cache(maxsize=16)
def tags(text: str) -> tuple[Tag, ...]:
    """All protocol tags of text, in order (names lower-cased); cached, since one reply is read
    by several helpers in turn."""
    return tuple(Tag(m[2].lower(), m[1] == "/", m.start(), m.end()) for m in TAG_PATTERN.finditer(text))


def remove_tags(text: str) -> str:
    """Text without any protocol tag (their contents stay)."""
    return TAG_PATTERN.sub("", text)


def _first(found: tuple[Tag, ...], name: str, closing: bool, after: int = 0) -> Tag | None:
    return next((t for t in found if t.start >= after and t.name == name and t.closing == closing), None)


def split_think(text: str) -> tuple[str, str]:
    """(thinking, rest). An unclosed <think> runs until the next other protocol tag or the end."""
    text = bounded(text or "")
    found = tags(text)
    open_ = _first(found, "think", False)
    close = _first(found, "think", True)
    if close and (not open_ or open_.start < close.start):
        start = open_.end if open_ else 0
        return text[start : close.start].strip(), (text[: open_.start] if open_ else "") + text[close.end :]
    if open_:
        nxt = next((t for t in found if t.start >= open_.end and t.name != "think"), None)
        end = nxt.start if nxt else len(text)
        return text[open_.end : end].strip(), text[: open_.start] + text[end:]
    return "", text


def strip_think(text: str) -> str:
    """The visible part of a reply (what the paper forwards from the planner: text after </think>)."""
    return remove_tags(split_think(text or "")[1]).strip() if text else ""


def after_last_think(text: str) -> str:
    """The text after the last `</think>` (or all of it): what the paper reads as a plan, a
    decision or a judge's reply; complete <think> blocks before it are dropped with it."""
    text = bounded(text or "")
    closes = [t for t in tags(text) if t.name == "think" and t.closing]
    return text[closes[-1].end :].strip() if closes else text.strip()


def tagged(text: str, name: str) -> tuple[str, int, int] | None:
    """(body, start, end) of the first `<name>` block; a missing close tag runs to the next tag or the end."""
    found = tags(text)
    open_ = _first(found, name, False)
    if not open_:
        return None
    close = _first(found, name, True, open_.end)
    if close:
        return text[open_.end : close.start], open_.start, close.end
    nxt = next((t for t in found if t.start >= open_.end), None)
    end = nxt.start if nxt else len(text)
    return text[open_.end : end], open_.start, end


def closed_blocks(text: str, name: str) -> list[str]:
    """Bodies of every complete `<name>...</name>` block, as `<name>(.*?)</name>` would find them."""
    out, open_at = [], -1
    for t in tags(text):
        if t.name != name:
            continue
        if not t.closing and open_at < 0:
            open_at = t.end
        elif t.closing and open_at >= 0:
            out.append(text[open_at : t.start])
            open_at = -1
    return out


def count_tags(text: str, name: str, closing: bool) -> int:
    """How many `<name>` (or `</name>`) tags text holds."""
    return sum(1 for t in tags(text) if t.name == name and t.closing == closing)


def remove_blocks(text: str, names: tuple[str, ...]) -> str:
    """Text without its complete `<name>...</name>` blocks for the given names (an unclosed
    block is kept, as a non-greedy block regex would leave it)."""
    out, pos, open_tag = [], 0, None
    for t in tags(text):
        if t.name not in names:
            continue
        if open_tag is None and not t.closing:
            open_tag = t
        elif open_tag is not None and t.closing and t.name == open_tag.name:
            out.append(text[pos : open_tag.start] + " ")
            pos, open_tag = t.end, None
    out.append(text[pos:])
    return "".join(out)
