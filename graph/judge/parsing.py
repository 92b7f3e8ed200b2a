"""Reading the judge model's replies: grades, reviews and arbiter verdicts, robust to chatter.

Each parser returns None when the reply cannot be read unambiguously; the callers then re-ask
once and fall back. Being strict about ambiguity matters more than being clever: a reply that
names two different grades is not a grade (the paper counted any reply containing "A" as correct).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from mia.graph.protocol import MAX_DEPTH, MAX_JSON_CHARS, after_last_think, clean_text, json_values

from .verdict import GraderLabel

_LETTER_LABEL: dict[str, GraderLabel] = {"A": "CORRECT", "B": "INCORRECT", "C": "NOT_ATTEMPTED"}
_WORD = re.compile(r"\bnot[\s_-]*attempted\b|\bnot\s+correct\b|\bincorrect\b|\bcorrect\b", re.I)
_KEYED_LETTER = re.compile(
    r"(?i:\b(?:grade|answer|verdict|label|choice|option|letter|rating)\b)\s{0,4}(?i:is\s{0,4})?[:=]?\s{0,4}"
    r"[\"'`*(\[]{0,4}([ABC])(?![A-Za-z0-9])"
)
_LEADING_LETTER = re.compile(r"^[\s\"'`*(\[#>]*([ABC])(?![A-Za-z0-9'])(.*)\Z", re.S)
_LABEL_START = re.compile(r"(not[\s_-]*attempted|not\s+correct|incorrect|correct)\b", re.I)
_DECORATION = " \t\r\n\"'`*.,;:!()[]{}<>#-"


def strip_thinking(text: str) -> str:
    """Drop <think> blocks (reasoning models) so only the final reply is read (the protocol's
    linear reading: the text after the last </think>, cleaned and bounded)."""
    return after_last_think(clean_text(text))


def _word_label(word: str) -> GraderLabel:
    word = word.lower()
    if word.startswith("not") and "attempt" in word:
        return "NOT_ATTEMPTED"
    if word == "correct":
        return "CORRECT"
    return "INCORRECT"  # "incorrect" or "not correct"


def _bare_label(text: str) -> GraderLabel | None:
    bare = text.strip(_DECORATION)
    if bare in _LETTER_LABEL:
        return _LETTER_LABEL[bare]
    word = re.sub(r"[\s_-]+", "_", bare.upper())
    if word in {"CORRECT", "INCORRECT", "NOT_ATTEMPTED"}:
        return word  # type: ignore[return-value]
    return None


def parse_grade(reply: str) -> GraderLabel | None:
    """A grade from a grader reply, or None when it names none or contradicts itself.

    Read: a bare letter or label ("A", "(B)", "**C**", "not attempted"); a leading letter whose
    continuation is punctuation or agrees with it ("A: CORRECT", "B. The answer is wrong"); a keyed
    letter anywhere ("Grade: A", "the answer is C"); label words anywhere ("... so it is
    INCORRECT"). All signals found must agree. Lower-case a/b/c count only as a bare reply, so
    prose such as "a guess" is not read as a grade; a leading capital letter followed by a
    non-label word ("A guess ...") is not read as a letter either.
    """
    text = strip_thinking(reply)
    if not text:
        return None
    bare = _bare_label(text) or (_bare_label(text.upper()) if len(text.strip(_DECORATION)) == 1 else None)
    if bare:
        return bare
    signals: list[GraderLabel] = []
    leading = _LEADING_LETTER.match(text)
    if leading:
        rest = leading.group(2).lstrip()
        if not rest or rest[0] in ".:)-,;]*=" or _LABEL_START.match(rest):
            signals.append(_LETTER_LABEL[leading.group(1)])
    signals += [_LETTER_LABEL[m.group(1)] for m in _KEYED_LETTER.finditer(text)]
    signals += [_word_label(m.group(0)) for m in _WORD.finditer(text)]
    return signals[0] if signals and len(set(signals)) == 1 else None


def parse_arbiter(reply: str) -> bool | None:
    """True/False for a bare verdict ("A", "B", "CORRECT", "incorrect."), None for anything else.

    The arbiter's reply must be the verdict alone: unlike the paper (correct iff "A" appears
    anywhere), a sentence is not accepted, because "A" and "correct" occur in almost any sentence.
    """
    label = _bare_label(strip_thinking(reply).upper()) if reply else None
    if label == "CORRECT":
        return True
    if label == "INCORRECT":
        return False
    return None


@dataclass(frozen=True)
class ParsedReview:
    """A reviewer reply turned into a score and a reason."""

    score: int
    reason: str
    repaired: bool


_SCORE_KEYS = ("score", "rating", "grade", "points")
_REASON_KEYS = ("reason", "reasoning", "explanation", "feedback", "justification", "rationale", "comment")
_SCORE_TEXT = re.compile(
    r"[\"']?(?:score|rating|grade)[\"']?\s{0,4}(?:is|of)?\s{0,4}[:=]?\s{0,4}[\"']?\s{0,4}(-?\d{1,12}(?:\.\d{1,12})?)",
    re.I,
)
_OUT_OF_TEN = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*10\b", re.I)
_REASON_TEXT = re.compile(r"[\"']?(?:reason|explanation|feedback|justification)[\"']?\s*[:=]\s*(.+)", re.I | re.S)
_FENCE = re.compile(r"```(?:json)?", re.I)
_MAX_REASON_WORDS = 80


def _coerce_score(value: Any) -> int | None:
    """An integer 1-10 from 7, 7.4, "7", "7/10", "8 out of 10"; clamped; None if not a number."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        match = re.search(r"-?\d+(?:\.\d+)?", value)
        if not match:
            return None
        value = match.group(0)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return int(min(10, max(1, math.floor(number + 0.5))))


