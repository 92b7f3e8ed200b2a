"""Judging without ground truth: reviewers, repairs, re-asks, missing reviews, both arbiters."""

from __future__ import annotations

import json

import pytest

from mia.graph.judge import JudgeConfig, judge

Q = "Which magazine was started first, Arthur's Magazine or First for Women?"
ANSWER = "Arthur's Magazine"
TRACE = "Plan: search both.\nsearch(['Arthur's Magazine founded']) -> Arthur's Magazine (1844-1846)...\nAnswer."


def review(score, reason: str = "ok") -> str:
    return json.dumps({"score": score, "reason": reason})


def test_all_good_is_correct_with_feedback(scripted) -> None:
    model = scripted(review(8, "logic follows"), review(7, "grounded"), review(9, "substantive"))
    verdict = judge(model, Q, ANSWER, trace_text=TRACE)
    assert verdict.mode == "reviewers" and verdict.method == "weighted"  # the numeric rule decided (defect 12.7)
    # 0.5*8 + 0.3*7 + 0.2*9 = 7.9 >= 6; score (7.9-1)/9
    assert verdict.outcome == "correct" and verdict.grader_label == "CORRECT"
    assert verdict.score == pytest.approx(6.9 / 9)
    assert [r.name for r in verdict.reviews] == ["reasoning", "sources", "validity"]
    assert [r.score for r in verdict.reviews] == [8, 7, 9]
    assert "logic follows" in verdict.feedback and "grounded" in verdict.feedback and "7.9/10" in verdict.feedback
    assert set(verdict.reviewer_feedback) == {"reasoning", "sources", "validity"}
    assert verdict.em is None and verdict.notes == []
    assert verdict.usage.calls == 3


def test_low_scores_are_incorrect(scripted) -> None:
    verdict = judge(scripted(review(4), review(5), review(6)), Q, ANSWER, trace_text=TRACE)
    assert verdict.outcome == "incorrect"  # 0.5*4 + 0.3*5 + 0.2*6 = 4.7 < 6
    assert verdict.score == pytest.approx(3.7 / 9)


def test_one_very_low_review_splits_the_panel_or_vetoes_under_the_papers_rule(scripted) -> None:
    split = judge(scripted(review(9), review(9), review(2, "gave up")), Q, "cannot find it", trace_text=TRACE)
    assert split.outcome == "unknown" and "the reviewers disagree" in split.feedback  # mean 7.6, but 2 < 3
    verdict = judge(
        scripted(review(9), review(9), review(2, "gave up")),
        Q,
        "cannot find it",
        trace_text=TRACE,
        config=JudgeConfig(split="veto"),
    )
    assert verdict.outcome == "incorrect" and "vetoed" in verdict.feedback
    failing = judge(scripted(review(5), review(5), review(2)), Q, "x", trace_text=TRACE)
    assert failing.outcome == "incorrect" and "vetoed" in failing.feedback  # no passing mean: no split
    relaxed = judge(
        scripted(review(9), review(9), review(2)), Q, "x", trace_text=TRACE, config=JudgeConfig(veto_below=None)
    )
    assert relaxed.outcome == "correct"


def test_reviewers_spread_apart_give_unknown(scripted) -> None:
    config = JudgeConfig(veto_below=None, disagree_spread=5)
    apart = judge(scripted(review(9), review(8), review(3)), Q, "x", trace_text=TRACE, config=config)
    assert apart.outcome == "unknown" and "a spread of 6 >= 5" in apart.feedback
    close = judge(scripted(review(9), review(8), review(5)), Q, "x", trace_text=TRACE, config=config)
    assert close.outcome == "correct"  # a spread of 4: the weighted mean decides (7.9 >= 6)
    low = judge(scripted(review(2), review(2), review(3)), Q, "x", trace_text=TRACE, config=config)
    assert low.outcome == "incorrect"
    assert judge(scripted(review(9), review(8), review(3)), Q, "x", trace_text=TRACE).outcome == "correct"  # off


def test_a_mean_between_incorrect_below_and_the_threshold_is_unknown(scripted) -> None:
    config = JudgeConfig(veto_below=None, threshold=9, incorrect_below=5)
    unsure = judge(scripted(review(7), review(6), review(6)), Q, "x", trace_text=TRACE, config=config)
    assert unsure.outcome == "unknown" and "between 5 (incorrect below) and the threshold 9" in unsure.feedback
    low = judge(scripted(review(4), review(4), review(4)), Q, "x", trace_text=TRACE, config=config)
    assert low.outcome == "incorrect"
    high = judge(scripted(review(9), review(9), review(9)), Q, "x", trace_text=TRACE, config=config)
    assert high.outcome == "correct"
    with pytest.raises(ValueError, match="must not exceed the threshold"):
        JudgeConfig(threshold=6, incorrect_below=7)


def test_a_failure_the_trace_shows_is_incorrect_without_reviewer_calls(scripted) -> None:
    failure = "Your answer 'Paris' is not supported by any search result."
    model = scripted()  # no replies: a reviewer call would fail the test
    verdict = judge(model, Q, ANSWER, trace_text=TRACE, trace_failure=failure)
    assert (verdict.outcome, verdict.method, verdict.mode) == ("incorrect", "trace", "reviewers")
    assert failure in verdict.feedback and verdict.usage.calls == 0 and model.prompt_texts() == []
    reviewed = judge(
        scripted(review(8), review(8), review(8)),
        Q,
        ANSWER,
        trace_text=TRACE,
        trace_failure=failure,
        config=JudgeConfig(trace_checks=False),
    )
    assert (reviewed.outcome, reviewed.method) == ("correct", "weighted")  # off: the reviewers decide
    graded = judge(None, Q, ANSWER, gold_answers=[ANSWER], trace_failure=failure)
    assert graded.outcome == "correct" and graded.mode == "ground_truth"  # gold decides, the trace check is moot


