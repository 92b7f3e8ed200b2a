"""The shape of a question and of an answer, as the answer matcher (matching.py) reads them.

Why apart from the rules: what kind of thing a question asks for (a person, a place, one of two
options) and how an answer is built (sentences, a list of names, a name joined to more words, a cut
passage) are facts about the text, the same for every rule of bench/judge/reference/LABELLING.md
that uses them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .surface import Word, content, countries_in, function_words, generic_words, tokens, words

_BOILERPLATE = re.compile(
    r"^(?:\s*(?:</?answer>|(?:so\s+)?(?:the\s+)?(?:final\s+)?answer(?:\s+is)?\s*:|"
    r"(?:the\s+)?(?:final\s+)?answer\s+is\b))+\s*",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\"']{2}[.!?])\s+(?=[A-Z\"'])")
_ITEM_SPLIT = re.compile(r"(\s*[,;&\n]\s*|\s+and\s+|\s+or\s+|^\s*either\s+)", re.I)
_PERSON = re.compile(r"\b(who|whom|whose)\b", re.I)
_KIN = re.compile(
    r"\b(father|mother|son|daughter|child|children|spouse|wife|husband|brother|sister|"
    r"grandfather|grandmother|stepmother|stepfather|uncle|aunt|father-in-law|mother-in-law)\b",
    re.I,
)
_PLACE = re.compile(r"\b(where|city|town|village|country|county|place|located|birthplace|based|headquartered)\b", re.I)
_NOT_PERSON = re.compile(r"\b(when|date|year|nationality|cause|where|which film|what film)\b", re.I)


def strip_boilerplate(answer: str) -> str:
    """The answer without "<answer>" tags and "The answer is:" lead-ins."""
    return _BOILERPLATE.sub("", answer.replace("</answer>", " ")).strip()


def asks_person(question: str) -> bool:
    """A question whose answer is a person (who, whom, or someone's father, spouse...)."""
    return bool(_PERSON.search(question) or (_KIN.search(question) and not _NOT_PERSON.search(question)))


def asks_place(question: str) -> bool:
    """A question whose answer is a place."""
    return bool(_PLACE.search(question))


def two_options(question: str, gold: list[str]) -> tuple[list[str], list[str]] | None:
    """(the gold's option as the question writes it, the other option) for a question offering two."""
    q = question.strip().rstrip("?").strip()
    at = q.lower().rfind(" or ")
    if at < 0:
        return None
    left, right = q[:at], q[at + 4 :].split(",")[0]
    left = left.rsplit(",", 1)[1] if "," in left else _trailing_name(left)
    lt, rt = tokens(left), tokens(right)
    if not lt or not rt:
        return None
    for mine, other in ((lt, rt), (rt, lt)):
        if _same_entity(mine, gold) and not _same_entity(other, gold):
            return mine, other
    return None


def _same_entity(option: list[str], gold: list[str]) -> bool:
    """The question's option names the gold: the same words, initials or fewer middle names, or a tail of a
    fuller gold name ("Max Cavalera" for "Massimiliano Antonio Max Cavalera")."""
    if option == gold or (content(option) and content(option) == content(gold)) or name_variant(option, gold):
        return True
    return len(option) >= 2 and bool(content(option)) and gold[-len(option) :] == option


def _trailing_name(text: str) -> str:
    kept: list[str] = []
    for word in reversed(text.split()):
        if word[:1].isupper() or word[:1].isdigit() or (kept and word.lower() in {"of", "the", "and", "de", "in", "a"}):
            kept.append(word)
        else:
            break
    while kept and kept[-1].lower() in {"of", "the", "and", "de", "in", "a"}:
        kept.pop()
    return " ".join(reversed(kept))


def adjacent_name(ws: list[Word], i: int, n: int) -> list[str]:
    """Capitalised words joined to the occurrence without punctuation ("Laura Riding *Jackson*")."""
    skip = function_words()
    found: list[str] = []
    j = i - 1
    while j >= 0 and not ws[j].closes and not ws[j + 1].opens and ws[j].capitalised and ws[j].tok not in skip:
        found.append(ws[j].tok)
        j -= 1
    k = i + n
    while k < len(ws) and not ws[k - 1].closes and not ws[k].opens and ws[k].capitalised and ws[k].tok not in skip:
        found.append(ws[k].tok)
        k += 1
    return found


def sentences(text: str) -> list[str]:
    """The answer's sentences (initials such as "F." do not end one)."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def is_cut(text: str) -> bool:
    """A long answer that stops mid-sentence: cut by the token budget."""
    stripped = text.rstrip()
    return len(tokens(stripped)) >= 15 and stripped[-1:] not in ".!?\"')]*"


def listed(question: str, text: str, is_gold: Callable[[list[str]], bool], size: int) -> bool:
    """True when the item naming the gold (at most `size` + 1 identifying words) is one of several
    names offered ("A or B", "A, B, C"; rule 9). A place's comma-separated hierarchy ("Pitajanmaki,
    Helsinki") is not a list."""
    qtoks = set(tokens(question))
    place = asks_place(question)
    for sentence in sentences(text):
        pieces = _ITEM_SPLIT.split(sentence)
        items, seps = pieces[0::2], [p.strip().lower() for p in pieces[1::2]]
        for at, item in enumerate(items):
            toks = tokens(item)
            if not toks or not is_gold(toks) or len(content(toks)) > size + 1:
                continue
            touching = seps[max(0, at - 1) : at + 1]
            if place and not any(s in ("and", "or", "either", "&") for s in touching):
                continue
            if any(_names_something(other, qtoks) and not is_gold(tokens(other)) for other in items):
                return True
    return False


def _names_something(item: str, qtoks: set[str]) -> bool:
    """A list item that is a name: short, its identifying words capitalised ("Charles Mintz", not "Their
    explicit themes"), not a country, not the question's own words."""
    toks = tokens(item)
    skip = function_words() | generic_words()
    if not toks or len(toks) > 5 or not all(w.capitalised for w in words(item) if w.tok not in skip):
        return False
    if countries_in(toks) and len(content(toks)) <= 2:
        return False
    ident = content(toks)
    return bool(ident) and not all(t in qtoks for t in ident)


def name_variant(a: list[str], g: list[str]) -> bool:
    """`a` writes the name `g` with initials or without its middle names ("J. F. Kennedy", "Rio
    Ferdinand" for "Rio Gavin Ferdinand"): first and last names agree."""
    if len(a) < 2 or len(g) < 2 or a == g or len(a) > len(g):
        return False
    if not (same_word(a[0], g[0]) and a[-1] == g[-1]):
        return False
    at = 1
    for t in a[1:-1]:
        while at < len(g) - 1 and not same_word(t, g[at]):
            at += 1
        if at >= len(g) - 1:
            return False
        at += 1
    return True


def same_word(x: str, y: str) -> bool:
    return x == y or (len(x) == 1 and y.startswith(x)) or (len(y) == 1 and x.startswith(y))


__all__ = [
    "strip_boilerplate",
    "asks_person",
    "asks_place",
    "two_options",
    "adjacent_name",
    "sentences",
    "is_cut",
    "listed",
    "name_variant",
    "same_word",
]
