"""What the agent's own search results say about a dated comparison ("Which film was released
earlier, A or B?", "Who died first, A or B?"), and whether its answer contradicts them.

Why: on such questions the 1.5B executor picks one of the two names about as often as a coin
would, with both dates in front of it ("The Open House" for "released earlier, The Open House or
Sons Of Ingmar?" after reading "a 2018 American horror film" and "a 1919 Swedish film"). Reading
the year off each candidate's own paragraph is a lookup, not a judgement: replayed on plain
ReAct's first answers of the tuning split (bench/e2e/comparison-check-replay.md) it contradicts
wrong answers only. Comparisons through another entity ("the film whose director was born first")
are left alone: the year on the film's paragraph is not the director's.

The same lookup settles "Are A and B of the same nationality / from the same country / located in
the same country?": each one's own paragraph names its country in its first sentence ("was an
American writer", "is a village in Iran"), and a yes or no that the two countries contradict is
told so (on the tuning split: 6 such answers, all wrong, in 6 runs).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from mia.graph.judge.polarity import polarity
from mia.graph.judge.surface import content, countries_in, tokens
from mia.graph.protocol import is_yes_no_question, question_options
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
# "Were A and B of the same nationality?", "Did the movies A and B originate from the same country?",
# "Are both high schools, A and B, located in the same country?" (questions are short: the lazy
# groups meet the fixed suffix within MAX_SAME_CHARS)
_SAME = re.compile(
    r"^(?:are|were|is|was|do|did)\s+(?:both\s+)?(?:the\s+)?"
    r"(?:(?:movies|films|film|movie|bands|people|magazines|songs|albums)\s+|[a-z ]{1,40},\s+)?"
    r"(?P<a>.+?)\s+and\s+(?P<b>.+?),?\s+(?:both\s+)?(?:of|from|originate from|come from|have|located in)"
    r"\s+the same (?P<what>nationality|country)(?:\s+of origin)?\s*\?$",
    re.I,
)
MAX_SAME_CHARS = 300
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)])\.\s")


T = TypeVar("T")


@dataclass(frozen=True)
class Contradiction:
    """What the agent's results settle (`expected`: a candidate, or "yes"/"no"), the fact read for
    each of the two (in the question's order: a year, or a country), and what kind of check read
    them: `event` "born", "died" or "first" (a release, a founding...) with `relation` "earlier" or
    "later" for a dated comparison; `event` "same" with `relation` "nationality" or "country"."""

    expected: str
    facts: dict[str, str]
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
    """What the agent's own results say against its answer: a dated comparison's years
    (`dated_contradiction`) or two countries (`same_country_contradiction`); None when neither
    applies or the answer fits."""
    hits = [hit for text in observations for hit in parse_hits(text)]
    return dated_contradiction(question, answer, hits) or same_country_contradiction(question, answer, hits)


@dataclass(frozen=True)
class Check:
    """What settles a question by lookup: its two names (in the question's order) and the fact read
    off each one's own paragraph; `event`/`relation` as in Contradiction."""

    names: list[str]
    fact: Callable[[str], object | None]
    event: str
    relation: str


def check_for(question: str) -> Check | None:
    """The lookup that settles this question, or None: a dated comparison of two named candidates
    (not through another entity), or "Are A and B of the same nationality / country?"."""
    options = question_options(question)
    if len(options) == 2:
        rest = question
        for option in options:
            rest = rest.replace(option, " ")
        early, late = bool(_EARLY.search(rest)), bool(_LATE.search(rest))
        if early == late or _THROUGH.search(rest):
            return None
        event = "died" if _DIED.search(rest) else "born" if _BORN.search(rest) else "first"
        return Check(list(options), lambda body: year_in(body, event), event, "earlier" if early else "later")
    text = " ".join(question.split())
    if len(text) > MAX_SAME_CHARS or not is_yes_no_question(text):
        return None
    match = _SAME.match(text)
    if not match or _THROUGH.search(match.group("a") + " " + match.group("b")):
        return None
    pair = [match.group("a").strip(" ,"), match.group("b").strip(" ,")]
    return Check(pair, country_of, "same", match.group("what").lower())


def dated_contradiction(question: str, answer: str, hits: list[tuple[str, str]]) -> Contradiction | None:
    """The years' verdict when the answer names one candidate of a dated comparison and the
    candidates' own paragraphs (title, text) date the other one as the one asked for."""
    check = check_for(question)
    if check is None or check.event == "same":
        return None
    options = check.names
    years = _read(hits, options, check.fact)
    if len(years) < 2 or years[options[0]] == years[options[1]]:
        return None
    # "older" asks for the earlier birth and "younger" for the later one, so the direction suffices
    pick = min if check.relation == "earlier" else max
    expected = pick(options, key=lambda o: int(str(years[o])))
    other = options[1] if expected == options[0] else options[0]
    said, wanted, not_wanted = _words(answer), _words(expected), _words(other)
    if not_wanted and not_wanted <= said and not wanted <= said:
        facts = {option: str(years[option]) for option in options}
        return Contradiction(expected=expected, facts=facts, event=check.event, relation=check.relation)
    return None


def same_country_contradiction(question: str, answer: str, hits: list[tuple[str, str]]) -> Contradiction | None:
    """The countries' verdict on "Are A and B of the same nationality / country?" when each one's
    own paragraph names exactly one country in its first sentence and the answer's yes or no (as
    the judge reads it) says the opposite."""
    check = check_for(question)
    if check is None or check.event != "same":
        return None
    pair = check.names
    countries = _read(hits, pair, check.fact)
    said = polarity(question, answer)
    if len(countries) < 2 or said not in ("yes", "no"):
        return None
    expected = "yes" if countries[pair[0]] == countries[pair[1]] else "no"
    if said == expected:
        return None
    facts = {name: str(countries[name]).replace("_", " ").title() for name in pair}
    return Contradiction(expected=expected, facts=facts, event="same", relation=check.relation)


def unread(question: str, observations: Iterable[str]) -> list[str]:
    """The names of a question that a lookup would settle (`check_for`) whose own paragraph, with its
    fact, is not in the agent's results yet: the answer came from one side (or none) of the evidence.
    Empty when the question is not such a question or both facts were read."""
    check = check_for(question)
    if check is None:
        return []
    hits = [hit for text in observations for hit in parse_hits(text)]
    read = _read(hits, check.names, check.fact)
    return [name for name in check.names if name not in read]


_UK = {"england": "united_kingdom", "scotland": "united_kingdom", "wales": "united_kingdom"}


def country_of(text: str) -> str | None:
    """The one country a paragraph's first sentence names (by name or demonym), else None. The
    nations of the United Kingdom count as it: "an English actor" and "a British actor" share one."""
    found = {_UK.get(c, c) for c in countries_in(tokens(_SENTENCE_END.split(text, maxsplit=1)[0]))}
    return next(iter(found)) if len(found) == 1 else None


def _read(hits: list[tuple[str, str]], names: list[str], fact: Callable[[str], T | None]) -> dict[str, T]:
    """The fact each name's own paragraph gives (the first such paragraph that gives one)."""
    read: dict[str, T] = {}
    for title, body in hits:
        for name in names:
            if name not in read and _same_entity(title, name):
                value = fact(body)
                if value is not None:
                    read[name] = value
    return read


__all__ = [
    "Check",
    "Contradiction",
    "check_for",
    "contradiction",
    "country_of",
    "dated_contradiction",
    "same_country_contradiction",
    "unread",
    "year_in",
]
