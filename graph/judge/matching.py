"""The answer matcher: correct, incorrect or uncertain, by the written labelling rule, without a model.

Why: the embedded Qwen-1.5B grader failed right answers a careful reader passes ("American" for
"America", "Mark Scott Travis was born on September 6, 1961." for "1961", "No, they are not from the
same country." for "no"), and the metrics cannot read a sentence. These rules implement
bench/judge/reference/LABELLING.md (each `Match` names the rule it rests on) and say `uncertain`
where they are not confident; the judge sends only those to the LLM grader (JudgeConfig.method).
Their agreement with the labelled reference set is in bench/judge/grader-agreement.md.

    match_answer("What nationality is ...?", "American", ["America"])
    -> Match(decision="correct", rule=5, reason="names the gold's country by its name or demonym")
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from .metrics import is_refusal
from .polarity import is_yes_no, polarity
from .shape import (
    adjacent_name,
    asks_person,
    asks_place,
    is_cut,
    listed,
    name_variant,
    same_word,
    sentences,
    strip_boilerplate,
    two_options,
)
from .surface import (
    Date,
    Word,
    acronym,
    as_date,
    as_number,
    content,
    countries_in,
    country_of,
    dates_in,
    decades_in,
    find,
    function_words,
    generic_words,
    in_order,
    initials,
    numbers_in,
    tokens,
    words,
    year_ranges,
)
from .verdict import GraderLabel

Decision = Literal["correct", "incorrect", "uncertain"]
_RANK: dict[Decision, int] = {"correct": 0, "uncertain": 1, "incorrect": 2}
_PASSAGE = re.compile(r"\bDoc\s+\d+\b|\(Title:", re.I)
_NEGATION = frozenset({"not", "never", "no", "nt", "isnt", "wasnt", "arent", "werent", "neither", "nor"})
_COMPARATIVE = frozenset({"than", "compared", "unlike", "rather", "whereas"})
_COMPARED = frozenset({"than", "unlike", "over"})  # "X is older than <gold>": the gold is not the answer
_LONG = 30  # tokens: a longer answer is a passage, read by the grader rather than the rules


@dataclass(frozen=True)
class Match:
    """The matcher's decision and why: the LABELLING.md rule (0 for a plain match or no match)."""

    decision: Decision
    rule: int
    reason: str

    def label(self) -> str:
        """One line for notes and logs: the decision, the rule and the reason."""
        return f"{self.decision} (rule {self.rule}: {self.reason})"

    @property
    def grader_label(self) -> GraderLabel | None:
        """The grade as the grader model would give it; None when uncertain."""
        return {"correct": "CORRECT", "incorrect": "INCORRECT"}.get(self.decision)  # type: ignore[return-value]


def match_answer(question: str, answer: str, golds: Sequence[str]) -> Match:
    """Correct, incorrect or uncertain for one answer against its gold aliases (see the module doc)."""
    golds = [g for g in golds if isinstance(g, str) and tokens(g)]
    if not golds:
        raise ValueError("at least one non-empty gold answer is needed")
    text = strip_boilerplate(answer or "")
    if not tokens(text):
        return Match("incorrect", 0, "no answer")
    if any(tokens(g) == tokens(text) for g in golds):
        return Match("correct", 1, "the gold answer, normalised")
    if is_refusal(text) and not is_yes_no(golds):
        found = best(_one(question, text, g) for g in golds)
        if found.decision == "correct":
            return Match("uncertain", 0, f"declines to answer yet {found.reason}")
        return Match("incorrect", 0, "declines to answer")
    if is_yes_no(golds):
        return _yes_no(question, text, tokens(golds[0])[0])
    return best(_one(question, text, g) for g in golds)


def best(matches: Iterable[Match]) -> Match:
    """Over gold aliases: correct beats uncertain beats incorrect (the first of each kind)."""
    return min(matches, key=lambda m: _RANK[m.decision])


# ---- rule 8: yes/no ----


