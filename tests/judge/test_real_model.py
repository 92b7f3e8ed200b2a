"""The judge with the real embedded model (SmolLM2-135M, offline): every path yields a Verdict.

A 135M model grades poorly, so these tests check the plumbing, not its opinions: whatever it
replies, the judge must return a well-formed Verdict with the calls and tokens counted.
"""

from __future__ import annotations

import pytest

from mia.graph.judge import JudgeConfig, Verdict, ajudge, judge

pytestmark = pytest.mark.real_model

models = pytest.importorskip("mia.graph.models", reason="mia.graph.models is not available")

Q = "Which magazine was started first, Arthur's Magazine or First for Women?"
TRACE = (
    "Plan: find the founding year of each magazine, then compare.\n"
    "search(['Arthur's Magazine founded', 'First for Women magazine founded'])\n"
    "Observation: Arthur's Magazine (1844-1846) was an American literary periodical published in "
    "Philadelphia. First for Women is a woman's magazine published by Bauer Media Group in the USA, "
    "started in 1989.\n"
    "Thought: 1844 is earlier than 1989."
)


@pytest.fixture(scope="module")
def smollm2():
    return models.load_chat_model("local:smollm2", temperature=0.0, max_tokens=32)


def _well_formed(verdict: Verdict) -> None:
    assert isinstance(verdict, Verdict)
    assert verdict.outcome in ("correct", "incorrect", "unknown")
    assert 0.0 <= verdict.score <= 1.0
    assert verdict.method in ("llm", "weighted", "fallback")
    assert verdict.usage.calls >= 1 and verdict.usage.input_tokens > 0 and verdict.usage.output_tokens > 0


def test_ground_truth_with_smollm2(smollm2) -> None:
    verdict = judge(
        smollm2,
        Q,
        "<answer>Arthur's Magazine</answer>",
        trace_text=TRACE,
        gold_answers=["Arthur's Magazine"],
        config=JudgeConfig(method="llm"),
    )  # every answer to the model: the grader's plumbing
    _well_formed(verdict)
    assert verdict.mode == "ground_truth" and verdict.em == 1.0
    assert verdict.grader_label in ("CORRECT", "INCORRECT", "NOT_ATTEMPTED")
    assert verdict.usage.calls <= 2
    if verdict.method == "fallback":  # the metrics decided: an exact match is correct
        assert verdict.outcome == "correct"


def test_match_then_llm_with_smollm2(smollm2) -> None:
    """The default method: the matcher decides an exact match without a call; an answer it is unsure of (the
    gold only inside a longer passage) goes to the real model."""
    matched = judge(smollm2, Q, "Arthur's Magazine", gold_answers=["Arthur's Magazine"])
    assert (matched.method, matched.outcome, matched.usage.calls) == ("match", "correct", 0)
    unsure = (
        "Arthur's Magazine (1844-1846) was an American literary periodical. First for Women is a woman's "
        "magazine published by Bauer Media Group in the USA, started in 1989."
    )
    verdict = judge(smollm2, Q, unsure, gold_answers=["Arthur's Magazine"])
    _well_formed(verdict)
    assert "answer matcher uncertain" in verdict.notes[0]


async def test_reviewers_with_llm_arbiter_with_smollm2(smollm2) -> None:
    # No re-asks here to keep the test short on 2 shared cores; re-asks are covered with fakes.
    config = JudgeConfig(arbiter="llm", reask=False)
    verdict = await ajudge(smollm2, Q, "Arthur's Magazine", trace_text=TRACE, config=config)
    _well_formed(verdict)
    assert verdict.mode == "reviewers" and len(verdict.reviews) == 3
    assert 3 <= verdict.usage.calls <= 4
    for review in verdict.reviews:
        assert review.missing or 1 <= review.score <= 10
