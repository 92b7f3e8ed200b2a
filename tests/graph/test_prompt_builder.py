"""One prompt builder: the prompt training shows a policy equals the prompt the graph serves
(issue 12, item 1), for a cold start and with memories, for the planner and the executor."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from mia.graph.builder import build_graph, recursion_limit
from mia.graph.tools import SearchTool, corpus_from_paragraphs
from mia.training import prompts as training_prompts

from .fakes import FakeStore, make_deps, memory
from .test_ladder_fixes import ctx as default_ctx
from .test_graph_logic import CALL, ctx, models

QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"
PARAGRAPHS = [
    {"title": "Arthur's Magazine", "text": "Arthur's Magazine was an American literary periodical (1844)."},
    {"title": "First for Women", "text": "First for Women is a woman's magazine started in 1989."},
]


def as_dicts(messages: list[BaseMessage]) -> list[dict[str, str]]:
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return [{"role": roles[m.type], "content": str(m.content)} for m in messages]


def serve(store: FakeStore) -> dict[str, Any]:
    m = models(
        planner=["1. Search both magazines.", "no"],
        executor=[CALL.format(q="Arthur's Magazine"), "<answer>Arthur's Magazine</answer>"],
    )
    tool = SearchTool(corpus_from_paragraphs(PARAGRAPHS), top_k=2)
    deps, _ = make_deps(m, store=store, tools=[tool])
    context = default_ctx()  # the defaults: training's prompts are the default served ones
    out = build_graph(deps=deps).invoke(
        {"question": QUESTION}, context=context, config={"recursion_limit": recursion_limit(context)}
    )
    return {"models": m, "out": out}


@pytest.mark.parametrize("memories", ["cold start", "with memories"])
def test_training_prompts_equal_the_served_prompts(memories: str) -> None:
    store = FakeStore()
    if memories == "with memories":
        store = FakeStore(
            positives=[memory("p1", "Which came first, X or Y?", "1. Search X (X -> year)", "correct")],
            negatives=[memory("n1", "Who is older, A or B?", "1. Guessed", "incorrect")],
        )
    served = serve(store)
    planner_served = as_dicts(served["models"]["fake:planner"].prompts[0])
    retrieved = SimpleNamespace(positives=store.positives, negatives=store.negatives) if store.positives else None
    trained = training_prompts.planner_messages(QUESTION, training_prompts.render_memories(retrieved))
    assert planner_served == trained
    if memories == "with memories":
        assert "Which came first, X or Y?" in trained[1]["content"]
    executor_served = as_dicts(served["models"]["fake:executor"].prompts[0])
    assert executor_served == training_prompts.executor_messages(QUESTION, served["out"]["plan"])
    observation = as_dicts(served["models"]["fake:executor"].prompts[1])[-1]
    searched = next(s["content"] for s in served["out"]["trajectory"]["steps"] if s["kind"] == "observation")
    assert observation == training_prompts.observation_message(searched)


def test_the_trajectory_records_the_sources_each_search_read() -> None:
    """The tools node stores the titles the search tool read on the observation step: the
    extractive workflow names them instead of copying raw tool text."""
    out = serve(FakeStore())["out"]
    observation = next(s for s in out["trajectory"]["steps"] if s["kind"] == "observation")
    assert observation["sources"][0] == "Arthur's Magazine"
    assert set(observation["sources"]) <= {p["title"] for p in PARAGRAPHS}


def test_the_served_plan_holds_no_guessed_answer() -> None:
    """The plan node keeps the plan without the sentence that decides a comparison question, and
    that cleaned plan is what the executor is shown."""
    question = "Which magazine was started first, Arthur's Magazine or First for Women?"
    m = models(
        planner=["1. Search both magazines.\n2. Compare. The magazine started first is Arthur's Magazine.", "no"],
        executor=[CALL.format(q="Arthur's Magazine"), "<answer>Arthur's Magazine</answer>"],
    )
    deps, _ = make_deps(m, store=FakeStore(), tools=[SearchTool(corpus_from_paragraphs(PARAGRAPHS), top_k=2)])
    context = ctx()
    out = build_graph(deps=deps).invoke(
        {"question": question}, context=context, config={"recursion_limit": recursion_limit(context)}
    )
    assert out["plan"] == "1. Search both magazines.\n2. Compare."
    executor_prompt = "\n".join(str(message.content) for message in m["fake:executor"].prompts[0])
    assert "1. Search both magazines.\n2. Compare." in executor_prompt and "started first is" not in executor_prompt


def test_the_executor_is_told_the_candidates_of_a_comparison_question() -> None:
    """A comparison question's candidates reach the served executor prompt (Qwen-1.5B answered
    the director for "Which film has the director born later, A or B?"); other questions get no such line."""
    served = as_dicts(serve(FakeStore())["models"]["fake:executor"].prompts[0])
    assert 'answer with that name as written: "Arthur\'s Magazine" or "First for Women".' in served[1]["content"]
    plain = training_prompts.executor_messages("Who founded Arthur's Magazine?", "1. Search it.")
    assert "answer with that name" not in plain[1]["content"]


def test_the_executor_is_told_a_yes_no_question_is_answered_yes_or_no() -> None:
    """Six of ten 2Wiki yes/no answers of each MIA run named a country; the line reaches the
    executor prompt of a yes/no question only, and a comparison question keeps its candidates line."""
    line = 'It is a yes/no question: answer "yes" or "no".'
    polar = training_prompts.executor_messages("Are Heat and Ronin both from the same country?", "1. Search both.")
    assert line in polar[1]["content"]
    choice = training_prompts.executor_messages("Which film came out first, Heat or Ronin?", "1. Search both.")
    assert (
        line not in choice[1]["content"]
        and 'answer with that name as written: "Heat" or "Ronin".' in choice[1]["content"]
    )
    assert line not in training_prompts.executor_messages("Who directed Heat?", "1. Search it.")[1]["content"]