def test_reviewers_never_see_gold_and_only_two_see_the_trace(scripted) -> None:
    model = scripted(review(8), review(8), review(8))
    verdict = judge(model, Q, ANSWER, trace_text=TRACE, gold_answers=["SECRET-GOLD"], mode="reviewers")
    prompts = model.prompt_texts()
    assert len(prompts) == 3
    assert all("SECRET-GOLD" not in p for p in prompts)
    assert all("Final answer of the agent: Arthur's Magazine" in p for p in prompts)
    assert [TRACE in p for p in prompts] == [True, True, False]
    assert verdict.em == 0.0 and verdict.f1 == 0.0  # metrics still reported when gold is known


def test_missing_trace_is_said_not_invented(scripted) -> None:
    model = scripted(review(6), review(6), review(6))
    judge(model, Q, ANSWER)
    assert "No trajectory was recorded" in model.prompt_texts()[0]


def test_long_trace_keeps_head_and_tail(scripted) -> None:
    model = scripted(review(6), review(6), review(6))
    trace = "HEAD " + "x" * 50_000 + " TAIL"
    judge(model, Q, ANSWER, trace_text=trace, config=JudgeConfig(max_trace_chars=1000))
    prompt = model.prompt_texts()[0]
    assert "HEAD" in prompt and "TAIL" in prompt and "characters omitted" in prompt and len(prompt) < 3000


def test_malformed_then_fixed(scripted) -> None:
    model = scripted("Score: 8, Reason: clear steps", "lol", review(7), review(6, "fine on retry"))
    verdict = judge(model, Q, ANSWER, trace_text=TRACE)
    reasoning, sources, validity = verdict.reviews
    assert reasoning.score == 8 and reasoning.repaired and not reasoning.reasked
    assert sources.score == 6 and sources.reasked and sources.reason == "fine on retry"
    assert validity.score == 7 and not validity.repaired
    assert verdict.usage.calls == 4 and verdict.method == "weighted"
    assert [m.type for m in model.prompts[3]] == ["human", "ai", "human"]
    assert str(model.prompts[3][1].content) == "lol"
    assert any("re-asked" in n for n in verdict.notes) and any("repaired" in n for n in verdict.notes)


def test_all_hopeless_is_unknown(scripted) -> None:
    model = scripted("no", "nope", "nah", "still no", "?", "!")
    verdict = judge(model, Q, ANSWER, trace_text=TRACE)
    assert verdict.outcome == "unknown" and verdict.method == "fallback" and verdict.grader_label is None
    assert all(r.missing and r.reasked for r in verdict.reviews)
    assert verdict.usage.calls == 6 and len(verdict.notes) == 3
    assert "missing" in verdict.feedback


def test_one_missing_review_still_decides_unless_all_required(scripted) -> None:
    replies = (review(8), RuntimeError("timeout"), review(8))
    verdict = judge(scripted(*replies), Q, ANSWER, trace_text=TRACE)
    assert verdict.outcome == "correct" and verdict.reviews[1].missing
    assert "timeout" in verdict.reviews[1].error and verdict.usage.calls == 3  # a failed call is not re-asked
    strict = judge(scripted(*replies), Q, ANSWER, trace_text=TRACE, config=JudgeConfig(min_reviews=3))
    assert strict.outcome == "unknown" and strict.score == pytest.approx(7 / 9)


def test_llm_arbiter_overrides_weighted_rule(scripted) -> None:
    model = scripted(review(8), review(8), review(8), "B")
    verdict = judge(model, Q, ANSWER, trace_text=TRACE, config=JudgeConfig(arbiter="llm"))
    assert verdict.outcome == "incorrect" and verdict.method == "llm" and verdict.raw_reply == "B"
    arbiter_prompt = model.prompt_texts()[3]
    assert "weight 0.5" in arbiter_prompt and "8/10" in arbiter_prompt and TRACE in arbiter_prompt


def test_llm_arbiter_malformed_then_fixed(scripted) -> None:
    model = scripted(review(3), review(3), review(3), "I believe it is A", "A")
    verdict = judge(model, Q, ANSWER, trace_text=TRACE, config=JudgeConfig(arbiter="llm"))
    assert verdict.outcome == "correct" and verdict.method == "llm" and verdict.usage.calls == 5


def test_llm_arbiter_hopeless_falls_back_to_weights(scripted) -> None:
    model = scripted(review(8), review(8), review(8), "A because", "Answer: A")
    verdict = judge(model, Q, ANSWER, trace_text=TRACE, config=JudgeConfig(arbiter="llm"))
    assert verdict.outcome == "correct" and verdict.method == "fallback"
    assert "weighted rule" in verdict.notes[-1]


def test_custom_weights_and_threshold(scripted) -> None:
    cfg = JudgeConfig(weights={"reasoning": 0.0, "sources": 0.0, "validity": 1.0}, threshold=9, min_reviews=1)
    verdict = judge(scripted(review(1), review(10), review(9)), Q, ANSWER, config=cfg, trace_text=TRACE)
    assert verdict.score == pytest.approx(8 / 9) and verdict.outcome == "correct"  # weight 0: no veto
    # min_reviews counts weighted reviews only: one is not enough for the default of 2
    assert (
        judge(
            scripted(review(1), review(10), review(9)),
            Q,
            ANSWER,
            trace_text=TRACE,
            config=cfg.model_copy(update={"min_reviews": 2}),
        ).outcome
        == "unknown"
    )
    with pytest.raises(ValueError, match="unknown reviewer"):
        JudgeConfig(weights={"style": 1.0})