def _yes_no(question: str, text: str, gold: str) -> Match:
    if is_refusal(text):
        return Match("incorrect", 0, "declines to answer")
    said = polarity(question, text)
    if said is None:
        if len(tokens(text)) <= 3:
            return Match("incorrect", 8, "a yes/no question answered without yes or no")
        return Match("uncertain", 8, "no clear yes or no")
    if said == "both":
        return Match("incorrect", 8, "says both yes and no")
    if said == gold:
        return Match("correct", 8, f"its polarity is the gold's {gold!r}")
    return Match("incorrect", 8, f"its polarity is {said!r}, the gold's is {gold!r}")


# ---- one gold alias ----


def _one(question: str, text: str, gold: str) -> Match:
    g = tokens(gold)
    ws = words(text)
    a = [w.tok for w in ws]
    acr = acronym(text)
    if acr and acr in initials(gold):
        return Match("correct", 2, "an acronym of the gold")
    gold_acr = acronym(gold)
    if gold_acr and len(a) <= 6 and gold_acr in initials(text):
        return Match("correct", 2, "the gold acronym written out")
    gold_date = as_date(gold)
    if gold_date:
        return _dates(text, gold_date)
    spans = year_ranges(gold)
    if spans and (found := _ranges(text, spans)):
        return found
    value = as_number(gold)
    if value is not None and (found := _numbers(text, value)):
        return found
    country = country_of(gold)
    if country and (found := _countries(a, country)):
        return found
    forms = [g]
    options = two_options(question, g)
    if options:
        if found := _compare(a, *options):
            return found
        forms.append(options[0])
    for form in forms:
        starts = find(form, a)
        if starts:
            found = _stated(question, text, ws, form, starts)
            if form is not g and found.decision == "correct" and found.rule == 1:
                return Match("correct", 6, "the gold as the question's option names it")
            return found
    return _partial(question, text, ws, gold, g)


# ---- rules 3 and 4: numbers and dates ----


def _dates(text: str, gold: Date) -> Match:
    if gold.month is None and any(s <= gold.year <= e and s != e for s, e in year_ranges(text)):
        return Match("incorrect", 10, "the gold year only as an end of a span")
    found = dates_in(text)
    hits = [d for d in found if d.within(gold)]
    if hits:
        if any(not d.within(gold) and not gold.within(d) for d in found):
            return Match("uncertain", 4, "states the gold date and another")
        return Match("correct", 4, "the gold date, in any order or as part of a fuller date")
    if any(gold.within(d) for d in found) or decades_in(text):
        return Match("incorrect", 11, "less precise than the gold date")
    if found:
        return Match("incorrect", 12, "another date")
    return Match("incorrect", 0, "states no date")


def _ranges(text: str, gold: list[tuple[int, int]]) -> Match | None:
    stated = year_ranges(text)
    if not stated:
        return None
    if any(s in gold for s in stated):
        return Match("correct", 4, "the gold span of years")
    return Match("incorrect", 12, "another span of years")


def _numbers(text: str, gold: float) -> Match | None:
    values = numbers_in(text)
    if not values:
        return None
    if any(math.isclose(v, gold, rel_tol=1e-9) for v in values):
        if len({round(v, 6) for v in values}) > 1:
            return Match("uncertain", 3, "states the gold number and another")
        return Match("correct", 3, "the gold number, in words or digits")
    if any(math.isclose(v, gold, rel_tol=0.1) for v in values):
        return Match("uncertain", 3, "a number close to the gold's")
    return Match("incorrect", 3, "another number")


# ---- rule 5: countries and demonyms ----


def _countries(a: list[str], gold: str) -> Match | None:
    named = countries_in(a)
    if not named:
        return None
    if named == {gold}:
        return Match("correct", 5, "names the gold's country by its name or demonym")
    if gold in named:
        return Match("uncertain", 5, "names the gold's country and another")
    return Match("incorrect", 12, "names another country")


