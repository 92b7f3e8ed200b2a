"""The judge's one entry point: `judge` (sync) and `ajudge` (async) return a Verdict.

Modes: `ground_truth` grades against gold answers (by default the answer matcher, matching.py, and the
grader model only for the answers it is uncertain about: JudgeConfig.method; metrics fallback);
`reviewers` judges without them (three reviewers and an arbiter); `auto` picks ground truth when
gold answers are given, else reviewers; `off` judges nothing. Without a model, ground truth is
graded by the metrics alone. The function never raises for a misbehaving model: every failure is
a recorded fallback. It raises ValueError only for bad arguments (an empty question, an unknown
mode, ground_truth without gold answers, reviewers without a model).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Literal, TypedDict

from langchain_core.language_models.chat_models import BaseChatModel

from mia.graph.protocol import clean_value

from .calls import Steps, at_temperature_zero, has_native_async, run_async, run_sync
from .config import JudgeConfig
from .grader import GradeResult, grade_steps, metrics_label
from .matching import Match, match_answer
from .metrics import shares_nothing
from .metrics import cover_match, exact_match, extract_answer, f1_score, same_words
from .outcome import Outcome
from .reviewers import ReviewResult, review_steps
from .verdict import GraderLabel, ResolvedMode, Usage, Verdict

JudgeMode = Literal["auto", "ground_truth", "reviewers", "off"]
MODES: tuple[str, ...] = ("auto", "ground_truth", "reviewers", "off")
_LABEL_OUTCOME: dict[GraderLabel, Outcome] = {
    "CORRECT": "correct",
    "INCORRECT": "incorrect",
    # The paper's memory stores not-attempted answers as incorrect (reference 2.1): the agent failed.
    "NOT_ATTEMPTED": "incorrect",
}
_REVIEW_LABEL: dict[Outcome, GraderLabel] = {"correct": "CORRECT", "incorrect": "INCORRECT"}


def clean_golds(gold_answers: str | Iterable[str] | None) -> list[str]:
    """Gold aliases as a list of non-blank stripped strings (one string is one alias)."""
    if gold_answers is None:
        return []
    items = [gold_answers] if isinstance(gold_answers, str) else list(gold_answers)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"gold answers must be strings, got {type(item).__name__}")
    return [item.strip() for item in items if item.strip()]


def prediction_of(answer: str | None) -> str:
    """The answer to judge: the `<answer>` content when the text still carries tags, else as is."""
    if answer is None:
        return ""
    if not isinstance(answer, str):
        raise TypeError(f"answer must be a string, got {type(answer).__name__}")
    lowered = answer.lower()
    if "<answer>" in lowered or "</think>" in lowered or "<tool_" in lowered:
        return extract_answer(answer)
    return " ".join(answer.split())


def resolve_mode(mode: str, has_model: bool, golds: list[str]) -> ResolvedMode:
    """The mode to run, or a ValueError that says what is missing."""
    if mode not in MODES:
        raise ValueError(f"unknown judge mode {mode!r}; choose one of {', '.join(MODES)}")
    if mode == "off":
        return "off"
    if mode == "ground_truth":
        if not golds:
            raise ValueError("judge mode 'ground_truth' needs at least one non-empty gold answer")
        return "ground_truth"
    if mode == "reviewers":
        if not has_model:
            raise ValueError("judge mode 'reviewers' needs a judge model (no metrics exist without gold answers)")
        return "reviewers"
    if golds:
        return "ground_truth"
    return "reviewers" if has_model else "off"


class _Metrics(TypedDict):
    """The Verdict's metric fields (all None without gold answers)."""

    em: float | None
    f1: float | None
    cover: bool | None


def _metric_fields(prediction: str, golds: list[str]) -> _Metrics:
    if not golds:
        return {"em": None, "f1": None, "cover": None}
    return {
        "em": exact_match(prediction, golds),
        "f1": f1_score(prediction, golds),
        "cover": cover_match(prediction, golds),
    }


