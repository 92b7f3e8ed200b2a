"""What failure, if any, an executor attempt shows on its own trace: the rule behind
`Context.replan_when = "failure"`, which replans only then and makes no model call otherwise.

Why a rule instead of the planner's yes/no: on HotpotQA the paper's reflection replanned 12 of 26
right first answers and 30 of 74 wrong ones, and the replans fixed 4 answers and broke 6
(results/hotpotqa-qwen-planners). A failure the trace shows is one a replan can address: no answer,
a forced answer (the budget, the context or the format ran out), a failed search, an answer
whose words appear in no search result the agent read (it came from nowhere the agent looked), or
an answer that only repeats a name the question gives ("Ruston & Hornsby" for "Ruston & Hornsby is
now a part of what German company?": the agent stopped at the bridge; 1 of the 14 such answers
in the tuning runs, results/hotpotqa-qwen-planners, 2wiki-qwen-planners and ladder-tune, was right),
one that names neither of a comparison's candidates, or one of the wrong kind (`wrong_kind`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mia.graph.judge.metrics import is_refusal
from mia.graph.judge.polarity import polarity
from mia.graph.judge.surface import content, countries_in, tokens
from mia.graph.nodes.evidence import contradiction, unread
from mia.graph.prompts import render
from mia.graph.protocol import is_yes_no_question, question_options


def content_words(text: str) -> set[str]:
    """The words of a text that identify something (the judge's reading: folded tokens without
    function words and generic nouns)."""
    return set(content(tokens(text)))


def unsupported(answer: str, question: str, observations: Iterable[str]) -> bool:
    """True when fewer than half of the answer's own content words (those not already in the
    question) appear in any search result. Yes/no answers and a comparison's named candidate are
    never unsupported: their words are the question's."""
    if is_yes_no_question(question) or question_options(question):
        return False
    own = content_words(answer) - content_words(question)
    if not own:
        return False
    seen: set[str] = set()
    for text in observations:
        seen |= content_words(text)
    return len(own & seen) * 2 < len(own)


def restates_question(answer: str, question: str) -> bool:
    """True when every content word of the answer is already in the question, and the question
    offers no alternatives (a yes/no question, "A or B?"), whose right answer is the question's own words."""
    if is_yes_no_question(question) or question_options(question) or " or " in f" {question.lower()} ":
        return False
    words = content_words(answer)
    return bool(words) and words <= content_words(question)


def off_candidates(answer: str, question: str) -> list[str]:
    """The question's two candidates when it names them and the answer names neither ("Allan
    Dwan" for "Which film has the director who died earlier, Hold Back The Night or The Last Night
    Of The Barbary Coast?"); [] otherwise. Qwen-1.5B's first answer named neither on 4 of the 5 such
    2Wiki tuning questions of the plan-first rung, and on 1 of 8 under the defaults (first answers of
    results/ladder-tune/2wiki/plan-first and default)."""
    options = question_options(question)
    said = content_words(answer)
    if not options or not said:
        return []
    for option in options:
        named = content_words(option)
        if named and (named <= said or said <= named):
            return []
    return options


_DATE_QUESTION = re.compile(
    r"^\s*(?:when\b|what (?:is|was) the date\b|(?:in )?what year\b)|\bdate of (?:birth|death)\b|\bbirthday\b", re.I
)
_PLACE_QUESTION = re.compile(r"^\s*where\b|\bplace of (?:birth|death)\b|\bgraduate from\b|\bstudy\b", re.I)
_NATIONALITY_QUESTION = re.compile(r"\bnationality\b|\b(?:which|what) country\b", re.I)
_MONTH = (
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b"
)
_DATE = re.compile(rf"\d|{_MONTH}|\bcentury\b", re.I)
_DATE_IN_PLACE = re.compile(rf"\d{{4}}|{_MONTH}", re.I)
_PERSON_CUES = "directed by|written by|composed by|founded by|produced by|created by|married to|son of|daughter of"