# ---- comparison questions: "Which X, A or B?" ----


def _compare(a: list[str], mine: list[str], other: list[str]) -> Match | None:
    at_mine, at_other = find(mine, a), find(other, a)
    if not at_other:
        return None
    if not at_mine:
        return Match("incorrect", 12, "names the other option")
    if any(t in _NEGATION for t in a) or not any(t in _COMPARATIVE for t in a):
        return Match("uncertain", 9, "names both options")
    if at_mine[0] < at_other[0]:
        return Match("correct", 7, "states the gold option over the other")
    return Match("incorrect", 12, "states the other option over the gold")


# ---- the gold stated in the answer (rules 6, 7, 9, 10) ----


def _stated(question: str, text: str, ws: list[Word], g: list[str], starts: list[int]) -> Match:
    found = [_occurrence(question, text, ws, g, i) for i in starts]
    if len({m.decision for m in found}) > 1:
        return Match("uncertain", 10, "the gold appears both as the answer and as part of something else")
    match = found[0]
    if match.decision != "correct":
        return match
    a = [w.tok for w in ws]
    if _PASSAGE.search(text):
        return Match("uncertain", 10, "a retrieved passage pasted as the answer")
    if len(a) > _LONG or len(sentences(text)) > 1:
        return Match("uncertain", 7, "a long answer that names the gold")
    if is_cut(text):
        return Match("uncertain", 10, "a cut answer that names the gold")
    return match


def _occurrence(question: str, text: str, ws: list[Word], g: list[str], i: int) -> Match:
    n, a = len(g), [w.tok for w in ws]
    if i > 0 and a[i - 1] in _NEGATION:
        return Match("uncertain", 10, "the gold is negated")
    if len(a) > n + 2 and any(t in _NEGATION and not (t == "no" and nxt.isdigit()) for t, nxt in zip(a, [*a[1:], ""])):
        return Match("uncertain", 10, "a sentence with a negation")  # not "Piano Concerto No. 6"
    if (i > 0 and a[i - 1] in _COMPARED) or a[max(0, i - 2) : i] in (["compared", "to"], ["compared", "with"]):
        return Match("uncertain", 12, "the gold as the other side of a comparison")
    if i > 0 and ws[i].raw.startswith("("):
        if len(a) <= 6:
            return Match("incorrect", 10, "the gold only as a qualifier in parentheses")
        return Match("uncertain", 10, "the gold in parentheses")
    qtoks = set(tokens(question))
    extension = adjacent_name(ws, i, n)
    if extension:
        extra = [t for t in extension if t not in generic_words()]
        if extra and not (asks_person(question) and n >= 2):
            if asks_place(question) and not countries_in(extra):
                return Match("incorrect", 10, "the gold only as part of a longer name")
            if not all(t in qtoks for t in extra):
                return Match("uncertain", 6, "the gold inside a longer name")
    after = i + n
    if (
        not extension
        and after < len(ws)
        and not ws[after - 1].closes
        and not ws[after].capitalised
        and ws[after].tok.isalpha()
        and ws[after].tok not in function_words()
        and len(a) > n + 3
    ):
        return Match("uncertain", 10, "the gold modifies another word")
    if _coordinated(ws, i, n):
        return Match("uncertain", 9, "the gold joined by and/or to another word of its kind")
    if listed(question, text, lambda toks: bool(find(g, toks)), len(content(g))):
        return Match("incorrect", 9, "the gold is one of several candidates offered")
    if extension:
        return Match("correct", 6, "a fuller form of the gold's name")
    if len(a) > n + 2:
        return Match("correct", 7, "a sentence that states the gold")
    return Match("correct", 1, "the gold answer")


# ---- the gold not stated as written (rules 6, 11, 12) ----