class _Plan:
    """One judgement prepared: arguments checked, mode resolved, the model-free parts done."""

    def __init__(
        self,
        model: BaseChatModel | None,
        question: str,
        answer: str | None,
        trace_text: str | None,
        gold_answers: str | Iterable[str] | None,
        mode: str,
        config: JudgeConfig | None,
        trace_failure: str | None = None,
    ) -> None:
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the judge needs a non-empty question")
        self.config = config or JudgeConfig()
        # the judge's inputs enter here: sanitised once (a lone surrogate cannot break the verdict's JSON)
        question, answer, trace_text, gold_answers = clean_value((question, answer, trace_text, gold_answers))
        self.question = question.strip()
        self.prediction = prediction_of(answer)
        self.trace = trace_text
        self.golds = clean_golds(gold_answers)
        self.mode = resolve_mode(mode, model is not None, self.golds)
        self.model = at_temperature_zero(model) if model is not None and self.config.force_temperature_zero else model
        self.metrics = _metric_fields(self.prediction, self.golds)
        self.usage = Usage()
        self.match: Match | None = None
        self.trace_failure = (trace_failure or "").strip() or None

    def immediate(self) -> Verdict | None:
        """The verdict when no model call is needed (off, metrics only, empty answer)."""
        base = dict(prediction=self.prediction, usage=self.usage, **self.metrics)
        if self.mode == "off":
            why = "judging is off" if self.golds or self.model is not None else "no gold answers and no judge model"
            return Verdict(outcome="unknown", score=0.0, mode="off", method="off", feedback=why, notes=[why], **base)
        if self.mode == "ground_truth" and (self.model is None or not self.prediction):
            label = metrics_label(self.prediction, self.golds)
            note = (
                "empty answer: not attempted, no model call"
                if not self.prediction
                else "no judge model: graded by metrics"
            )
            return self._ground_truth(GradeResult(label=label, method="metrics", notes=[note]))
        if self.mode == "ground_truth" and self.config.method == "match+llm":
            self.match = match_answer(self.question, self.prediction, self.golds)
            if self.match.decision != "uncertain":
                return self._matched(self.match)
        if self.mode == "reviewers" and not self.prediction:
            note = "empty answer: incorrect, no model call"
            return Verdict(
                outcome="incorrect",
                score=0.0,
                mode="reviewers",
                method="metrics",
                grader_label="NOT_ATTEMPTED",
                feedback="The agent gave no answer.",
                notes=[note],
                **base,
            )
        if self.mode == "reviewers" and self.trace_failure and self.config.trace_checks:
            why = f"the trace shows a failure: {self.trace_failure}"
            return Verdict(
                outcome="incorrect",
                score=0.0,
                mode="reviewers",
                method="trace",
                feedback=why,
                notes=["a failure the trace shows: incorrect, no reviewer call"],
                **base,
            )
        return None

    @property
    def chat_model(self) -> BaseChatModel:
        """The judge model for the model calls: `immediate` settles every plan without one."""
        if self.model is None:
            raise RuntimeError("this judgement needs a model call but has no judge model")
        return self.model

    def steps(self) -> Steps[GradeResult | ReviewResult]:
        if self.mode == "ground_truth":
            return grade_steps(self.question, self.prediction, self.golds, self.config)
        return review_steps(self.question, self.prediction, self.trace, self.config)

    def finish(self, result: GradeResult | ReviewResult) -> Verdict:
        if isinstance(result, GradeResult):
            if self.match is not None:
                result.notes.insert(0, f"answer matcher {self.match.label()}: asked the grader model")
            return self._ground_truth(result)
        return self._reviewed(result)

    def _matched(self, match: Match) -> Verdict:
        """The matcher's verdict: its rules were sure, so no model call (LABELLING.md's rule named)."""
        label = match.grader_label or "INCORRECT"
        return Verdict(
            outcome=_LABEL_OUTCOME[label],
            score=1.0 if label == "CORRECT" else 0.0,
            mode="ground_truth",
            method="match",
            prediction=self.prediction,
            grader_label=label,
            feedback=f"Graded {label} by the answer matcher: {match.reason} (labelling rule {match.rule}).",
            notes=[f"answer matcher: {match.label()}"],
            usage=self.usage,
            **self.metrics,
        )

    def _contradicted(self, result: GradeResult) -> GradeResult | Outcome | None:
        """A grade the metrics flatly contradict, resolved by `config.contradiction`: a metrics
        GradeResult, the outcome "unknown", or None (trust the grader). Flatly: CORRECT for an
        answer that shares no token with any gold answer, or another label for an exact match (or
        the gold's words in another order, `same_words`)
        (the Qwen grader said INCORRECT to "Hitler's Folly" for the gold "Hitler's Folly":
        results/2wiki-qwen-defaults/none)."""
        em, f1, cover = self.metrics["em"], self.metrics["f1"], self.metrics["cover"]
        if result.method != "llm" or em is None or cover is None:  # None: no gold answers
            return None
        if result.label == "CORRECT" and shares_nothing(em, f1, cover):
            why = "the grader said CORRECT but the answer shares no token with any gold answer (F1 0)"
        elif result.label != "CORRECT" and same_words(em, f1):
            why = f"the grader said {result.label} but the answer is an exact match of a gold answer" + (
                "" if em >= 1.0 else " in another word order (F1 1.0)"
            )
        else:
            return None
        policy = self.config.contradiction
        note = f"{why}; contradiction policy {policy!r}: "
        if policy == "llm":
            result.notes.append(note + "the grader's label was kept")
            return None
        if policy == "unknown":
            result.notes.append(note + "outcome recorded as unknown")
            return "unknown"
        label = metrics_label(self.prediction, self.golds)
        return GradeResult(
            label=label,
            method="fallback",
            raw=result.raw,
            notes=[*result.notes, note + f"graded {label} by the metrics"],
        )

    def _ground_truth(self, result: GradeResult) -> Verdict:
        resolved = self._contradicted(result)
        if resolved == "unknown":
            return Verdict(
                outcome="unknown",
                score=0.0,
                mode="ground_truth",
                method="fallback",
                prediction=self.prediction,
                grader_label=result.label,
                raw_reply=result.raw,
                notes=result.notes,
                usage=self.usage,
                feedback="The judge model's grade contradicts the metrics (CORRECT with no word of the gold "
                "answer(s), or not CORRECT for an exact match): outcome unknown.",
                **self.metrics,
            )
        if isinstance(resolved, GradeResult):
            result = resolved
        outcome = _LABEL_OUTCOME[result.label]
        if result.method == "llm":
            score = 1.0 if outcome == "correct" else 0.0
            feedback = f"The judge model graded the answer {result.label} against the gold answer(s)."
        else:
            score = 1.0 if outcome == "correct" else float(self.metrics["f1"] or 0.0)
            feedback = (
                f"Graded {result.label} by matching the gold answer(s) "
                f"(exact match {self.metrics['em']:.0f}, token F1 {self.metrics['f1']:.2f}, "
                f"contained {'yes' if self.metrics['cover'] else 'no'})."
            )
        return Verdict(
            outcome=outcome,
            score=score,
            mode="ground_truth",
            method=result.method,
            prediction=self.prediction,
            grader_label=result.label,
            feedback=feedback,
            raw_reply=result.raw,
            notes=result.notes,
            usage=self.usage,
            **self.metrics,
        )

    def _reviewed(self, result: ReviewResult) -> Verdict:
        lines = [review.line() for review in result.reviews]
        feedback = "\n".join([*lines, f"Verdict: {result.decision}."])
        label = _REVIEW_LABEL.get(result.outcome)
        return Verdict(
            outcome=result.outcome,
            score=min(1.0, max(0.0, result.score)),
            mode="reviewers",
            method=result.method,
            prediction=self.prediction,
            grader_label=label,
            feedback=feedback,
            reviews=result.reviews,
            raw_reply=result.raw,
            notes=result.notes,
            usage=self.usage,
            **self.metrics,
        )


