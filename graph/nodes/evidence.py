"""What the agent's own search results say about a dated comparison ("Which film was released
earlier, A or B?", "Who died first, A or B?"), and whether its answer contradicts them.

Why: on such questions the 1.5B executor picks one of the two names about as often as a coin
would, with both dates in front of it ("The Open House" for "released earlier, The Open House or
Sons Of Ingmar?" after reading "a 2018 American horror film" and "a 1919 Swedish film"). Reading
the year off each candidate's own paragraph is a lookup, not a judgement: replayed on plain
ReAct's first answers of the tuning split (bench/e2e/comparison-check-replay.md) it contradicts
wrong answers only. Comparisons through another entity ("the film whose director was born first")
are left alone: the year on the film's paragraph is not the director's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mia.graph.judge.surface import content, tokens
from mia.graph.protocol import question_options
from mia.graph.tools.formatting import parse_hits

_EARLY = re.compile(r"\b(?:earlier|earliest|first|older|oldest|sooner)\b", re.I)
_LATE = re.compile(r"\b(?:later|latest|last|more recent(?:ly)?|most recent(?:ly)?|younger|youngest|newer)\b", re.I)
# The year would be another entity's: the film's paragraph does not date its director's birth.
_THROUGH = re.compile(
    r"\b(?:director|directors|composer|performer|producer|father|mother|whose|spouse|wife|husband|creator"
    r"|founder|author|writer|screenwriter|son|daughter|child)\b",
    re.I,
)
_DIED = re.compile(r"\b(?:died|die|death)\b", re.I)
_BORN = re.compile(r"\b(?:born|birth|older|oldest|younger|youngest)\b", re.I)
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_PARENS = re.compile(r"\(([^()]{0,120})\)")
_DIED_IN = re.compile(r"\bdied\b[^.]{0,80}?\b(1[0-9]{3}|20[0-9]{2})\b", re.I)
_BORN_IN = re.compile(r"\bborn\b[^.]{0,80}?\b(1[0-9]{3}|20[0-9]{2})\b", re.I)


@dataclass(frozen=True)
class Contradiction:
    """The candidate the years pick (`expected`), the years read for each candidate (in the
    question's order), the event they date ("born", "died", or "first" for a release, a founding...)
    and the direction the question asks for ("earlier" or "later")."""

    expected: str
    years: dict[str, int]
    event: str
    relation: str


def _words(text: str) -> frozenset[str]:
    return frozenset(content(tokens(text)))


def _same_entity(title: str, option: str) -> bool:
    """A paragraph is a candidate's own when their titles match, with or without a parenthesised
    disambiguation ("The Open House (film)")."""
    bare_title, bare_option = _PARENS.sub(" ", title), _PARENS.sub(" ", option)
    for a, b in ((title, option), (bare_title, bare_option)):
        words = _words(a)
        if words and words == _words(b):
            return True
    return False


def year_in(text: str, event: str) -> int | None:
    """The year a paragraph gives for its subject's birth, death or (any other event) its first year:
    "Laura Riding (January 16, 1901 - September 2, 1991)" dies in 1991; "a 1919 Swedish film" is 1919."""
    lead = _PARENS.search(text[:300])
    lead_years = _YEAR.findall(lead.group(1)) if lead else []
    if event == "died":
        if len(lead_years) >= 2:
            return int(lead_years[1])
        found = _DIED_IN.search(text)
        return int(found.group(1)) if found else None
    if event == "born":
        if lead_years:
            return int(lead_years[0])
        found = _BORN_IN.search(text)
        return int(found.group(1)) if found else None
    found = _YEAR.search(text)
    return int(found.group(1)) if found else None


def contradiction(question: str, answer: str, observations: Iterable[str]) -> Contradiction | None:
    """The years' verdict when the answer names one candidate of a dated comparison and the
    candidates' own paragraphs, as the agent read them, date the other one as the one asked for;
    None when the question is not such a comparison, a year is missing, or the answer fits."""
    options = question_options(question)
    if len(options) != 2:
        return None
    rest = question
    for option in options:
        rest = rest.replace(option, " ")
    early, late = bool(_EARLY.search(rest)), bool(_LATE.search(rest))
    if early == late or _THROUGH.search(rest):
        return None
    event = "died" if _DIED.search(rest) else "born" if _BORN.search(rest) else "first"
    years: dict[str, int] = {}
    for text in observations:
        for title, body in parse_hits(text):
            for option in options:
                if option not in years and _same_entity(title, option):
                    year = year_in(body, event)
                    if year is not None:
                        years[option] = year
    if len(years) < 2 or years[options[0]] == years[options[1]]:
        return None
    # "older" asks for the earlier birth and "younger" for the later one, so the direction suffices
    expected = min(options, key=years.__getitem__) if early else max(options, key=years.__getitem__)
    other = options[1] if expected == options[0] else options[0]
    said, wanted, not_wanted = _words(answer), _words(expected), _words(other)
    if not_wanted and not_wanted <= said and not wanted <= said:
        ordered = {option: years[option] for option in options}
        return Contradiction(expected=expected, years=ordered, event=event, relation="earlier" if early else "later")
    return None


__all__ = ["Contradiction", "contradiction", "year_in"]