def _coordinated(ws: list[Word], i: int, n: int) -> bool:
    """A common-noun gold joined to another by and/or ("a literary magazine and journal" for "journal"):
    two kinds offered, perhaps (rule 9); names in a list are `listed`'s."""

    def plain(k: int) -> bool:
        return 0 <= k < len(ws) and ws[k].tok.isalpha() and not ws[k].capitalised and ws[k].tok not in function_words()

    if ws[i].capitalised:
        return False
    end = i + n
    left = i >= 2 and ws[i - 1].tok in ("and", "or") and plain(i - 2) and not ws[i - 2].closes
    right = end + 1 < len(ws) and not ws[end - 1].closes and ws[end].tok in ("and", "or") and plain(end + 1)
    return left or right


def _partial(question: str, text: str, ws: list[Word], gold: str, g: list[str]) -> Match:
    a = [w.tok for w in ws]
    qtoks = set(tokens(question))
    if len(g) >= 2 and len(a) <= len(g) + 4 and in_order(g, a):
        if listed(question, text, lambda toks: in_order(g, toks), len(content(g))):
            return Match("incorrect", 9, "the gold is one of several candidates offered")
        return Match("correct", 6, "the gold's words, with others naming the same thing")
    for size in range(min(len(g), len(a)), 1, -1):
        for i in range(len(a) - size + 1):
            if ws[i].capitalised and name_variant(a[i : i + size], g):
                found = _stated(question, text, ws, a[i : i + size], [i])
                if found.decision == "correct" and found.rule == 1:
                    return Match("correct", 2, "the gold's name with initials or without its middle names")
                return found
    parts = [tokens(p) for p in gold.split(",") if tokens(p)]
    ident, gold_ident = content(a), content(g)
    if ident and all(t in qtoks for t in ident) and not all(t in qtoks for t in gold_ident):
        return Match("incorrect", 12, "repeats the question's own names")
    if find(a, g):
        if len(parts) >= 2 and a == parts[0]:
            return Match("correct", 6, "the gold's first part (the rest only locates it)")
        if len(parts) >= 2 and a in parts[1:]:
            return Match("incorrect", 11, "only the broader part of the gold")
        if not content(a):
            return Match("incorrect", 12, "shares only a generic word with the gold")
        if not content([t for t in g if t not in a]):
            return Match("correct", 6, "the gold without the words that name its kind")
        if asks_person(question) and len(g) >= 2 and a == g[-len(a) :]:
            return Match("correct", 6, "the surname of the gold")
        return Match("uncertain", 11, "a part of the gold")
    if len(parts) >= 2 and any(find(p, a) for p in parts[1:]) and not find(parts[0], a):
        return Match("incorrect", 12, "another place in the gold's region")
    shared = {t for t in ident if t in gold_ident and t not in qtoks}
    near = _near(ident, gold_ident, qtoks)
    if not shared and not near:
        rule = 12 if set(a) & set(g) else 0
        return Match("incorrect", rule, "shares no identifying word with the gold")
    if listed(question, text, lambda toks: bool(set(toks) & (shared | near)), len(gold_ident)):
        return Match("incorrect", 9, "the gold is one of several candidates offered")
    if _another_person(a, g):
        return Match("incorrect", 12, "another person with a shared name")
    return Match("uncertain", 12, "shares words with the gold")


def _near(ident: list[str], gold_ident: list[str], qtoks: set[str]) -> set[str]:
    """Answer words that are a typo of a gold word ("Franki" for "Frankie")."""
    return {
        t
        for t in ident
        for u in gold_ident
        if t != u
        and t not in qtoks
        and min(len(t), len(u)) >= 4
        and difflib.SequenceMatcher(None, t, u).ratio() >= 0.85
    }


def _another_person(a: list[str], g: list[str]) -> bool:
    """Two short names that differ in both the first and the last name ("Hugh Rodham" for "Hillary
    Rodham Clinton")."""
    if not (2 <= len(a) <= 4 and 2 <= len(g) <= 4):
        return False
    return not same_word(a[0], g[0]) and a[-1] != g[-1]


__all__ = ["Decision", "Match", "match_answer", "best"]
