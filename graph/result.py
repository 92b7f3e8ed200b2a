"""`RunResult`: what one question through the graph produced, typed. It is the one codec between
the graph's checkpointable output (plain dicts in channels, see `mia.graph.state`) and its
consumers (the CLI, the evaluation runner, the online learner, training's graph episodes), so
none of them re-guesses shapes with getattr, hasattr or dict lookups on the raw output.

The verdict's channel codec is `mia.graph.judge.verdict.verdict_to_channel` (the judge node
writes with it) and `verdict_from_channel` (only `RunResult`, and the CLI's per-node progress
line, read with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mia.graph.judge.verdict import Usage, Verdict, verdict_from_channel
from mia.memory.trajectory import Outcome, Trajectory, TrajectoryStep
from pydantic import BaseModel, ConfigDict, Field


class MemoryShown(BaseModel):
    """One memory the planner was shown (the `memories` output: what `mia ask` lists)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    outcome: str = "unknown"
    question: str = ""
    score: float = 0.0
    similarity: float = Field(
        0.0, description="the raw cosine to the question (score mixes it, min-max normalised, with the win rate)"
    )


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
    memories: list[MemoryShown] = Field(default_factory=list, description="the memories shown, with their scores")
    used_memory_ids: list[str] = Field(default_factory=list)
    memory_id: str | None = Field(None, description="the memory this episode was stored as, if any")
    usage: dict[str, Usage] = Field(default_factory=dict)
    tool_calls: int = 0
    stop_reason: str = ""
    warnings: list[str] = Field(default_factory=list)

    @property
    def caption(self) -> str:
        """The image caption the question was answered with ('' without an image)."""
        return self.trajectory.caption

    @property
    def steps(self) -> list[TrajectoryStep]:
        return self.trajectory.steps

    @property
    def outcome(self) -> Outcome:
        """The verdict's outcome ('unknown' when the question was not judged)."""
        return self.verdict.outcome if self.verdict is not None else "unknown"

    @property
    def feedback(self) -> str:
        return self.verdict.feedback if self.verdict is not None else ""

    def answers(self) -> list[str]:
        """Every answer the executor gave, in order (a replanned run has two or more)."""
        return [step.content for step in self.trajectory.steps if step.kind == "answer"]

    def replanned(self) -> bool:
        return any(step.kind == "replan" for step in self.trajectory.steps)

    def reflection(self) -> str | None:
        """The reflection's raw decision text, when the graph reflected."""
        texts = [step.content for step in self.trajectory.steps if step.kind == "reflection"]
        return texts[-1] if texts else None

    @classmethod
    def from_output(cls, out: Mapping[str, Any]) -> RunResult:
        """Read the graph's output state (`graph.invoke(...)`, or a checkpoint's values)."""
        question = str(out.get("question") or "")
        trajectory = Trajectory.model_validate(out.get("trajectory") or {"question": question})
        memories = [MemoryShown.model_validate(m) for m in out.get("memories") or []]
        usage = {role: _usage(counts) for role, counts in (out.get("usage") or {}).items()}
        return cls(
            question=question or trajectory.question,
            answer=str(out.get("answer") or ""),
            plan=str(out.get("plan") or ""),
            replan=str(out.get("replan") or ""),
            trajectory=trajectory,
            verdict=verdict_from_channel(out.get("judgement")),
            memory_block=str(out.get("memory_text") or ""),
            memories=memories,
            used_memory_ids=[str(i) for i in out.get("used_memory_ids") or trajectory.used_memory_ids],
            memory_id=out.get("memory_id"),
            usage=usage,
            tool_calls=int(out.get("tool_calls") or 0),
            stop_reason=str(out.get("stop_reason") or ""),
            warnings=[str(w) for w in out.get("warnings") or []],
        )

    def to_output(self) -> dict[str, Any]:
        """The output state's shape again (`from_output(r.to_output()) == r`): what `mia ask --json`
        prints, plus the image caption used (`caption`; `from_output` reads it from the trajectory)."""
        return {
            "question": self.question,
            "answer": self.answer,
            "plan": self.plan,
            "replan": self.replan,
            "judgement": self.verdict.model_dump(mode="json") if self.verdict is not None else None,
            "usage": {role: u.model_dump(exclude={"total_tokens"}) for role, u in self.usage.items()},
            "memory_id": self.memory_id,
            "used_memory_ids": list(self.used_memory_ids),
            "memories": [m.model_dump() for m in self.memories],
            "tool_calls": self.tool_calls,
            "stop_reason": self.stop_reason,
            "warnings": list(self.warnings),
            "trajectory": self.trajectory.model_dump(mode="json"),
            "memory_text": self.memory_block,
            "caption": self.caption,
        }


def _usage(counts: Mapping[str, Any]) -> Usage:
    usage = Usage(**{key: int(counts.get(key) or 0) for key in Usage().counts()})
    usage.total_tokens = usage.input_tokens + usage.output_tokens
    return usage


def run_question(
    graph: Any, inputs: Mapping[str, Any], context: Any, config: Mapping[str, Any] | None = None
) -> RunResult:
    """Run one question through a compiled graph and return its typed result."""
    from mia.graph.builder import recursion_limit

    config = dict(config or {})
    config.setdefault("recursion_limit", recursion_limit(context))
    return RunResult.from_output(graph.invoke(dict(inputs), context=context, config=config))


async def arun_question(
    graph: Any, inputs: Mapping[str, Any], context: Any, config: Mapping[str, Any] | None = None
) -> RunResult:
    """`run_question`, awaited."""
    from mia.graph.builder import recursion_limit

    config = dict(config or {})
    config.setdefault("recursion_limit", recursion_limit(context))
    return RunResult.from_output(await graph.ainvoke(dict(inputs), context=context, config=config))
