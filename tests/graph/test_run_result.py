"""RunResult: the graph's output read once, typed (issue 12, item 1)."""

from __future__ import annotations

from typing import Any

from mia.graph import RunResult, run_question
from mia.graph.builder import build_graph
from mia.graph.judge.verdict import Verdict
from mia.memory.trajectory import Trajectory

from .fakes import FakeStore, make_deps, memory
from .test_graph_logic import CALL, ctx, models


def test_a_run_returns_the_trajectory_verdict_memory_block_and_usage() -> None:
    store = FakeStore(positives=[memory("p1", "Who wrote Macbeth?", "1. Search the play", "correct")])
    m = models(
        planner=["1. Search the author.", "no"],
        executor=[CALL.format(q="Hamlet author"), "<answer>Shakespeare</answer>"],
    )
    deps, _ = make_deps(m, store=store)

    def judge_fn(**kwargs: Any) -> Verdict:
        return Verdict(outcome="correct", score=1.0, mode="ground_truth", method="llm", prediction=kwargs["answer"])

    deps._judge = judge_fn
    result = run_question(
        build_graph(deps=deps), {"question": "Who wrote Hamlet?", "gold_answers": ["Shakespeare"]}, ctx()
    )
    assert isinstance(result, RunResult) and isinstance(result.trajectory, Trajectory)
    assert result.answer == "Shakespeare" and result.trajectory.answer == "Shakespeare"
    assert isinstance(result.verdict, Verdict) and result.verdict.outcome == "correct"
    assert result.trajectory.outcome == "correct"
    assert "Who wrote Macbeth?" in result.memory_block and result.used_memory_ids == ["p1"]
    # the raw cosine survives the typed result (the evaluation's results.jsonl is written from it)
    assert [(m.id, m.score, m.similarity) for m in result.memories] == [("p1", 0.5, 0.8)]
    assert RunResult.from_output(result.to_output()).memories == result.memories
    assert result.memory_block in m["fake:planner"].prompts[0][1].content  # exactly what the planner saw
    assert result.usage["executor"].calls == 2 and result.usage["executor"].total_tokens == 30
    assert result.tool_calls == 1 and result.stop_reason == "answered" and result.memory_id == "mem-1"


def test_usage_keeps_each_roles_model_time_and_prompt_cache_hits() -> None:
    """Where a question's seconds go: the counter times every model call of a role and sums the
    prompt tokens the backend's cache served (LangChain's input_token_details.cache_read)."""
    m = models(
        planner=["1. Search the author.", "no"],
        executor=[CALL.format(q="Hamlet author"), "<answer>Shakespeare</answer>"],
    )
    m["fake:executor"].delay_s = 0.06
    deps, _ = make_deps(m)
    result = run_question(build_graph(deps=deps), {"question": "Who wrote Hamlet?"}, ctx(judge_mode="off"))
    executor, planner = result.usage["executor"], result.usage["planner"]
    assert executor.calls == 2 and executor.cached_tokens == 8 and executor.ms >= 120
    assert planner.calls == 2 and planner.ms < executor.ms  # the planner's scripted replies are instant
    assert set(executor.counts()) == {"calls", "input_tokens", "output_tokens", "cached_tokens", "ms"}


def test_judge_off_gives_no_verdict() -> None:
    m = models(planner=["1.", "no"], executor=["<answer>x</answer>"])
    deps, _ = make_deps(m)
    result = run_question(build_graph(deps=deps), {"question": "Q?"}, ctx(judge_mode="off", memorise=False))
    assert result.verdict is None and result.trajectory.outcome == "unknown" and result.memory_id is None
