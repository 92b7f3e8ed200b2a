"""What the wording of a question says about its answer.

A comparison question names its candidates ("Which film came out first, A or B?"), and its answer
is one of them. Measured on the bundled sets (`app/evaluation/datasets/`): the candidates read this
way are the gold answer's for all 194 such 2WikiMultihopQA questions of 500 and 88 of 106 HotpotQA
ones (the rest are name variants: "Hector Berlioz" for "Louis-Hector Berlioz"). Titles hold
commas, colons, question marks and a capitalised "Or" ("Now, Voyager", "Killer: Dead Or Alive",
"Whoever Slew Auntie Roo?"), so the candidates run from the question's first comma to its end, the
separator is a lower-case " or ", and a HotpotQA question that goes on after them ("Which director,
A or B, is known for ...?") ends B at the comma before a lower-case word.

A yes/no question opens with an auxiliary verb ("Are both films from the same country?") and
offers no alternative (no lower-case " or "). Read this way on the bundled sets, every question
read is one whose gold answer is "yes" or "no": 43 of 43 such 2WikiMultihopQA questions of 500 and
62 of 63 HotpotQA ones of 1,000 (the one missed: "... known by multiple names or nicknames?").
"""

from __future__ import annotations

import re

MAX_QUESTION_CHARS = 2_000
"""Longer text is not read for candidates (a question, not a document)."""

_BY_COMMA = re.compile(r"^(?P<head>[^,]*),\s*(?P<a>.+?)\s+or\s+(?P<b>.+)\?$")
_BY_COLON = re.compile(r"^(?P<head>[^:]*):\s*(?P<a>.+?)\s+or\s+(?P<b>.+)\?$")
_GOES_ON = re.compile(r"^(.+?),\s+(?=[a-z])")
_AUXILIARY = re.compile(r"^(?:are|is|was|were|do|does|did|has|have|had|can|could|will|would|should)\b", re.IGNORECASE)
_WH = re.compile(r"^(?:which|who|whose|what|where|when|how)\b", re.IGNORECASE)


def question_options(question: str) -> list[str]:
    """The two candidates of an "..., A or B?" question; [] for any other question."""
    text = " ".join((question or "")[:MAX_QUESTION_CHARS].split())
    if not text.endswith("?"):  # also keeps the patterns linear: they succeed at their first " or "
        return []
    match = _BY_COMMA.match(text) or _BY_COLON.match(text)
    if not match:
        return []
    first, second = match.group("a"), match.group("b")
    while _WH.match(first) and ", " in first:  # "In 2010, which city was larger, A or B?"
        first = first.split(", ", 1)[1]
    if _WH.match(first):
        return []
    goes_on = _GOES_ON.match(second)
    if goes_on:
        second = goes_on.group(1)
    first, second = first.strip(" ,\"'"), second.strip(" ,\"'")
    return [first, second] if first and second else []


def is_yes_no_question(question: str) -> bool:
    """Whether the question asks for "yes" or "no" ("Are A and B from the same country?"); an
    alternative ("Was A or B born first?") is not one."""
    text = " ".join((question or "")[:MAX_QUESTION_CHARS].split())
    return bool(_AUXILIARY.match(text)) and " or " not in text