def wrong_kind(answer: str, question: str, observations: Iterable[str]) -> str:
    """The kind of answer the question asks for, when the answer is plainly of another kind; "" otherwise.
    "yes_no": a yes/no question answered with neither, as the judge reads it (`polarity`: "USA" for
    "Did the movies A and B originate from the same country?"); "date": a when-question answered without a date; "nationality": a
    nationality or which-country question answered with no country or nationality the judge knows
    ("Alexel Braun": 17 such distinct first answers in the tuning logs, all wrong); "place": a
    where/school question answered with a date or with a name the search results show as a person
    ("directed by Otakar Vávra", "Otakar Vávra (28 February 1911 ..."): the agent stopped at the
    bridge entity. On the first answers of plain ReAct on the 2Wiki tuning split
    (results/2wiki-qwen-planners/none) the first version caught 9 wrong answers the other checks
    miss, and no right one."""
    text = " ".join(answer.split())
    if not text or question_options(question):
        return ""
    if is_yes_no_question(question):
        return "" if polarity(question, text) in ("yes", "no") else "yes_no"
    if _DATE_QUESTION.search(question):
        return "" if _DATE.search(text) else "date"
    if _NATIONALITY_QUESTION.search(question):
        return "" if countries_in(tokens(text)) else "nationality"
    if _PLACE_QUESTION.search(question):
        if _DATE_IN_PLACE.search(text):
            return "place"
        name = text.rstrip(".")
        if len(name) >= 4:
            person = re.compile(
                rf"(?:{_PERSON_CUES})\s+{re.escape(name)}\b|{re.escape(name)}\s*\((?:born|\d|c\.)", re.I
            )
            if any(person.search(o) for o in observations):
                return "place"
    return ""


def shown_failure(steps: Sequence[Mapping[str, Any]], answer: str, stop_reason: str, question: str) -> str | None:
    """The failure this attempt's trace shows, as the planner prompt words it, or None."""
    attempt = _last_attempt(steps)
    if stop_reason.startswith("forced:"):
        reason = stop_reason.split(":", 1)[1]
        return render("planner", f"failure_{reason}" if reason in {"budget", "format", "context"} else "failure_budget")
    text = " ".join(answer.split())
    if not text or is_refusal(text):
        return render("planner", "failure_no_answer")
    observations = [str(s.get("content") or "") for s in attempt if s.get("kind") == "observation"]
    if any(o.lstrip().lower().startswith("error") for o in observations):
        return render("planner", "failure_tool")
    all_observations = [str(s.get("content") or "") for s in steps if s.get("kind") == "observation"]
    if unsupported(text, question, all_observations):
        return render("planner", "failure_unsupported", answer=text[:120])
    if restates_question(text, question):
        return render("planner", "failure_restates", answer=text[:120])
    if options := off_candidates(text, question):
        return render("planner", "failure_off_candidates", answer=text[:120], first=options[0], second=options[1])
    if kind := wrong_kind(text, question, all_observations):
        return render("planner", f"failure_not_{kind}", answer=text[:120])
    return None


def trace_failure(
    steps: Sequence[Mapping[str, Any]], answer: str, stop_reason: str, question: str
) -> tuple[str | None, bool]:
    """The failure the trace shows and whether the agent's own search results settle it (a dated
    comparison or two countries against the answer): what reflection replans on, and what the judge,
    without gold, calls incorrect with no reviewer call (JudgeConfig.trace_checks). One definition,
    so the judge and reflection never disagree about what a failure is."""
    settled = settled_by_evidence(steps, answer, question) if stop_reason == "answered" else None
    return settled or shown_failure(steps, answer, stop_reason, question), settled is not None


_EVENT = {"born": " of birth", "died": " of death", "first": ""}


def settled_by_evidence(steps: Sequence[Mapping[str, Any]], answer: str, question: str) -> str | None:
    """The executor's message when its own search results contradict its answer (a dated
    comparison's years, or two countries: mia.graph.nodes.evidence): they settle it, so no plan is
    needed; None otherwise."""
    text = " ".join(answer.split())
    observations = [str(s.get("content") or "") for s in steps if s.get("kind") == "observation"]
    found = contradiction(question, text, observations) if text else None
    if found is None:
        return None
    (first, first_fact), (second, second_fact) = found.facts.items()
    facts = {"answer": text[:120], "first": first, "second": second, "expected": found.expected}
    if found.event == "same":
        return render(
            "executor",
            "evidence_contradicts_same",
            **facts,
            first_country=first_fact,
            second_country=second_fact,
            what=found.relation,
        )
    return render(
        "executor",
        "evidence_contradicts",
        **facts,
        first_year=first_fact,
        second_year=second_fact,
        event=_EVENT[found.event],
        relation=found.relation,
    )


def unread_by_evidence(steps: Sequence[Mapping[str, Any]], answer: str, question: str) -> list[str]:
    """The names to search when an answer to a question that a lookup settles
    (mia.graph.nodes.evidence.check_for) came before the results held each name's own paragraph;
    empty otherwise."""
    if not answer.strip():
        return []
    return unread(question, [str(s.get("content") or "") for s in steps if s.get("kind") == "observation"])


def _last_attempt(steps: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """The steps since the last replan (the attempt just ended)."""
    last = max((i for i, s in enumerate(steps) if s.get("kind") == "replan"), default=-1)
    return steps[last + 1 :]


__all__ = [
    "settled_by_evidence",
    "unread_by_evidence",
    "content_words",
    "unsupported",
    "restates_question",
    "off_candidates",
    "wrong_kind",
    "shown_failure",
    "trace_failure",
]
