"""Who carries out test-time learning's rollouts: the graph on the executor role's own model
(`GraphRollouts`, for an executor served by llama.cpp) or training's ReAct loop on a transformers
copy (`ReactRollouts`). Scripted fakes for the logic; the real llama.cpp model for the path."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mia.graph.context import Context
from mia.training.online import OnlineConfig, OnlineEpisode
from mia.training.online.executors import GraphRollouts, ReactRollouts
from mia.training.online.policy import SampledPlan
from mia.training.online.rollouts import RolloutScorer
from mia.training.online.session import served_rollouts

from tests.graph.fakes import ScriptedChatModel, make_deps

CALL = '<think>plan says so</think><tool_call>{{"name": "search", "arguments": {{"query_list": ["{q}"]}}}}</tool_call>'


def by_plan(messages: list[Any]) -> str:
    """Search the plan's target once, then answer with it; 'boom' plans break the model."""
    target = re.search(r"Search (\w+)", str(messages[1].content)).group(1)
    if target == "boom":
        raise RuntimeError("backend fell over")
    seen = any("<tool_response>" in str(m.content) for m in messages[2:])  # the system prompt names the tag
    return f"<answer>{target}</answer>" if seen else CALL.format(q=target)


def rollouts(**ctx: Any) -> GraphRollouts:
    executor = ScriptedChatModel(script=[by_plan] * 50)
    deps, _ = make_deps(
        {
            "fake:executor": executor,
            "fake:planner": ScriptedChatModel(),
            "fake:judge": ScriptedChatModel(),
            "fake:manager": ScriptedChatModel(),
        }
    )
    context = Context(
        planner_model="fake:planner",
        executor_model="fake:executor",
        judge_model="fake:judge",
        manager_model="fake:manager",
        tool_protocol="text",
        **ctx,
    )
    return GraphRollouts(context, deps=deps, concurrency=3)


def test_graph_rollouts_play_each_plan_in_order_with_turns_and_observations() -> None:
    played = rollouts().play("Which city?", ["1. Search Paris", "1. Search Lyon", "1. Search Nice"], [])
    assert [p.answer for p in played] == ["Paris", "Lyon", "Nice"]
    first = played[0]
    assert first.tool_calls == 1 and first.observations == ["Doc 1 about Paris"]
    assert first.turns[0].startswith("<think>plan says so</think>") and '"query_list": ["Paris"]' in first.turns[0]
    assert first.turns[-1] == "<answer>Paris</answer>"


def test_a_broken_rollout_is_none_and_its_group_goes_on() -> None:
    played = rollouts().play("Which city?", ["1. Search Paris", "1. Search boom"], [])
    assert played[0] is not None and played[0].answer == "Paris" and played[1] is None


def test_rollouts_run_without_memory_reflection_or_judge() -> None:
    graph = rollouts(memory_mode="mia", max_replans=1, judge_mode="auto", memorise=True)
    assert (graph.context.memory_mode, graph.context.max_replans, graph.context.judge_mode, graph.context.memorise) == (
        "none",
        0,
        "off",
        False,
    )


def test_the_scorer_rewards_graph_rollouts_against_the_gold_answer() -> None:
    scorer = RolloutScorer(rollouts(), OnlineConfig(), None)
    episode = OnlineEpisode(question="Which city?", gold_answers=["Paris"])
    got = scorer.score_group(
        episode, [SampledPlan("1. Search Paris", [1], [2]), SampledPlan("1. Search Lyon", [1], [2])]
    )
    assert [r.outcome for r in got] == ["correct", "incorrect"] and got[0].reward > got[1].reward
    assert "Observation: Doc 1 about Paris" in got[0].trace


def test_react_runners_are_wrapped_and_llamacpp_executors_are_served() -> None:
    class React:
        def run_many(self, messages: Any, paragraphs: Any, sample: bool = True) -> list[Any]:
            raise RuntimeError("never batched")

    assert isinstance(RolloutScorer(React(), OnlineConfig(), None).executor, ReactRollouts)
    assert ReactRollouts(React()).play("Q?", ["1. Search x"], []) == [None]
    assert served_rollouts(Context(executor_model="llamacpp:qwen-coder-1.5b"))
    assert not served_rollouts(Context(executor_model="local:smollm2"))


@pytest.mark.real_model
def test_graph_rollouts_on_the_real_llamacpp_executor(data_dir) -> None:
    """Two plans carried out concurrently by the embedded model on llama.cpp's slots, over the
    question's own paragraphs: the turn grammar makes each start with a real search."""
    paragraphs = [
        {"title": "Paris", "text": "Paris is the capital and largest city of France."},
        {"title": "Berlin", "text": "Berlin is the capital of Germany."},
    ]
    context = Context(executor_model="llamacpp:smollm2", max_tool_calls=1, executor_max_tokens=48, search_top_k=1)
    played = GraphRollouts(context, concurrency=2).play(
        "What is the capital of France?", ["1. Search the capital of France.", "1. Search France."], paragraphs
    )
    assert len(played) == 2 and all(p is not None for p in played)
    for p in played:
        assert p.tool_calls == 1 and "<tool_call>" in p.turns[0]
        assert p.observations and ("Paris" in p.observations[0] or "Berlin" in p.observations[0])
        assert p.answer  # the budget's forced answer at the latest


@pytest.mark.real_model
def test_the_learner_of_a_llamacpp_executor_rolls_out_through_it(tmp_path, data_dir) -> None:
    """`build_grpo_trainer` for the default's shape (a llama.cpp executor): the planner LoRA is
    trained in transformers, the rollouts are carried out by the llama.cpp executor through the
    graph, and a real GRPO step follows."""
    import torch

    from mia.training.config import BudgetConfig
    from mia.training.online.session import build_grpo_trainer

    torch.set_num_threads(1)
    context = Context(planner_model="local:smollm2", executor_model="llamacpp:smollm2", data_dir=str(tmp_path))
    cfg = OnlineConfig(
        batch_questions=1,
        rollouts=2,
        plan_max_tokens=8,
        learning_rate=1e-3,
        budget=BudgetConfig(max_tool_calls=1, max_turn_tokens=48, max_answer_tokens=8, search_top_k=1),
    )
    trainer = build_grpo_trainer(context, cfg, None)
    assert isinstance(trainer.scorer.executor, GraphRollouts)
    episode = OnlineEpisode(
        question="What is the capital of France?",
        gold_answers=["Paris"],
        paragraphs=[{"title": "Paris", "text": "Paris is the capital of France."}],
    )
    result = trainer.learn([episode])
    rollouts = result.rollouts[episode.id]
    assert len(rollouts) == 2 and all(r.tool_calls == 1 and r.observations for r in rollouts)
    assert "samples" in result.stats and result.stats["rollout_s"] > result.stats["sample_s"] > 0
