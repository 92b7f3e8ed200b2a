"""Yes/no answers read by their polarity (rule 8 of bench/judge/reference/LABELLING.md).

Why a rule and not the grader: the embedded grader failed "No, they are not from the same country."
for the gold "no" (results/hotpotqa-qwen-n100/none), and passed nothing that a reading of the first
word or of a negation would not have decided.
"""

from __future__ import annotations

from typing import Literal

from .surface import countries_in, tokens

Polarity = Literal["yes", "no"]
# negations after the HotpotQA normalisation ("aren't" -> "arent")
_NEGATIONS = frozenset(
    {
        "not",
        "no",
        "neither",
        "nor",
        "never",
        "different",
        "differ",
        "differs",
        "separate",
        "arent",
        "isnt",
        "wasnt",
        "werent",
        "dont",
        "doesnt",
        "didnt",
        "hasnt",
        "havent",
        "hadnt",
        "cannot",
        "cant",
        "wont",
        "nt",
    }
)
_AFFIRMATIONS = frozenset({"yes", "both", "same", "also", "too", "each", "all"})
_CONTRAST = frozenset({"but", "however", "although", "though"})  # not "while": "X is Canadian, while Y is British"


def is_yes_no(golds: list[str]) -> bool:
    """True when every gold alias is "yes" or "no" (and they agree)."""
    folded = {" ".join(tokens(g)) for g in golds}
    return len(folded) == 1 and folded <= {"yes", "no"}


def polarity(question: str, answer: str) -> Polarity | Literal["both"] | None:
    """The answer's yes or no: its first word when that is yes/no; else a negation ("do not originate
    from the same country") or an affirmation ("Both were Russian mathematicians"); for a "same
    country/nationality" question, the countries it names (two different ones: no). "both" when it
    asserts both, None when it asserts neither (a bare name: "Italy")."""
    toks = tokens(answer)
    if not toks:
        return None
    if toks[0] in ("yes", "no"):
        rest = toks[1:4]
        opposite = "no" if toks[0] == "yes" else "yes"
        return "both" if opposite in rest else toks[0]  # type: ignore[return-value]
    if len(toks) <= 3:
        return None
    negated = any(t in _NEGATIONS for t in toks)
    affirmed = any(t in _AFFIRMATIONS for t in toks)
    if negated and any(t in _CONTRAST for t in toks):
        return None  # "both are American, but not from the same state": a reader must decide
    if negated:
        return "no"
    if affirmed:
        return "yes"
    asked = set(tokens(question))
    if (
        "same" in asked
        and asked & {"country", "nationality", "nationalities", "countries"}
        and len(countries_in(toks)) >= 2
    ):
        return "no"  # "Donald Fagen is American and Lauren Laverne is English."
    return None


__all__ = ["Polarity", "is_yes_no", "polarity"]
