"""Keep our own prompt text out of answers.

A small model that loses track of the conversation copies instructions it was given ("Continue
from where you are with this guidance.") into its answer. Such a line is never information about
the question, so it is cut before the answer is shown, judged or stored. The fragments come from
the prompt files themselves, so a prompt edited later is covered without a second list.
"""

from __future__ import annotations

import re
from functools import cache

from mia.graph.prompts import load_prompts

PROMPT_FILES = ("executor", "planner", "memory")
MIN_FRAGMENT = 24  # shorter fragments ("Question:") could be part of a real answer
_FIELD = re.compile(r"\{[^{}]*\}|<[^<>]*>|(?<=[.!?])\s+")  # placeholders, tags, sentence ends
_SPACE = re.compile(r"\s+")


@cache
def prompt_fragments() -> tuple[str, ...]:
    """Literal sentences of every template line (placeholders and tags split them), longest first."""
    found: set[str] = set()
    for name in PROMPT_FILES:
        for template in load_prompts(name).values():
            for line in template.splitlines():
                for piece in _FIELD.split(line.replace("{{", "{").replace("}}", "}")):
                    piece = _SPACE.sub(" ", piece).strip(" -:*\"'")
                    if len(piece) >= MIN_FRAGMENT:
                        found.add(piece)
    return tuple(sorted(found, key=len, reverse=True))


@cache
def _pattern() -> re.Pattern[str]:
    parts = [r"\s+".join(re.escape(word) for word in frag.split()) for frag in prompt_fragments()]
    return re.compile("|".join(parts), re.IGNORECASE)


def strip_prompt_echo(text: str) -> str:
    """`text` without any copied prompt fragment; blank lines and dangling separators tidied."""
    if not text:
        return text
    cut = _pattern().sub(" ", text)
    if cut == text:
        return text
    lines = [_SPACE.sub(" ", line).strip(" /|-:") for line in cut.splitlines()]
    return "\n".join(line for line in lines if line).strip()
