"""The reward functions: weights, accuracy, the paper's format rules."""

from __future__ import annotations

import pytest

from mia.training.rewards import (
    ExecutorRewardWeights,
    PlannerRewardWeights,
    answer_accuracy,
    decision_correct,
    executor_format_ok,
    executor_reward,
    parse_tool_calls,
    plan_format_ok,
    planner_reward,
    tool_call_ok,
    tool_use_score,
)
from mia.graph.protocol import after_last_think, last_answer

CALL = '<tool_call>{"name": "search", "arguments": {"query_list": ["Arthur\'s Magazine founded"]}}</tool_call>'


def test_planner_reward_weights_match_the_paper() -> None:
    assert planner_reward(1.0, 1.0, True, True) == pytest.approx(1.0)
    assert planner_reward(1.0, 0.0, True, True) == pytest.approx(0.8)  # fixed after a replan
    assert planner_reward(0.0, 0.0, False, False) == 0.0
    assert planner_reward(0.0, 0.0, True, False) == pytest.approx(0.05)
    custom = PlannerRewardWeights(final=1.0, first=0.0, format=0.0, decision=0.0)
    assert planner_reward(0.5, 1.0, True, True, custom) == pytest.approx(0.5)


def test_executor_reward_first_attempt_bonus_and_weights() -> None:
    assert executor_reward(1.0, True, 1.0, True) == pytest.approx(0.7 * 1.2 + 0.2 + 0.1)  # paper max 1.14
    assert executor_reward(1.0, False, 1.0, True) == pytest.approx(1.0)
    assert executor_reward(0.0, True, 1.0, False) == pytest.approx(0.2)
    no_bonus = ExecutorRewardWeights(first_attempt_bonus=0.0)
    assert executor_reward(1.0, True, 0.0, False, no_bonus) == pytest.approx(0.7)


def test_decision_is_right_when_replanning_exactly_after_a_wrong_answer() -> None:
    assert decision_correct(first_correct=False, replanned=True)
    assert decision_correct(first_correct=True, replanned=False)
    assert not decision_correct(first_correct=True, replanned=True)
    assert not decision_correct(first_correct=False, replanned=False)


@pytest.mark.parametrize(
    ("pred", "metric", "expected"),
    [
        ("Arthur's Magazine", "em", 1.0),
        ("the arthur's magazine.", "em", 1.0),
        ("First for Women", "em", 0.0),
        ("Arthur's", "f1", pytest.approx(2 / 3)),
        ("It was Arthur's Magazine, founded 1844", "contains", 1.0),
        ("", "em", 0.0),
        (None, "f1", 0.0),
    ],
)
def test_answer_accuracy(pred, metric, expected) -> None:
    assert answer_accuracy(pred, ["Arthur's Magazine"], metric) == expected


def test_answer_accuracy_length_guard_and_bad_input() -> None:
    long = "Arthur's Magazine " + "and more words " * 10
    assert answer_accuracy(long, ["Arthur's Magazine"], "contains") == 0.0  # > 100 chars
    assert answer_accuracy(long, ["Arthur's Magazine"], "contains", max_chars=None) == 1.0
    with pytest.raises(ValueError, match="unknown accuracy metric"):
        answer_accuracy("x", ["x"], "bleu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="gold answer"):
        answer_accuracy("x", ["", "  "])


def test_plan_format() -> None:
    assert plan_format_ok("1. Search X.\n2. Compare.")
    assert plan_format_ok("<think>hmm</think>1. Search X.", decision="<think>ok</think>no")
    assert not plan_format_ok("")
    assert not plan_format_ok("<think>unclosed 1. Search")
    assert not plan_format_ok("<think>only thinking</think>")
    assert not plan_format_ok("1. Search", decision="maybe")
    assert plan_format_ok("1. Search", decision="Yes.")
    assert after_last_think("<think>a</think> plan") == "plan"
    # numbered steps, as the planner prompt asks
    assert plan_format_ok("1. Search X.\n2) Compare.", numbered=True)
    assert plan_format_ok("<think>x</think>Step 1: search X", numbered=True)
    assert not plan_format_ok("- search X", numbered=True)
    assert not plan_format_ok("one two three four", max_words=3)


def test_tool_call_parsing_is_strict_like_the_paper() -> None:
    [call] = parse_tool_calls(CALL)
    assert call.name == "search" and tool_call_ok(call)
    bad = [
        '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>',  # wrong key
        '<tool_call>{"name": "search", "arguments": {"query_list": []}}</tool_call>',  # empty
        '<tool_call>{"name": "browse", "arguments": {"query_list": ["x"]}}</tool_call>',  # unknown tool
        '<tool_call>{"name": "search", "arguments": {"query_list": ["x"]}</tool_call>',  # broken JSON
    ]
    for text in bad:
        [call] = parse_tool_calls(text)
        assert not tool_call_ok(call), text
    assert parse_tool_calls("no calls here") == []


def test_executor_format_and_tool_use() -> None:
    good = [f"<think>look it up</think>{CALL}", "<think>found</think><answer>Arthur's Magazine</answer>"]
    assert executor_format_ok(good)
    assert last_answer(good[-1]) == "Arthur's Magazine"
    assert not executor_format_ok([CALL])  # never answered
    assert not executor_format_ok(["<think>x<answer>y</answer>"])  # unbalanced think
    assert not executor_format_ok(['<tool_call>{"name": "search"}</tool_call>', "<answer>y</answer>"])
    assert not executor_format_ok([])
    assert tool_use_score([good]) == 1.0
    assert tool_use_score([good, ["<answer>x</answer>"]]) == 0.5  # averaged over plan/replan segments
    assert tool_use_score([]) == 0.0
