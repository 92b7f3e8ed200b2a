"""The entry point: mode resolution, clear errors, model-free paths, async without blocking."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from mia.graph.judge import JudgeConfig, ajudge, judge
from mia.graph.judge.api import resolve_mode

from .conftest import AsyncRouter

Q = "Which magazine was started first, Arthur's Magazine or First for Women?"


@pytest.mark.parametrize(
    ("mode", "has_model", "golds", "resolved"),
    [
        ("auto", True, ["x"], "ground_truth"),
        ("auto", False, ["x"], "ground_truth"),
        ("auto", True, [], "reviewers"),
        ("auto", False, [], "off"),
        ("off", True, ["x"], "off"),
        ("ground_truth", False, ["x"], "ground_truth"),
        ("reviewers", True, ["x"], "reviewers"),
    ],
)
def test_resolve_mode(mode: str, has_model: bool, golds: list[str], resolved: str) -> None:
    assert resolve_mode(mode, has_model, golds) == resolved


def test_bad_arguments_raise_clear_errors(scripted) -> None:
    with pytest.raises(ValueError, match="unknown judge mode 'strict'"):
        judge(None, Q, "a", gold_answers=["a"], mode="strict")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs at least one non-empty gold"):
        judge(scripted(), Q, "a", gold_answers=["  ", ""], mode="ground_truth")
    with pytest.raises(ValueError, match="needs a judge model"):
        judge(None, Q, "a", mode="reviewers")
    with pytest.raises(ValueError, match="non-empty question"):
        judge(None, "   ", "a", gold_answers=["a"])
    with pytest.raises(TypeError, match="gold answers must be strings"):
        judge(None, Q, "a", gold_answers=[1])  # type: ignore[list-item]


def test_metrics_only_without_model() -> None:
    verdict = judge(
        None, Q, "<think>1844 vs 1989</think><answer>Arthur's Magazine</answer>", gold_answers="Arthur's Magazine"
    )
    assert (verdict.outcome, verdict.method, verdict.mode, verdict.score) == ("correct", "metrics", "ground_truth", 1.0)
    assert verdict.em == 1.0 and verdict.usage.calls == 0
    partial = judge(None, Q, "First for Women magazine", gold_answers="Arthur's Magazine")
    # pred [first, for, women, magazine], gold [arthurs, magazine]: P = 1/4, R = 1/2 -> F1 = 1/3
    assert partial.outcome == "incorrect" and partial.score == pytest.approx(1 / 3)


def test_off_judges_nothing_but_reports_metrics(scripted) -> None:
    model = scripted()  # would raise StopIteration if called
    verdict = judge(model, Q, "Arthur's Magazine", gold_answers=["Arthur's Magazine"], mode="off")
    assert (verdict.outcome, verdict.method, verdict.em) == ("unknown", "off", 1.0)
    assert model.prompts == []
    nothing = judge(None, Q, "Arthur's Magazine")
    assert nothing.outcome == "unknown" and "no gold answers and no judge model" in nothing.feedback


def test_empty_answer_needs_no_call(scripted) -> None:
    model = scripted()
    gt = judge(model, Q, "<answer> </answer>", gold_answers=["Arthur's Magazine"])
    assert (gt.outcome, gt.grader_label, gt.usage.calls) == ("incorrect", "NOT_ATTEMPTED", 0)
    rv = judge(model, Q, "", trace_text="searched")
    assert (rv.outcome, rv.mode, rv.usage.calls) == ("incorrect", "reviewers", 0)
    assert model.prompts == []


def test_answer_tags_are_extracted_before_grading(scripted) -> None:
    model = scripted("A")
    verdict = judge(
        model,
        Q,
        "<think>compare years</think>\n<answer> Arthur's   Magazine </answer>",
        gold_answers=["Arthur's Magazine"],
        config=JudgeConfig(method="llm"),
    )  # the grader model's prompt is what this reads
    assert verdict.prediction == "Arthur's Magazine"
    assert "Predicted answer: Arthur's Magazine\n" in model.prompt_texts()[0]
    assert "compare years" not in model.prompt_texts()[0]


async def test_ajudge_sync_only_model_does_not_block_the_loop(scripted) -> None:
    review = json.dumps({"score": 8, "reason": "fine"})
    model = scripted(review, review, review, delay=0.2)  # GenericFakeChatModel: no native async
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    verdict = await ajudge(model, Q, "Arthur's Magazine", trace_text="t")
    elapsed = time.perf_counter() - started
    task.cancel()
    assert verdict.outcome == "correct" and verdict.usage.calls == 3
    assert ticks >= elapsed / 0.02 * 0.5  # the loop kept running while the model "computed"


async def test_ajudge_native_async_runs_reviewers_concurrently() -> None:
    routes = {
        "reasoning and logical consistency": json.dumps({"score": 9, "reason": "tight"}),
        "information sourcing": "Score: 7 - reason: grounded",
        "result validity": json.dumps({"score": 8, "reason": "direct"}),
    }
    model = AsyncRouter(messages=iter([]), routes=routes)
    verdict = await ajudge(model, Q, "Arthur's Magazine", trace_text="trace")
    assert [r.score for r in verdict.reviews] == [9, 7, 8]
    assert verdict.reviews[1].repaired and verdict.outcome == "correct"
    assert model.max_in_flight == 3


async def test_ajudge_ground_truth_and_reask_with_fake_list_model() -> None:
    model = FakeListChatModel(responses=["Let me think about it.", "B"])
    verdict = await ajudge(
        model, Q, "First for Women", gold_answers=["Arthur's Magazine"], config=JudgeConfig(method="llm")
    )
    assert (verdict.outcome, verdict.method, verdict.usage.calls) == ("incorrect", "llm", 2)
    matched = await ajudge(FakeListChatModel(responses=[]), Q, "First for Women", gold_answers=["Arthur's Magazine"])
    assert (matched.outcome, matched.method, matched.usage.calls) == ("incorrect", "match", 0)  # the default method


async def test_ajudge_without_model_is_immediate() -> None:
    verdict = await ajudge(None, Q, "Arthur's Magazine", gold_answers=["Arthur's Magazine"], config=JudgeConfig())
    assert verdict.outcome == "correct" and verdict.method == "metrics"
