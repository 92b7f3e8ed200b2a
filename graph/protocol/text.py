"""Untrusted text at the boundary: sanitising what models and tools return, bounding its length,
and escaping it before it goes inside a prompt's fence.

Why here: every string a model or a tool produces enters the graph through one of a few nodes;
cleaning it once there (lone surrogates, NUL and other control characters) means nothing later
(the trajectory log, Chroma, JSON) can fail on it (the cleaning itself is mia.memory.text's, which
the records apply again for trajectories that come through the library), and escaping tag-like text means a document
cannot close the `<tool_response>` (or `<trajectory>`) fence it is shown in.
"""

from __future__ import annotations

import re

from mia.memory.text import clean_text, clean_value
from mia.memory.trajectory import truncate_words

MAX_TEXT_CHARS = 200_000
"""Longest model reply or tool result a parser reads; the rest is cut (a bound, not a target)."""

_TAG_START = re.compile(r"<(?=\s*/?\s*[A-Za-z_|!?])")


def bounded(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """The first `limit` characters (parsers only ever read this much)."""
    return text if len(text) <= limit else text[:limit]


def escape_untrusted(text: str) -> str:
    """Text from a tool, a document or a model, made safe to put inside a prompt's tag fence.

    Every `<` that starts something tag-like (`</tool_response>`, `<answer>`, `<|im_end|>`) becomes
    `&lt;`, so the text cannot close its fence or open a protocol block; everything else is kept.
    """
    return _TAG_START.sub("&lt;", clean_text(text))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def drop_repeats(text: str) -> str:
    """`text` up to the first sentence it has already written, or unchanged if none repeats.

    Why: Qwen-1.5B can loop inside an answer until the token limit (HotpotQA "Crowea or
    Dracula?", results/hotpotqa-qwen-defaults/mia: 1,467 characters, the same four sentences
    written four times over). What came before the loop is the answer; the loop is noise that
    costs F1 and the judge's prompt. Sentences are compared case- and space-insensitively."""
    sentences = _SENTENCE_END.split(text.strip())
    seen: set[str] = set()
    for i, sentence in enumerate(sentences):
        key = " ".join(sentence.lower().split())
        if key in seen:
            return " ".join(sentences[:i])
        seen.add(key)
    return text


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about 4 characters a token) for the context budget."""
    return len(text) // 4 + 1


__all__ = [
    "MAX_TEXT_CHARS",
    "bounded",
    "clean_text",
    "clean_value",
    "drop_repeats",
    "escape_untrusted",
    "estimate_tokens",
    "truncate_words",
]  # truncate_words and the cleaning: their one definitions live in mia.memory
