"""The seam between the harness and the agent: run one question, get one typed result.

Why a seam: the harness (resumption, concurrency, statistics) is tested with scripted fakes of
`graph.ainvoke`, and the very same code drives the real LangGraph graph on any backend. The
output is read once, by `RunResult` (the graph's one codec); the log line is built from that.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from mia.app.evaluation.records import EvalExample, QuestionResult, RoleUsage
from mia.memory import cut_for_log

if TYPE_CHECKING:  # pragma: no cover - the graph is imported when a question runs
    from mia.graph.judge.verdict import Verdict
    from mia.graph.result import RunResult

QuestionRunner = Callable[[EvalExample], Awaitable[QuestionResult]]
JudgeChoice = Literal["llm", "metrics"]
JUDGE_CHOICES: tuple[str, ...] = get_args(JudgeChoice)  # what `mia eval --judge` may pass
#: Above what a search returns (its tools cut their text at 4,096 characters, graph/tools), so the
#: log holds what the executor was served and its SFT can rebuild the prompts; only an unusually
#: long step (a visited page, say) is cut. Until 2026-12-07 it was 2,000: 84 of the first SFT
#: adapter's 200 rows were rebuilt from a cut result (results/training/README.md).
MAX_STEP_CHARS = 16_384


def _steps(result: RunResult) -> list[dict[str, Any]]:
    """The trajectory's steps as dicts (an unusually long step cut, saying so: mia.memory.cut_for_log)."""
    steps: list[dict[str, Any]] = []
    for step in result.trajectory.steps:
        d = step.model_dump(mode="json")
        d["content"] = cut_for_log(step.content, MAX_STEP_CHARS)
        steps.append(d)
    return steps


def answer_scores(answer: str, gold_answers: list[str]) -> tuple[float, float]:
    """Exact match and token F1 (best over aliases), with the judge package's HotpotQA metrics."""
    from mia.graph.judge import exact_match, f1_score

    return float(exact_match(answer or "", gold_answers)), float(f1_score(answer or "", gold_answers))


def verdict_correct(verdict: Verdict | None) -> tuple[bool, str | None]:
    """The paper's rule: only an explicit CORRECT counts; unknown, errors and missing verdicts do not."""
    if verdict is None:
        return False, "missing"
    return verdict.outcome == "correct", verdict.grader_label or verdict.method


def question_result(example: EvalExample, result: RunResult, wall_s: float, judge: JudgeChoice) -> QuestionResult:
    """Turn one run's typed result into the log line (scores, usage, tools, memories)."""
    em, f1 = answer_scores(result.answer, example.gold_answers)
    correct, grade = verdict_correct(result.verdict) if judge == "llm" else (None, None)
    return QuestionResult(
        id=example.id,
        question=example.question,
        gold_answers=example.gold_answers,
        type=example.type,
        answer=result.answer,
        plan=result.plan,
        trajectory=_steps(result),
        em=em,
        f1=f1,
        judge_correct=correct,
        judge_grade=grade,
        tool_calls=result.tool_calls,
        usage={role: RoleUsage(**u.counts()) for role, u in result.usage.items()},
        wall_s=wall_s,
        memories_used=list(result.used_memory_ids),
        memories=[m.model_dump() for m in result.memories],
        memory_id=result.memory_id,
        stop_reason=result.stop_reason or None,
        warnings=list(result.warnings),
        finished_at=time.time(),
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
        finished_at=time.time(),
    )


def is_config_error(err: BaseException) -> bool:
    """A missing key or model fails every question: the run stops instead of logging errors."""
    try:
        from mia.graph.models.errors import BackendError
    except ImportError:  # pragma: no cover - the models package is part of the install
        return False
    return isinstance(err, BackendError)


def input_state(example: EvalExample, setting: str, gold: bool = True) -> dict[str, Any]:
    """The graph input for one question: its image and caption when it has them, the gold answers
    (unless the judge must go without), and in the distractor setting only the question's own
    paragraphs (the paper's sandbox)."""
    state: dict[str, Any] = {"question": example.question}
    if gold:
        state["gold_answers"] = example.gold_answers
    if example.image:
        state["image"] = example.image
    if example.caption:
        state["caption"] = example.caption
    if setting == "distractor":
        state["paragraphs"] = [p.model_dump() for p in example.paragraphs]
    return state


@dataclass
class GraphRunner:
    """Runs one question through a compiled graph (real or fake) with a fixed context."""

    graph: Any  # anything with `await ainvoke(state, context=...)`
    context: Any
    setting: Literal["distractor", "open"] = "distractor"
    judge: JudgeChoice = "llm"
    config: dict[str, Any] | None = None  # LangGraph run config (recursion_limit for big budgets)

    def input_state(self, example: EvalExample) -> dict[str, Any]:
        return input_state(example, self.setting)

    async def __call__(self, example: EvalExample) -> QuestionResult:
        from mia.graph.result import RunResult

        start = time.perf_counter()
        try:
            extra = {"config": self.config} if self.config else {}
            result = RunResult.from_output(
                await self.graph.ainvoke(self.input_state(example), context=self.context, **extra)
            )
        except Exception as err:  # one bad question must not end a 1,000-question run
            if is_config_error(err):  # ...but a missing key or model fails every question: stop now
                raise
            return error_result(example, err, time.perf_counter() - start, self.judge)
        return question_result(example, result, time.perf_counter() - start, self.judge)
