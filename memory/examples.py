"""Copies of our own prompts' format examples, found in model output.

Small models fill a prompt's example with the current question's names: the 0.5B manager wrote
"Search each entity's founding date" for a telenovela question, and a planner example ("river A
length") was once stored as a memory. Such text describes the example, not the episode. One
check serves the compressor (reject and retry) and the memory screen (flag a stored workflow).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_FRAGMENT = 10  # shorter example fragments ("entity B") could be part of a real workflow
_EXAMPLE_HEAD = re.compile(r"^\s*example\b", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*\d{1,2}[.)]\s*(.+)$")
_QUOTED = re.compile(r'"([^"]+)"')
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def normalise(text: str) -> str:
    """Case-folded words only, so punctuation and spacing do not hide a copy."""
    return " ".join(_WORD.findall(text.casefold()))


@dataclass(frozen=True)
class PromptExample:
    """One prompt's example block: per line, its normalised fragments (the whole line and its
    purpose, the text before "(input -> output)"), and the placeholder strings it quotes."""

    lines: tuple[frozenset[str], ...]
    quoted: frozenset[str]

    @classmethod
    def from_lines(cls, lines: list[str]) -> PromptExample | None:
        per_line: list[frozenset[str]] = []
        quoted: set[str] = set()
        for line in lines:
            match = _NUMBERED.match(line)
            body = match.group(1) if match else line
            fragments = {normalise(body), normalise(body.split("(", 1)[0])}
            per_line.append(frozenset(f for f in fragments if len(f) >= MIN_FRAGMENT))
            quoted |= {q for q in map(normalise, _QUOTED.findall(body)) if len(q) >= MIN_FRAGMENT}
        per_line = [f for f in per_line if f]
        return cls(tuple(per_line), frozenset(quoted)) if per_line or quoted else None

    @classmethod
    def in_template(cls, template: str) -> PromptExample | None:
        """The example block of a template: the lines after one starting "Example", up to a blank line."""
        block: list[str] = []
        inside = False
        for line in template.splitlines():
            if _EXAMPLE_HEAD.match(line):
                inside = True
            elif inside and not line.strip():
                inside = False
            elif inside:
                block.append(line)
        return cls.from_lines(block)

    @classmethod
    def whole(cls, example: str) -> PromptExample | None:
        """A text that is all example (a prompt file's `example` key)."""
        return cls.from_lines([line for line in example.splitlines() if line.strip()])

    def copied_in(self, text: str, context: str = "") -> str | None:
        """The first copied fragment, or None. A quoted placeholder that the context (the
        transcript being summarised) does not contain is enough; plain example text counts only
        when it comes from two lines of the example."""
        normal, known = f" {normalise(text)} ", f" {normalise(context)} "
        for q in self.quoted:
            if f" {q} " in normal and f" {q} " not in known:
                return q
        hits = [
            max(found, key=len) for fragments in self.lines if (found := [f for f in fragments if f" {f} " in normal])
        ]
        return hits[0] if len(hits) >= 2 else None
