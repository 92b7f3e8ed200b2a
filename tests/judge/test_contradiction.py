"""A grade that the metrics flatly contradict (CORRECT with F1 0 and no cover match, or not CORRECT for an
exact match): JudgeConfig.contradiction."""

from __future__ import annotations

import pytest

from mia.graph.judge import JudgeConfig, judge

Q = "Which women's magazine was published first, Mirabella or Home Monthly?"
GOLD = ["Home Monthly"]
# these tests are about the grader model: every answer goes to it (the matcher has tests/graph/test_matching.py)
LLM = JudgeConfig(method="llm")


def test_default_policy_trusts_the_metrics_and_llm_trusts_the_grader_on_paraphrases(scripted) -> None:
    """The default is `metrics` (bench/judge/contradiction.md: 9 of the embedded grader's 10 flat
    contradictions were wrong answers); `llm` keeps a paraphrase a strong grader accepts."""
    assert JudgeConfig().contradiction == "metrics"
    for answer, gold in (("JFK", "John F. Kennedy"), ("two", "2"), ("USA", "United States")):
        verdict = judge(
            scripted("A"), "Who?", answer, gold_answers=[gold], config=JudgeConfig(method="llm", contradiction="llm")
        )
        assert (verdict.outcome, verdict.method) == ("correct", "llm"), answer
    # a verbatim case from results/hotpotqa-qwen-defaults/none: the grader said CORRECT
    verdict = judge(
        scripted("A"),
        "The Kilby International Awards were named after the inventor who discovered what electronics phenomenon?",
        "Jack Kilby",
        gold_answers=["integrated circuit"],
        config=LLM,
    )
    assert (verdict.outcome, verdict.method) == ("incorrect", "fallback")
    with pytest.raises(ValueError):
        JudgeConfig(contradiction="maybe")  # type: ignore[arg-type]


def test_metrics_policy_overrides_a_baseless_correct(scripted) -> None:
    verdict = judge(
        scripted("A"), Q, "1. 1.\n2. 2.", gold_answers=GOLD, config=JudgeConfig(method="llm", contradiction="metrics")
    )
    assert (verdict.outcome, verdict.method, verdict.grader_label, verdict.score) == (
        "incorrect",
        "fallback",
        "INCORRECT",
        0.0,
    )
    assert verdict.f1 == 0.0 and verdict.raw_reply == "A"
    assert any("contradiction policy 'metrics'" in n for n in verdict.notes)


def test_llm_policy_keeps_the_grade_with_a_note(scripted) -> None:
    verdict = judge(scripted("A"), Q, "1. 1.", gold_answers=GOLD, config=JudgeConfig(method="llm", contradiction="llm"))
    assert (verdict.outcome, verdict.method, verdict.score) == ("correct", "llm", 1.0)
    assert any("label was kept" in n for n in verdict.notes)


def test_unknown_policy(scripted) -> None:
    verdict = judge(
        scripted("A"), Q, "1. 1.", gold_answers=GOLD, config=JudgeConfig(method="llm", contradiction="unknown")
    )
    assert (verdict.outcome, verdict.score, verdict.grader_label) == ("unknown", 0.0, "CORRECT")
    assert any("unknown" in n for n in verdict.notes)


@pytest.mark.parametrize("answer", ["Home Monthly", "It was Home Monthly, in 1896", "Monthly"])
def test_overlap_keeps_the_llm_grade(scripted, answer: str) -> None:
    # any shared token (F1 > 0) or a cover match: the grader may know an equivalence the metrics do not
    verdict = judge(scripted("A"), Q, answer, gold_answers=GOLD, config=LLM)
    assert (verdict.outcome, verdict.method) == ("correct", "llm") and not verdict.notes


@pytest.mark.parametrize("answer", ["Mirabella", "Home Monthly was first, in 1896", "Monthly"])
def test_an_incorrect_grade_is_kept_unless_the_answer_is_an_exact_match(scripted, answer: str) -> None:
    verdict = judge(scripted("B"), Q, answer, gold_answers=GOLD, config=LLM)
    assert (verdict.outcome, verdict.method) == ("incorrect", "llm") and not verdict.notes


@pytest.mark.parametrize("letter", ["B", "C"])
def test_an_exact_match_graded_incorrect_or_not_attempted_is_correct_by_the_metrics(scripted, letter: str) -> None:
    """Verbatim from results/2wiki-qwen-defaults/none: the Qwen grader said INCORRECT to "Hitler's Folly"
    for the gold answers "Hitler'S Folly" / "Hitler's Folly"."""
    verdict = judge(
        scripted(letter),
        "Which film was released more recently, Shravana Banthu or Hitler'S Folly?",
        "Hitler's Folly",
        gold_answers=["Hitler'S Folly", "Hitler's Folly"],
        config=LLM,
    )
    assert (verdict.outcome, verdict.method, verdict.grader_label, verdict.score) == (
        "correct",
        "fallback",
        "CORRECT",
        1.0,
    )
    assert any("exact match" in n and "policy 'metrics'" in n for n in verdict.notes)
    kept = judge(
        scripted(letter), Q, "Home Monthly", gold_answers=GOLD, config=JudgeConfig(method="llm", contradiction="llm")
    )
    assert kept.outcome == "incorrect" and any("label was kept" in n for n in kept.notes)
    unknown = judge(
        scripted(letter),
        Q,
        "Home Monthly",
        gold_answers=GOLD,
        config=JudgeConfig(method="llm", contradiction="unknown"),
    )
    assert unknown.outcome == "unknown"


def test_the_gold_answer_in_another_word_order_graded_incorrect_is_correct_by_the_metrics(scripted) -> None:
    """Verbatim from results/2wiki-qwen-planners/mia-grpo: INCORRECT for "May 2, 1934", gold "2 May 1934"."""
    question = "What is the date of death of the composer of song Limehouse Blues (Song)?"
    verdict = judge(scripted("B"), question, "May 2, 1934", gold_answers=["2 May 1934"], config=LLM)
    assert (verdict.outcome, verdict.method, verdict.score) == ("correct", "fallback", 1.0)
    assert any("another word order" in n for n in verdict.notes)
    # other words, however close, keep the grader's label
    assert judge(scripted("B"), question, "May 2, 1935", gold_answers=["2 May 1934"], config=LLM).outcome == "incorrect"


async def test_async_path_applies_the_policy(scripted) -> None:
    from mia.graph.judge import ajudge

    verdict = await ajudge(
        scripted("A"), Q, "Mirabella", gold_answers=GOLD, config=JudgeConfig(method="llm", contradiction="metrics")
    )
    assert verdict.outcome == "incorrect" and verdict.method == "fallback"