def _clean_reason(value: Any) -> str:
    if not isinstance(value, str):
        value = "" if value is None else json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    words = value.strip().strip("\"'").split()
    reason = " ".join(words[:_MAX_REASON_WORDS])
    return reason + (" ..." if len(words) > _MAX_REASON_WORDS else "")


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object embedded in text, in order (a model often wraps it in chatter); the
    protocol's bounded, depth-limited scan."""
    return list(json_values(text, want=dict))


def _from_mapping(obj: dict[str, Any]) -> tuple[int, str] | None:
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    score = next((_coerce_score(lowered[k]) for k in _SCORE_KEYS if k in lowered), None)
    if score is None:
        return None
    reason = next((lowered[k] for k in _REASON_KEYS if k in lowered), "")
    return score, _clean_reason(reason)


def parse_review(reply: str) -> ParsedReview | None:
    """Score and reason from a reviewer reply; None when no score can be found.

    Tries, in order: the reply as JSON; JSON objects embedded in chatter or code fences; single
    quotes turned into double quotes; "score: 7" / "7/10" in free text (the reason then comes from
    a "reason:" line, else the text itself). Scores are clamped to 1-10. Anything but the first
    route marks the review as repaired.
    """
    text = strip_thinking(reply)
    if not text:
        return None
    try:
        obj = (
            json.loads(text) if len(text) <= MAX_JSON_CHARS and text.count("{") + text.count("[") <= MAX_DEPTH else None
        )
    except (ValueError, RecursionError):
        obj = None
    if isinstance(obj, dict) and (got := _from_mapping(obj)):
        raw_score = {str(k).lower(): v for k, v in obj.items()}.get("score")
        clean = isinstance(raw_score, int) and not isinstance(raw_score, bool) and 1 <= raw_score <= 10
        return ParsedReview(got[0], got[1], repaired=not clean)
    unfenced = _FENCE.sub(" ", text)
    for candidate in (unfenced, unfenced.replace("'", '"')):
        for found in reversed(_json_objects(candidate)):
            if got := _from_mapping(found):
                return ParsedReview(got[0], got[1], repaired=True)
    match = _SCORE_TEXT.search(unfenced) or _OUT_OF_TEN.search(unfenced)
    if not match:
        return None
    score = _coerce_score(match.group(1))
    if score is None:
        return None
    reason_match = _REASON_TEXT.search(unfenced)
    if reason_match:
        reason = reason_match.group(1).strip().rstrip("}").strip().rstrip(",").strip()
    else:
        reason = (unfenced[: match.start()] + " " + unfenced[match.end() :]).strip(" \n\t.,;:-")
    return ParsedReview(score, _clean_reason(reason), repaired=True)


__all__ = ["strip_thinking", "parse_grade", "parse_arbiter", "parse_review", "ParsedReview"]
