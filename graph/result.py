"""`RunResult`: what one question through the graph produced, typed. It is the one codec between
the graph's checkpointable output (plain dicts in channels) and its consumers (the CLI, the
evaluation runner, the online learner), so none of them re-guesses shapes with getattr or
hasattr.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mia.graph.judge.verdict import Usage, Verdict
from mia.memory.trajectory import Trajectory
from pydantic import BaseModel, ConfigDict, Field


class RunResult(BaseModel):
    """One answered question: the trajectory, the verdict, the memory block the planner was
    shown, and what each role's model calls cost."""

    model_config = ConfigDict(frozen=True)

    question: str
    answer: str = ""
    plan: str = ""
    replan: str = ""
    trajectory: Trajectory
    verdict: Verdict | None = None
    memory_block: str = Field("", description="the retrieved memories exactly as the planner saw them")
    used_memory_ids: list[str] = Field(default_factory=list)
    memory_id: str | None = Field(None, description="the memory this episode was stored as, if any")
    usage: dict[str, Usage] = Field(default_factory=dict)
    tool_calls: int = 0
    stop_reason: str = ""
    warnings: list[str] = Field(default_factory=list)

    @classmethod
    def from_output(cls, out: Mapping[str, Any]) -> RunResult:
        """Read the graph's output state (`graph.invoke(...)`)."""
        trajectory = Trajectory.model_validate(out.get("trajectory") or {"question": out.get("question", "")})
        judgement = out.get("judgement")
        usage = {role: _usage(counts) for role, counts in (out.get("usage") or {}).items()}
        return cls(
            question=str(out.get("question") or trajectory.question), answer=str(out.get("answer") or ""),
            plan=str(out.get("plan") or ""), replan=str(out.get("replan") or ""), trajectory=trajectory,
            verdict=Verdict.model_validate(judgement) if judgement else None,
            memory_block=str(out.get("memory_text") or ""), used_memory_ids=list(out.get("used_memory_ids") or []),
            memory_id=out.get("memory_id"), usage=usage, tool_calls=int(out.get("tool_calls") or 0),
            stop_reason=str(out.get("stop_reason") or ""), warnings=[str(w) for w in out.get("warnings") or []],
        )


def _usage(counts: Mapping[str, Any]) -> Usage:
    calls, inp, outp = (int(counts.get(k) or 0) for k in ("calls", "input_tokens", "output_tokens"))
    return Usage(calls=calls, input_tokens=inp, output_tokens=outp, total_tokens=inp + outp)


def run_question(graph: Any, inputs: Mapping[str, Any], context: Any, config: Mapping[str, Any] | None = None) -> RunResult:
    """Run one question through a compiled graph and return its typed result."""
    from mia.graph.builder import recursion_limit

    config = dict(config or {})
    config.setdefault("recursion_limit", recursion_limit(context))
    return RunResult.from_output(graph.invoke(dict(inputs), context=context, config=config))


async def arun_question(graph: Any, inputs: Mapping[str, Any], context: Any,
                        config: Mapping[str, Any] | None = None) -> RunResult:
    """`run_question`, awaited."""
    from mia.graph.builder import recursion_limit

    config = dict(config or {})
    config.setdefault("recursion_limit", recursion_limit(context))
    return RunResult.from_output(await graph.ainvoke(dict(inputs), context=context, config=config))
