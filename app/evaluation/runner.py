"""The seam between the harness and the agent: run one question, get one typed result.

Why a seam: the harness (resumption, concurrency, statistics) is tested with scripted fakes of
`graph.ainvoke`, and the very same code drives the real LangGraph graph on any backend.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from mia.app.evaluation.records import EvalExample, QuestionResult, RoleUsage

QuestionRunner = Callable[[EvalExample], Awaitable[QuestionResult]]
JudgeChoice = Literal["llm", "metrics"]
MAX_STEP_CHARS = 2000  # observations are long; the log keeps enough to debug, not the whole corpus


def _as_dict(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return dict(value) if isinstance(value, dict) else {}


def _steps(trajectory: Any) -> list[dict[str, Any]]:
    """The trajectory's steps as short dicts (the graph gives a Trajectory or its dict)."""
    raw = _as_dict(trajectory).get("steps") if not isinstance(trajectory, list) else trajectory
    steps: list[dict[str, Any]] = []
    for step in raw or []:
        d = _as_dict(step)
        content = str(d.get("content") or "")
        if len(content) > MAX_STEP_CHARS:
            d["content"] = content[:MAX_STEP_CHARS] + f" …[{len(content) - MAX_STEP_CHARS} chars cut]"
        steps.append(d)
    return steps


def answer_scores(answer: str, gold_answers: list[str]) -> tuple[float, float]:
    """Exact match and token F1 (best over aliases), with the judge package's HotpotQA metrics."""
    from mia.graph.judge import exact_match, f1_score

    return float(exact_match(answer or "", gold_answers)), float(f1_score(answer or "", gold_answers))


def verdict_correct(judgement: Any) -> tuple[bool, str | None]:
    """The paper's rule: only an explicit CORRECT counts; unknown, errors and missing verdicts do not."""
    verdict = _as_dict(judgement)
    if not verdict:
        return False, "missing"
    outcome = str(verdict.get("outcome") or "").lower().removeprefix("outcome.")
    label = verdict.get("grader_label") or verdict.get("method") or outcome or None
    return outcome == "correct", label


def result_from_output(example: EvalExample, out: dict[str, Any], wall_s: float, judge: JudgeChoice) -> QuestionResult:
    """Turn the graph's output state into the log line (scores, usage, tools, memories)."""
    answer = str(out.get("answer") or "")
    trajectory = out.get("trajectory")
    steps = _steps(trajectory)
    tool_calls = out.get("tool_calls")
    if tool_calls is None:
        tool_calls = sum(1 for s in steps if s.get("kind") == "tool_call")
    usage = {role: RoleUsage.model_validate(counts) for role, counts in (out.get("usage") or {}).items()}
    summaries = [_as_dict(m) for m in out.get("memories") or []]
    memories = (out.get("used_memory_ids") or _as_dict(trajectory).get("used_memory_ids")
                or [m["id"] for m in summaries if m.get("id")])
    em, f1 = answer_scores(answer, example.gold_answers)
    correct, grade = verdict_correct(out.get("judgement")) if judge == "llm" else (None, None)
    plan = out.get("plan")
    return QuestionResult(
        id=example.id,
        question=example.question,
        gold_answers=example.gold_answers,
        type=example.type,
        answer=answer,
        plan=None if plan is None else str(plan),
        trajectory=steps,
        em=em,
        f1=f1,
        judge_correct=correct,
        judge_grade=grade,
        tool_calls=int(tool_calls),
        usage=usage,
        wall_s=wall_s,
        memories_used=[str(m) for m in memories],
        memories=summaries,
        memory_id=out.get("memory_id"),
        stop_reason=out.get("stop_reason"),
        warnings=[str(w) for w in out.get("warnings") or []],
    )


def error_result(example: EvalExample, err: BaseException, wall_s: float, judge: JudgeChoice) -> QuestionResult:
    """A question whose run raised scores 0 and says why (the run goes on; --retry-errors redoes it)."""
    return QuestionResult(
        id=example.id,
        question=example.question,
        gold_answers=example.gold_answers,
        type=example.type,
        judge_correct=False if judge == "llm" else None,
        judge_grade="error" if judge == "llm" else None,
        wall_s=wall_s,
        error=f"{type(err).__name__}: {err}",
    )


def is_config_error(err: BaseException) -> bool:
    """A missing key or model fails every question: the run stops instead of logging errors."""
    try:
        from mia.graph.models.errors import BackendError
    except ImportError:  # pragma: no cover - the models package is part of the install
        return False
    return isinstance(err, BackendError)


@dataclass
class GraphRunner:
    """Runs one question through a compiled graph (real or fake) with a fixed context."""

    graph: Any  # anything with `await ainvoke(state, context=...)`
    context: Any
    setting: Literal["distractor", "open"] = "distractor"
    judge: JudgeChoice = "llm"
    config: dict[str, Any] | None = None  # LangGraph run config (recursion_limit for big budgets)

    def input_state(self, example: EvalExample) -> dict[str, Any]:
        """The distractor setting searches only the question's own paragraphs (the paper's sandbox)."""
        state: dict[str, Any] = {"question": example.question, "gold_answers": example.gold_answers}
        if example.image:
            state["image"] = example.image
        if example.caption:
            state["caption"] = example.caption
        if self.setting == "distractor":
            state["paragraphs"] = [p.model_dump() for p in example.paragraphs]
        return state

    async def __call__(self, example: EvalExample) -> QuestionResult:
        start = time.perf_counter()
        try:
            extra = {"config": self.config} if self.config else {}
            out = await self.graph.ainvoke(self.input_state(example), context=self.context, **extra)
        except Exception as err:  # one bad question must not end a 1,000-question run
            if is_config_error(err):  # ...but a missing key or model fails every question: stop now
                raise
            return error_result(example, err, time.perf_counter() - start, self.judge)
        return result_from_output(example, dict(out), time.perf_counter() - start, self.judge)
