"""Reading grades, reviews and arbiter verdicts out of chatty or broken model replies."""

from __future__ import annotations

import pytest

from mia.graph.judge import parse_arbiter, parse_grade, parse_review


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("A", "CORRECT"),
        (" b. ", "INCORRECT"),
        ("(C)", "NOT_ATTEMPTED"),
        ("**A**", "CORRECT"),
        ("A: CORRECT", "CORRECT"),
        ("B) INCORRECT", "INCORRECT"),
        ("C - not attempted", "NOT_ATTEMPTED"),
        ("Grade: A", "CORRECT"),
        ("The answer is C.", "NOT_ATTEMPTED"),
        ("CORRECT", "CORRECT"),
        ("not attempted", "NOT_ATTEMPTED"),
        ("NOT_ATTEMPTED", "NOT_ATTEMPTED"),
        ("The predicted answer is incorrect.", "INCORRECT"),
        ("It is not correct.", "INCORRECT"),
        ("<think>Could be A or B... the names differ.</think>\nB", "INCORRECT"),
        ("B. The prediction names a different person.", "INCORRECT"),
    ],
)
def test_parse_grade_reads(reply: str, label: str) -> None:
    assert parse_grade(reply) == label


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "Paris",
        "A: CORRECT\nB: INCORRECT\nC: NOT_ATTEMPTED",  # the options echoed back
        "A guess would be Paris",  # a leading article, not a letter
        "A) INCORRECT",  # contradicts itself
        "It is correct, no wait, incorrect",
        "<think>A</think>",  # only thinking, no reply
    ],
)
def test_parse_grade_refuses_ambiguous(reply: str) -> None:
    assert parse_grade(reply) is None


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [("A", True), ("B.", False), ("correct", True), ("**INCORRECT**", False), ("<think>hmm</think> a", True)],
)
def test_parse_arbiter_bare(reply: str, verdict: bool) -> None:
    assert parse_arbiter(reply) is verdict


@pytest.mark.parametrize("reply", ["A, because the logic is sound", "The answer is A", "C", "", "yes"])
def test_parse_arbiter_rejects_sentences(reply: str) -> None:
    assert parse_arbiter(reply) is None


def test_parse_review_clean_json() -> None:
    got = parse_review('{"score": 7, "reason": "Sound chain of evidence."}')
    assert (got.score, got.reason, got.repaired) == (7, "Sound chain of evidence.", False)


@pytest.mark.parametrize(
    ("reply", "score", "reason"),
    [
        ('Sure! Here it is:\n```json\n{"score": "8/10", "reason": "fine"}\n```', 8, "fine"),
        ("{'score': 9, 'reason': 'good'}", 9, "good"),
        ("Score: 7\nReason: the logic holds.", 7, "the logic holds."),
        ('{"score": 15, "reason": "great"}', 10, "great"),  # clamped
        ('{"score": 0, "reason": "awful"}', 1, "awful"),
        ('{"Score": 7.6, "Explanation": "ok"}', 8, "ok"),  # rounded, keys case-blind
        ("I would give it 6/10 overall.", 6, "I would give it overall"),
        ('<think>long musing</think>{"score": 3, "reason": "hallucinated date"}', 3, "hallucinated date"),
        ('noise {"x": 1} then {"score": 5, "reason": "mixed"} trailing', 5, "mixed"),
    ],
)
def test_parse_review_repairs(reply: str, score: int, reason: str) -> None:
    got = parse_review(reply)
    assert got is not None
    assert (got.score, got.reason) == (score, reason)


def test_parse_review_flags_repairs() -> None:
    assert parse_review("Score: 7").repaired
    assert parse_review('{"score": 12, "reason": "x"}').repaired  # out of range counts as repaired


@pytest.mark.parametrize(
    "reply", ["I cannot evaluate this.", '{"reason": "no score here"}', "score: high", "", '{"score": true}', "[1, 2]"]
)
def test_parse_review_hopeless(reply: str) -> None:
    assert parse_review(reply) is None


def test_parse_review_caps_long_reasons() -> None:
    got = parse_review('{"score": 5, "reason": "' + "word " * 200 + '"}')
    assert got is not None and got.reason.endswith("...") and len(got.reason.split()) == 81
