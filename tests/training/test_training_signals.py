"""Defect 12.4: the training signals come from the right model.

- Planner GRPO (graph backend): the reflection and the replan that score a plan are the planner's
  (the live policy), not the frozen executor's.
- Executor GRPO: a wrong first answer gets a replan from the frozen planner and the episode goes
  on; only an episode that needed no replan earns the first-attempt bonus.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mia.training.config import TrainConfig
from mia.training.policy_chat import POLICY_SPEC, PolicyChatModel, PolicyHandle
from tests.graph.fakes import FakeStore, FakeVerdict, ScriptedChatModel, search_tool

CALL = '<tool_call>{"name": "search", "arguments": {"query_list": ["Hamlet author"]}}</tool_call>'
PARAS = [{"title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare."}]


def fake_parts(models: dict[str, Any]) -> dict[str, Any]:
    def judge_fn(**kwargs: Any) -> Any:
        return FakeVerdict(outcome="incorrect", score=0.0, feedback="", mode=kwargs["mode"])

    return {
        "model_factory": lambda spec, t, n: models[spec],
        "store_factory": lambda path: FakeStore(),
        "tools_factory": lambda ctx, paragraphs: [search_tool()],
        "judge_fn": judge_fn,
        "compressor_factory": lambda model: SimpleNamespace(model=model),
    }


def test_planner_stage_routes_reflection_and_replan_to_the_planner_policy() -> None:
    from mia.training.planner_stage import make_runner

    cfg = TrainConfig.from_dict(
        {
            "planner": {"episode_backend": "graph", "executor_model": "fake:executor", "max_replans": 1},
            "budget": {"max_tool_calls": 1},
        }
    )
    models = {
        "fake:executor": ScriptedChatModel(
            script=[CALL, "<answer>Marlowe</answer>", CALL, "<answer>Shakespeare</answer>"]
        ),
        "fake:judge": ScriptedChatModel(script=[], fallback="A"),
    }
    handle = PolicyHandle()
    runner = make_runner(cfg, policy=handle, **fake_parts(models))
    assert runner.context.planner_model == POLICY_SPEC != runner.context.executor_model == "fake:executor"

    # the live policy answers the planner role: here a scripted stand-in for its chat model (the
    # torch policy's PolicyChatModel, or the llama.cpp model serving the step's LoRA), passed as
    # train_planner passes it
    planner = ScriptedChatModel(script=["yes", "1. Search again for the author."])
    paper = TrainConfig.from_dict(
        {
            "planner": {
                "episode_backend": "graph",
                "executor_model": "fake:executor",
                "max_replans": 1,
                # the paper's reflection: the policy says yes/no
                "graph_context": {"tool_protocol": "text", "min_tool_calls": 0, "replan_when": "planner"},
            },
            "budget": {"max_tool_calls": 1},
            "reward": {"accuracy": "em", "judge_model": "fake:judge"},
        }
    )
    graph_runner = make_runner(paper, policy=handle, planner=planner, **fake_parts(models))
    outcome = graph_runner.run("Who wrote Hamlet?", "1. Search Hamlet.", PARAS, ["William Shakespeare"])
    assert outcome.error is None, outcome.error
    assert outcome.replanned and outcome.replan == "1. Search again for the author."
    assert len(planner.prompts) == 2  # the reflection and the replan: both asked of the planner
    from mia.graph.prompts import render

    reflect_opening = render("planner", "reflect", trace="TRACE").split("TRACE")[0].strip()[:60]
    assert reflect_opening and reflect_opening in str(planner.prompts[0][-1].content)
    assert not any(reflect_opening in str(m.content) for p in models["fake:executor"].prompts for m in p)


def test_executor_reward_gives_the_first_try_bonus_only_without_a_replan() -> None:
    from mia.training.executor_stage import ExecutorEpisodeReward

    reward = ExecutorEpisodeReward(metric="em")
    turns = [CALL, "<answer>William Shakespeare</answer>"]
    first, after_replan = reward(
        completions=[None, None],
        gold_answers=[["William Shakespeare"]] * 2,
        episode_turns=[turns, turns],
        episode_answer=["William Shakespeare"] * 2,
        question=["q", "q"],
        episode_first_attempt=[True, False],
        episode_segments=[[turns], [turns[:1], turns[1:]]],
    )
    assert first > after_replan  # before the fix both got the bonus (first_attempt=True on every call)


@pytest.mark.real_model
def test_executor_rollout_replans_a_wrong_first_answer(data_dir: Path) -> None:
    """The real embedded model: a wrong first answer is followed by the frozen planner's replan
    (masked out) and a second attempt in the same token stream."""
    import torch

    from mia.graph.models.convert import ensure_converted
    from mia.training.episodes import Accuracy
    from mia.training.executor_stage import ExecutorRollout
    from mia.training.policy import load_model, load_tokenizer
    from mia.training.prompts import executor_messages
    from mia.training.react import ReactBudget

    torch.set_num_threads(1)
    folder = ensure_converted("smollm2", data_dir)
    model, tok = load_model(folder, None), load_tokenizer(folder)
    prompt = executor_messages("Who wrote Hamlet?", "1. Search Hamlet.")
    rows = [
        {
            "prompt": prompt,
            "plan": "1. Search Hamlet.",
            "question": "Who wrote Hamlet?",
            "gold_answers": ["an answer no model gives"],
            "paragraphs": PARAS,
        }
    ]
    asked: list[tuple[str, str, str]] = []

    def replanner(question: str, plan: str, trace: str) -> str:
        asked.append((question, plan, trace))
        return "1. Search for the author of Hamlet.\n2. Answer with the name."

    rollout = ExecutorRollout(
        rows,
        ReactBudget(max_tool_calls=1, max_turn_tokens=24, max_answer_tokens=12),
        1,
        replanner=replanner,
        accuracy=Accuracy("em"),
    )
    trainer = SimpleNamespace(
        accelerator=SimpleNamespace(unwrap_model=lambda m: m), model=model, processing_class=tok, temperature=1.0
    )
    torch.manual_seed(0)
    out = rollout([prompt], trainer)
    assert asked and asked[0][:2] == ("Who wrote Hamlet?", "1. Search Hamlet.")
    assert out["episode_first_attempt"] == [False] and len(out["episode_segments"][0]) == 2
    masked = [t for t, m in zip(out["completion_ids"][0], out["env_mask"][0], strict=True) if m == 0]
    assert "revised plan" in tok.decode(masked).lower()


@pytest.mark.real_model
def test_policy_chat_model_generates_with_the_bound_policy(data_dir: Path) -> None:
    import torch
    from langchain_core.messages import HumanMessage

    from mia.graph.models.convert import ensure_converted
    from mia.training.policy import load_model, load_tokenizer

    torch.set_num_threads(1)
    folder = ensure_converted("smollm2", data_dir)
    model = load_model(folder, None)
    model.train()
    handle = PolicyHandle()
    with pytest.raises(RuntimeError, match="not bound"):
        PolicyChatModel(handle=handle, max_tokens=4).invoke([HumanMessage(content="Hi")])
    handle.bind(
        SimpleNamespace(
            accelerator=SimpleNamespace(unwrap_model=lambda m: m), model=model, processing_class=load_tokenizer(folder)
        )
    )
    reply = PolicyChatModel(handle=handle, max_tokens=4).invoke([HumanMessage(content="Say yes or no.")])
    assert isinstance(reply.content, str) and reply.content.strip()
    assert model.training  # the trainer's mode is restored
