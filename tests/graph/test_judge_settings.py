"""Defect 12.7 on the graph side: reviewer feedback on a failed workflow reaches the planner, the
LLM arbiter is reachable from the Context, the numeric rule's verdict says it was the numeric
rule, and the shown memories can be left uncredited (test-time learning credits them itself)."""

from __future__ import annotations

from typing import Any

from mia.graph.builder import build_graph, recursion_limit
from mia.graph.context import Context

from .fakes import FakeStore, ScriptedChatModel, make_deps, memory

CALL = '<tool_call>{"name": "search", "arguments": {"query_list": ["Hamlet author"]}}</tool_call>'


def models() -> dict[str, ScriptedChatModel]:
    return {"fake:planner": ScriptedChatModel(script=["1. Search for the author.", "no"]),
            "fake:executor": ScriptedChatModel(script=[CALL, "<answer>Shakespeare</answer>"]),
            "fake:manager": ScriptedChatModel(script=[]),
            "fake:judge": ScriptedChatModel(script=[], fallback="A")}


def ctx(**kw: Any) -> Context:
    return Context(planner_model="fake:planner", executor_model="fake:executor", manager_model="fake:manager",
                   judge_model="fake:judge", tool_protocol="text", min_tool_calls=0, **kw)


def run(deps: Any, context: Context) -> dict[str, Any]:
    return build_graph(deps=deps).invoke({"question": "Who wrote Hamlet?", "gold_answers": ["Shakespeare"]},
                                         context=context, config={"recursion_limit": recursion_limit(context)})


def test_reviewer_feedback_on_a_failed_workflow_reaches_the_planner() -> None:
    failed = memory("n1", "Who wrote Macbeth?", "1. Guessed the author.", "incorrect")
    failed.record.judge_feedback = "The answer named a contemporary without checking any source."
    worked = memory("p1", "Who wrote Othello?", "1. Searched the play.", "correct")
    worked.record.judge_feedback = "fine"
    m = models()
    deps, _ = make_deps(m, store=FakeStore(positives=[worked], negatives=[failed]))
    run(deps, ctx())
    plan_prompt = m["fake:planner"].prompts[0][1].content
    assert "without checking any source" in plan_prompt  # why the failed workflow failed
    assert "fine" not in plan_prompt.split("Failure lessons")[0]  # successes carry no feedback line


def test_arbiter_and_contradiction_reach_the_judge_and_credit_can_be_off() -> None:
    m = models()
    store = FakeStore(positives=[memory("p1", "Who wrote Othello?", "1. Searched.", "correct")])
    deps, seen = make_deps(m, store=store)
    run(deps, ctx(judge_arbiter="llm", judge_contradiction="metrics"))
    config = seen["judge"][0]["config"]
    assert (config.arbiter, config.contradiction) == ("llm", "metrics")
    assert store.stats == [(["p1"], True)]  # credited once by the graph
    store2 = FakeStore(positives=[memory("p1", "Who wrote Othello?", "1. Searched.", "correct")])
    deps2, _ = make_deps(models(), store=store2)
    run(deps2, ctx(credit_used_memories=False))
    assert store2.stats == []  # left to the test-time learner


def test_the_numeric_rule_is_labelled_weighted() -> None:
    from mia.graph.judge import JudgeConfig, judge

    review = '{"score": 9, "verdict": "correct", "justification": "ok"}'
    model = ScriptedChatModel(script=[], fallback=review)
    weighted = judge(model, "Who wrote Hamlet?", "Shakespeare", trace_text="searched", mode="reviewers")
    assert weighted.method == "weighted"  # before: "llm", though no model decided it
    by_llm = judge(ScriptedChatModel(script=[review, review, review, "correct"], fallback="correct"),
                   "Who wrote Hamlet?", "Shakespeare", trace_text="searched", mode="reviewers",
                   config=JudgeConfig(arbiter="llm"))
    assert by_llm.method == "llm" and by_llm.outcome == "correct"  # the arbiter model decided