def judge(
    model: BaseChatModel | None,
    question: str,
    answer: str,
    trace_text: str | None = None,
    gold_answers: str | Iterable[str] | None = None,
    mode: JudgeMode = "auto",
    *,
    config: JudgeConfig | None = None,
    trace_failure: str | None = None,
) -> Verdict:
    """Judge one answer (blocking). See the module docstring for the modes.

    `answer` may be the agent's raw final message: `<answer>` tags are extracted. `trace_text` is
    what the reviewers read (e.g. `Trajectory.to_trace_text()`); gold answers are only ever shown
    to the ground-truth grader. `model` is any LangChain chat model (the judge role's).
    `trace_failure` is a failure the caller found in the trace (the graph passes
    mia.graph.nodes.failure's): without gold it makes the answer incorrect with no reviewer call
    (JudgeConfig.trace_checks).
    """
    plan = _Plan(model, question, answer, trace_text, gold_answers, mode, config, trace_failure)
    verdict = plan.immediate()
    if verdict is not None:
        return verdict
    return plan.finish(run_sync(plan.chat_model, plan.steps(), plan.usage))


async def ajudge(
    model: BaseChatModel | None,
    question: str,
    answer: str,
    trace_text: str | None = None,
    gold_answers: str | Iterable[str] | None = None,
    mode: JudgeMode = "auto",
    *,
    config: JudgeConfig | None = None,
    trace_failure: str | None = None,
) -> Verdict:
    """Async `judge`: never blocks the event loop.

    Models with their own async generation are called natively (the three reviewers then run
    concurrently); others run the sync path in a worker thread.
    """
    plan = _Plan(model, question, answer, trace_text, gold_answers, mode, config, trace_failure)
    verdict = plan.immediate()
    if verdict is not None:
        return verdict
    if has_native_async(plan.model):
        return plan.finish(await run_async(plan.chat_model, plan.steps(), plan.usage))
    return await asyncio.to_thread(lambda: plan.finish(run_sync(plan.chat_model, plan.steps(), plan.usage)))


__all__ = ["JudgeMode", "MODES", "judge", "ajudge", "resolve_mode", "clean_golds", "prediction_of"]
