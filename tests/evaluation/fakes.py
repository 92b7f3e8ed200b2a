"""Scripted stand-ins for the compiled graph: they return fixed output states, so every metric the
harness computes can be checked by hand."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

# Four questions whose scores are worked out by hand in test_harness.py.
TINY = [
    {
        "id": "q1",
        "question": "What is the capital of France?",
        "answer": "Paris",
        "answer_aliases": [],
        "type": "bridge",
        "paragraphs": [{"title": "France", "text": "Paris is the capital of France."}],
        "supporting_titles": ["France"],
    },
    {
        "id": "q2",
        "question": "Who wrote Maria Golovin?",
        "answer": "Gian Carlo Menotti",
        "answer_aliases": [],
        "type": "bridge",
        "paragraphs": [{"title": "Maria Golovin", "text": "An opera by Gian Carlo Menotti."}],
        "supporting_titles": ["Maria Golovin"],
    },
    {
        "id": "q3",
        "question": "Are both magazines American?",
        "answer": "yes",
        "answer_aliases": [],
        "type": "comparison",
        "paragraphs": [{"title": "A", "text": "A is American."}],
        "supporting_titles": ["A"],
    },
    {
        "id": "q4",
        "question": "When was it founded?",
        "answer": "1998",
        "answer_aliases": ["in 1998"],
        "type": "bridge",
        "paragraphs": [{"title": "B", "text": "Founded in 1998."}],
        "supporting_titles": ["B"],
    },
]

# answer, grader label, outcome, usage per role, tool calls in the trajectory
SCRIPT: dict[str, dict[str, Any]] = {
    "q1": {
        "answer": "paris",
        "label": "CORRECT",
        "outcome": "correct",
        "tools": 1,
        "usage": {"planner": (1, 100, 20), "executor": (2, 300, 40), "judge": (1, 50, 1)},
    },
    "q2": {
        "answer": "Menotti",
        "label": "CORRECT",
        "outcome": "correct",
        "tools": 2,
        "usage": {"planner": (1, 110, 25), "executor": (3, 500, 60), "judge": (1, 55, 1)},
    },
    "q3": {
        "answer": "no",
        "label": "INCORRECT",
        "outcome": "incorrect",
        "tools": 0,
        "usage": {"planner": (1, 90, 15), "executor": (1, 200, 10), "judge": (1, 45, 1)},
    },
    "q4": {
        "answer": "the year 1998",
        "label": "NOT_ATTEMPTED",
        "outcome": "incorrect",
        "tools": 3,
        "usage": {"planner": (1, 120, 30), "executor": (4, 800, 90), "judge": (1, 60, 1), "manager": (1, 400, 80)},
    },
}


def write_tiny(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in TINY), encoding="utf-8")
    return path


def output_for(qid: str) -> dict[str, Any]:
    s = SCRIPT[qid]
    steps = []
    for i in range(s["tools"]):
        steps += [
            {"kind": "tool_call", "content": f"search {i}", "tool": "search", "args": {"query_list": ["x"]}},
            # a search's result (its tool cuts at 4,096 characters) and an unusually long step
            {"kind": "observation", "content": "x" * (4096 if i == 0 else 20_000)},
        ]
    steps.append({"kind": "answer", "content": s["answer"]})
    question = next(r["question"] for r in TINY if r["id"] == qid)
    return {  # the graph's output state (see mia.graph.state.OutputState)
        "question": question,
        "answer": s["answer"],
        "plan": f"plan for {qid}",
        "trajectory": {"id": f"t-{qid}", "question": question, "steps": steps, "used_memory_ids": [f"m-{qid}"]},
        "tool_calls": s["tools"],
        "judgement": {
            "outcome": s["outcome"],
            "score": 1.0 if s["outcome"] == "correct" else 0.0,
            "mode": "ground_truth",
            "method": "llm",
            "grader_label": s["label"],
            "prediction": s["answer"],
        },
        "usage": {role: {"calls": c, "input_tokens": i, "output_tokens": o} for role, (c, i, o) in s["usage"].items()},
        "used_memory_ids": [f"m-{qid}"],
        "memories": [{"id": f"m-{qid}", "outcome": "correct", "question": "an older question", "score": 0.5}],
        "memory_id": f"new-{qid}",
        "stop_reason": "answered",
        "warnings": ["memorise failed: boom"] if qid == "q3" else [],
    }


class SimulatedCrash(BaseException):
    """Not an Exception: the harness does not catch it, so the run ends as if the process died."""


class ScriptedGraph:
    """`ainvoke` returns the scripted output of the question; records every call."""

    def __init__(self, fail: set[str] | None = None, crash_after: int | None = None, delay: float = 0.0) -> None:
        self.calls: list[tuple[dict[str, Any], Any]] = []
        self.fail = fail or set()
        self.crash_after = crash_after
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0

    async def ainvoke(self, state: dict[str, Any], context: Any = None) -> dict[str, Any]:
        qid = next(r["id"] for r in TINY if r["question"] == state["question"])
        if self.crash_after is not None and len(self.calls) >= self.crash_after:
            raise SimulatedCrash("simulated crash")
        self.calls.append((state, context))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if qid in self.fail:
                raise RuntimeError(f"tool exploded on {qid}")
            return output_for(qid)
        finally:
            self.in_flight -= 1
