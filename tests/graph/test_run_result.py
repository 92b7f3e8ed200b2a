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
    m = models(planner=["1. Search the author.", "no"],
               executor=[CALL.format(q="Hamlet author"), "<answer>Shakespeare</answer>"])
    deps, _ = make_deps(m, store=store)

    def judge_fn(**kwargs: Any) -> Verdict:
        return Verdict(outcome="correct", score=1.0, mode="ground_truth", method="llm", prediction=kwargs["answer"])

    deps._judge = judge_fn
    result = run_question(build_graph(deps=deps), {"question": "Who wrote Hamlet?", "gold_answers": ["Shakespeare"]},
                          ctx())
    assert isinstance(result, RunResult) and isinstance(result.trajectory, Trajectory)
    assert result.answer == "Shakespeare" and result.trajectory.answer == "Shakespeare"
    assert isinstance(result.verdict, Verdict) and result.verdict.outcome == "correct"
    assert result.trajectory.outcome == "correct"
    assert "Who wrote Macbeth?" in result.memory_block and result.used_memory_ids == ["p1"]
    assert result.memory_block in m["fake:planner"].prompts[0][1].content  # exactly what the planner saw
    assert result.usage["executor"].calls == 2 and result.usage["executor"].total_tokens == 30
    assert result.tool_calls == 1 and result.stop_reason == "answered" and result.memory_id == "mem-1"


def test_judge_off_gives_no_verdict() -> None:
    m = models(planner=["1.", "no"], executor=["<answer>x</answer>"])
    deps, _ = make_deps(m)
    result = run_question(build_graph(deps=deps), {"question": "Q?"}, ctx(judge_mode="off", memorise=False))
    assert result.verdict is None and result.trajectory.outcome == "unknown" and result.memory_id is None
