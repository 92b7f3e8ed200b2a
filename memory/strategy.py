"""A stored workflow as a reusable strategy: the other question's names become placeholders, and
what its searches found and what it answered are left out.

Why: the planner copies what it is shown. With the workflow as stored, a HotpotQA plan began
`Search for evidence (query "Thomas Matthew Chappell founding company" -> found Ignite! Learning,
Inc.)` (results/hotpotqa-qwen-planners/mia-base), an earlier question's finding written into a new
plan. The part of a workflow that transfers to another question is its shape: which hops it
searched in which order ("director of film [A]", then "#1 father"), not the names it met.
"""

from __future__ import annotations

import re

# a name in a question: capitalised words (with the short connectors titles keep), a quoted span, or a number
_CONNECT = r"(?:of|the|and|de|du|la|le|von|van|der|for|in|on|at|'s|&)"
_CAP = r"(?:[A-Z0-9][\w'\u2019.\-]*)"
_NAME = re.compile(rf'"[^"\n]{{2,80}}"|\u201c[^\u201d\n]{{2,80}}\u201d|{_CAP}(?:\s+(?:{_CONNECT}\s+)*{_CAP})*')
# question openers and pronouns that are capitalised only because they start the question
_NOT_NAMES = frozenset(
    """
who whom whose what which when where why how is are was were do does did has have had can could will would
in on at of the a an and or if for from by with as to this that these those both either neither
""".split()
)
# what a workflow step says it found or answered (compression.extractive_workflow's wording)
_FOUND = re.compile(r"\s*->\s*(?:found\b.*|no result|the tool failed)\)\s*$", re.IGNORECASE)
_QUERY = re.compile(r'"([^"\n]+)"')
_EVIDENCE = re.compile(r"\s*\(evidence\s*->[^)]*\)", re.IGNORECASE)
_PLAN_NOTE = re.compile(r"^(\s*\d+[.)]\s*)?(Plan the (?:approach|hops))\s*\(question\s*->\s*(.*)\)$", re.IGNORECASE)


def question_names(question: str) -> list[str]:
    """The names a question mentions, longest first within the order they appear."""
    names: list[str] = []
    for match in _NAME.finditer(question):
        quoted = match.group(0)[0] in '"\u201c'
        text = match.group(0).strip('"\u201c\u201d ').strip()
        words = text.split()
        while words and not quoted and words[0].lower() in _NOT_NAMES:  # "Who", "The" opening a question
            words = words[1:]
        text = " ".join(words).rstrip("?.,;:")
        if len(text) >= 2 and text.lower() not in _NOT_NAMES and text not in names:
            names.append(text)
    return names


def placeholders(text: str, names: list[str]) -> str:
    """`text` with each name replaced by [A], [B], ... (the same name, the same letter)."""
    out = text
    for i, name in sorted(enumerate(names), key=lambda pair: -len(pair[1])):  # longer names first
        letter = f"[{chr(ord('A') + i % 26)}]"
        out = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", letter, out)
    return out


def _found_names(query: str) -> str:
    """A query's remaining names (not the question's: what an earlier hop found) as [found]."""

    def swap(match: re.Match[str]) -> str:
        words = match.group(0).split()
        return match.group(0) if (len(words) == 1 and words[0].lower() in _NOT_NAMES) else "[found]"

    return re.sub(rf"(?<![\w\[#]){_CAP}(?:\s+(?:{_CONNECT}\s+)*{_CAP})*(?![\w\]])", swap, query)


def strategy_view(workflow: str, question: str) -> tuple[str, str]:
    """(the question, the workflow) as a strategy: names as placeholders, findings and answers left out."""
    names = question_names(question)
    lines = []
    for line in workflow.splitlines():
        line = _EVIDENCE.sub("", _FOUND.sub(")", line))
        lines.append(line)
    steps = placeholders("\n".join(lines), names)
    steps = _QUERY.sub(lambda m: '"' + _found_names(m.group(1)) + '"', steps)
    steps = "\n".join(_PLAN_NOTE.sub(r"\1\2 (\3)", line) for line in steps.splitlines())
    return placeholders(question, names), steps


__all__ = ["question_names", "placeholders", "strategy_view"]
