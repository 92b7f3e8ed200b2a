"""Our own prompt text never reaches an answer (the 135M model answered "No / Continue from where
you are with this guidance." after a replan)."""

from __future__ import annotations

import pytest

from mia.graph.builder import build_graph, recursion_limit
from mia.graph.prompts import load_prompts
from mia.graph.prompts.echo import prompt_fragments, strip_prompt_echo

from .fakes import ScriptedChatModel, make_deps, fake_context


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("No / Continue from where you are with this guidance.", "No"),
        ("1844\nDo not call any more tools. Give your best final answer now, as", "1844"),
        ("Arthur's Magazine", "Arthur's Magazine"),
        ("The plan is to answer with the river the results support.", "The plan is to"),
        ("continue FROM where you are   with this guidance.", ""),
        # the executor's line for a comparison question, copied with its quotes: the candidate stays
        ('The answer is one of the two it names; answer with that name as written: "Leeds"', '"Leeds"'),
        ("", ""),
    ],
)
def test_strip_prompt_echo(answer: str, expected: str) -> None:
    assert strip_prompt_echo(answer) == expected


def test_fragments_come_from_the_prompt_files() -> None:
    replan_message = load_prompts("planner")["replan_message"]
    assert any(f in replan_message for f in prompt_fragments())
    assert all(len(f) >= 24 for f in prompt_fragments())


def test_graph_answer_drops_an_echoed_instruction() -> None:
    models = {
        "fake:planner": ScriptedChatModel(script=["1. Search the magazines.", "yes", "1. Search founding years."]),
        "fake:executor": ScriptedChatModel(
            script=[
                "<answer>Arthur's Magazine</answer>",
                "<answer>Arthur's Magazine. Continue from where you are with this guidance.</answer>",
            ]
        ),
        "fake:manager": ScriptedChatModel(script=[]),
        "fake:judge": ScriptedChatModel(script=[], fallback="A"),
    }
    deps, seen = make_deps(models)
    ctx = fake_context(min_tool_calls=0, replan_when="planner", plan_when="start")
    out = build_graph(deps=deps).invoke(
        {"question": "Which magazine was started first?"}, context=ctx, config={"recursion_limit": recursion_limit(ctx)}
    )
    assert out["replan"]  # the second answer came after the replan message
    assert out["answer"] == "Arthur's Magazine."
    assert seen["judge"][0]["answer"] == "Arthur's Magazine."
    assert "guidance" not in out["trajectory"]["answer"]
