"""The executor's search policy (Context.min_tool_calls) with scripted fakes: every edge."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from mia.graph.context import Context
from mia.graph.nodes.search_policy import required_searches, with_query
from mia.graph.prompts import render
from mia.graph.protocol import PLAN_STOP

from .fakes import make_deps, search_tool
from .test_graph_logic import CALL, ctx, models, run

PREFILL = render("executor", "search_prefill")


def policy_ctx(**kw: Any) -> Context:
    return ctx(**{"min_tool_calls": 1, "max_replans": 0, **kw})


def observations(out: dict[str, Any]) -> list[str]:
    return [s["content"] for s in out["trajectory"]["steps"] if s["kind"] == "observation"]


def test_default_is_one_search() -> None:
    assert Context().min_tool_calls == 1


def test_required_searches_is_capped_by_budget_and_tools() -> None:
    assert required_searches(1, 30, 1) == 1
    assert required_searches(3, 2, 1) == 2
    assert required_searches(2, 5, 0) == 0
    assert required_searches(-1, 5, 1) == 0


def test_with_query_falls_back_to_the_question() -> None:
    assert with_query("search", {"query_list": ["  ", ""]}, " Q? ") == ({"query_list": ["Q?"]}, True)
    assert with_query("search", {"query": "x"}, "Q?") == ({"query_list": ["x"]}, False)
    assert with_query("calculator", {}, "Q?") == ({}, False)


def test_prefill_forces_a_search_with_the_models_query() -> None:
    m = models(
        planner=["1. Search the author."],
        executor=["1. Search the author.", 'Hamlet author"]}}', "<answer>Shakespeare</answer>"],
    )
    m["fake:executor"].supports_prefill = True
    tool = search_tool()
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, policy_ctx())

    assert out["answer"] == "Shakespeare" and out["tool_calls"] == 1
    assert tool.metadata["calls"] == [["Hamlet author"]]
    assert observations(out) == ["Doc 1 about Hamlet author"]
    forced = m["fake:executor"].call_kwargs[1]
    assert forced["prefill"] == PREFILL and "</tool_call>" in forced["stop"]
    # the premature answer is not in the history; the forced call is, then the observation
    third = m["fake:executor"].prompts[2]
    assert "1. Search the author." not in [x.content for x in third if isinstance(x, AIMessage)]
    assert '"query_list": ["Hamlet author"]' in third[-2].content and "<tool_response>" in third[-1].content
    assert any("search forced by prefill" in w for w in out["warnings"])
    assert [s["kind"] for s in out["trajectory"]["steps"]][:3] == ["tool_call", "observation", "answer"]


def test_prefill_with_empty_query_uses_the_question() -> None:
    m = models(planner=["1."], executor=["<answer>guess</answer>", '"]}}', "<answer>done</answer>"])
    m["fake:executor"].supports_prefill = True
    tool = search_tool()
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, policy_ctx(), question="Who wrote Hamlet?")
    assert tool.metadata["calls"] == [["Who wrote Hamlet?"]]
    assert any("question used as the query" in w for w in out["warnings"])
    assert out["answer"] == "done"


def test_prefill_with_junk_continuation_uses_the_question() -> None:
    m = models(planner=["1."], executor=["<answer>guess</answer>", "\n\n1. 1. 2. 2.", "<answer>done</answer>"])
    m["fake:executor"].supports_prefill = True
    tool = search_tool()
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, policy_ctx())
    assert len(tool.metadata["calls"]) == 1 and tool.metadata["calls"][0][0].strip()
    assert out["tool_calls"] == 1 and out["answer"] == "done"


def test_junk_first_reply_is_forced_too() -> None:
    m = models(planner=["1."], executor=["<think>only thinking", 'x"]}}', "<answer>ok</answer>"])
    m["fake:executor"].supports_prefill = True
    deps, _ = make_deps(m)
    out = run(deps, policy_ctx())
    assert out["tool_calls"] == 1 and out["answer"] == "ok"
    assert any("malformed reply" in w and "forced" in w for w in out["warnings"])


def test_text_protocol_api_model_gets_a_corrective_message() -> None:
    m = models(planner=["1."], executor=["<answer>guess</answer>", CALL.format(q="play author"), "<answer>ok</answer>"])
    tool = search_tool()
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, policy_ctx())
    assert tool.metadata["calls"] == [["play author"]]
    second = m["fake:executor"].prompts[1]
    assert isinstance(second[-1], HumanMessage) and "0 of the 1 searches" in second[-1].content
    assert "prefill" not in m["fake:executor"].call_kwargs[1]
    # the premature answer and the correction stay in the history
    assert "<answer>guess</answer>" in second[-2].content
    assert any("search forced by message" in w for w in out["warnings"])


def test_text_protocol_message_ignored_falls_back_to_the_question() -> None:
    m = models(
        planner=["1."], executor=["<answer>guess</answer>", "<answer>still guessing</answer>", "<answer>ok</answer>"]
    )
    tool = search_tool()
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, policy_ctx(), question="Who is older?")
    assert tool.metadata["calls"] == [["Who is older?"]] and out["answer"] == "ok"


def test_native_forces_the_tool_choice() -> None:
    call = AIMessage(content="", tool_calls=[{"name": "search", "args": {"query_list": ["nat q"]}, "id": "c9"}])
    m = models(planner=["1."], executor=["<answer>early</answer>", call, "<answer>nat</answer>"])
    tool = search_tool()
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, policy_ctx(tool_protocol="native"))
    assert out["answer"] == "nat" and tool.metadata["calls"] == [["nat q"]]
    assert {"tool_choice": "search"} in m["fake:executor"].bind_kwargs
    third = m["fake:executor"].prompts[2]
    assert isinstance(third[-1], ToolMessage) and third[-1].tool_call_id == "c9"


def test_native_without_a_call_uses_the_question_and_a_tool_message() -> None:
    m = models(planner=["1."], executor=["<answer>early</answer>", "no call", "<answer>nat</answer>"])
    tool = search_tool()
    deps, _ = make_deps(m, tools=[tool])
    run(deps, policy_ctx(tool_protocol="native"), question="Q one?")
    assert tool.metadata["calls"] == [["Q one?"]]
    third = m["fake:executor"].prompts[2]
    assert isinstance(third[-1], ToolMessage) and third[-2].tool_calls[0]["id"] == third[-1].tool_call_id


def test_two_required_searches() -> None:
    m = models(
        planner=["1."], executor=[CALL.format(q="a"), "<answer>early</answer>", 'b"]}}', "<answer>late</answer>"]
    )
    m["fake:executor"].supports_prefill = True
    tool = search_tool()
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, policy_ctx(min_tool_calls=2, max_tool_calls=5))
    assert tool.metadata["calls"] == [["a"], ["b"]] and out["answer"] == "late"
    assert any("after 1 of 2 required searches" in w for w in out["warnings"])


def test_zero_minimum_or_zero_budget_accepts_an_early_answer() -> None:
    for kw in ({"min_tool_calls": 0}, {"max_tool_calls": 0}):
        m = models(planner=["1."], executor=["<answer>early</answer>"])
        m["fake:executor"].supports_prefill = True
        deps, _ = make_deps(m)
        out = run(deps, policy_ctx(**kw))
        assert out["answer"] == "early" and out["tool_calls"] == 0 and len(m["fake:executor"].prompts) == 1


def test_empty_query_in_a_normal_call_uses_the_question() -> None:
    empty = '<tool_call>{"name": "search", "arguments": {"query_list": []}}</tool_call>'
    m = models(planner=["1."], executor=[empty, "<answer>ok</answer>"])
    tool = search_tool()
    deps, _ = make_deps(m, tools=[tool])
    out = run(deps, ctx(max_replans=0), question="Who wrote Hamlet?")
    assert tool.metadata["calls"] == [["Who wrote Hamlet?"]] and out["answer"] == "ok"
    assert any("no query" in w for w in out["warnings"])


def test_invented_question_is_cut_from_plan_and_replan() -> None:
    invented = '1. Search "A".\n2. Answer.\n\nQuestion: Which city is bigger?\nPlan:'
    m = models(
        planner=[invented, "yes", invented], executor=[CALL.format(q="a"), "<answer>x</answer>", "<answer>y</answer>"]
    )
    deps, _ = make_deps(m)
    out = run(deps, ctx(max_replans=1))
    assert out["plan"] == out["replan"] == '1. Search "A".\n2. Answer.'


def test_a_replan_that_replays_the_transcript_is_cut_and_the_planner_is_told_to_stop_there() -> None:
    # the shape of a real Qwen-1.5B replan (bench/e2e, 593 tokens): the plan again, then the trace
    replay = (
        '1. Search "Isabel Macedo telenovela".\n2. Answer with the name of the show.\n\nRound 1\n'
        'Tool call: search({"query_list": ["Isabel Macedo telenovela"]})\n'
        'Tool result: Results for "Isabel Macedo telenovela": Doc 1 (Title: Patricia Longo) ...'
    )
    m = models(
        planner=["1. Search the show.", "yes", replay],
        executor=[CALL.format(q="a"), "<answer>x</answer>", "<answer>Graduados</answer>"],
    )
    deps, _ = make_deps(m)
    out = run(deps, ctx(max_replans=1))
    assert out["replan"] == '1. Search "Isabel Macedo telenovela".\n2. Answer with the name of the show.'
    assert "Tool result" not in m["fake:executor"].prompts[-1][-1].content  # the executor got the plan only
    planner_calls = m["fake:planner"].call_kwargs
    assert planner_calls[0]["stop"] == planner_calls[2]["stop"] == PLAN_STOP  # plan and replan
    assert "\nRound " in PLAN_STOP and len(PLAN_STOP) <= 4  # OpenAI takes four stop sequences


def test_unclear_reflection_is_recorded_in_the_step() -> None:
    m = models(planner=["1.", "1. 1.\n2. 2."], executor=[CALL.format(q="a"), "<answer>x</answer>"])
    deps, _ = make_deps(m)
    out = run(deps, ctx(max_replans=1))
    step = [s for s in out["trajectory"]["steps"] if s["kind"] == "reflection"][0]
    assert step["content"] == "no" and step["args"] == {"unclear": True, "raw": "1. 1.\n2. 2."}


def test_grammar_allows_only_a_search_until_the_required_searches_are_made() -> None:
    """On a backend that constrains decoding, the executor's turn is bound to the protocol's
    grammar: call-only before the required search, call-or-answer after it; off with the context."""
    m = models(
        planner=["1. Search the author."], executor=[CALL.format(q="Hamlet author"), "<answer>Shakespeare</answer>"]
    )
    m["fake:executor"].supports_grammar = True
    deps, _ = make_deps(m, tools=[search_tool()])
    out = run(deps, policy_ctx())
    assert out["answer"] == "Shakespeare" and not out["warnings"]
    first, second = (kw["grammar"] for kw in m["fake:executor"].call_kwargs)
    assert '"<tool_call>"' in first and '"<answer>"' not in first
    assert '"<tool_call>"' in second and '"<answer>"' in second
    assert '"\\"search\\""' in first  # the bound tool's name, as a JSON string

    m = models(planner=["1."], executor=[CALL.format(q="x"), "<answer>y</answer>"])
    m["fake:executor"].supports_grammar = True
    deps, _ = make_deps(m, tools=[search_tool()])
    run(deps, policy_ctx(turn_grammar=False))
    assert all("grammar" not in kw for kw in m["fake:executor"].call_kwargs)
