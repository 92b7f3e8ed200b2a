"""Carry out one plan with a frozen executor and report what happened (the planner's reward input).

Two backends with one result type:
- `GraphEpisodeRunner`: the real graph, with the plan preset (the planner node is skipped), the
  frozen executor and the graph's own reflection/replan; this is what inference does.
- `LocalEpisodeRunner`: training's token-level ReAct loop over the same sandbox search and
  prompts, without reflection; much cheaper, for tight CPU budgets and tests.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mia.graph.result import RunResult, run_question
from mia.training.react import ReactBudget, ReactRunner, SandboxSearch
from mia.training.rewards import AccuracyMetric, answer_accuracy

log = logging.getLogger(__name__)


@dataclass
class EpisodeOutcome:
    """What a plan led to: first and final answers, their accuracy, whether a replan happened."""

    answer: str | None
    first_answer: str | None
    acc_first: float
    acc_final: float
    replanned: bool = False
    decision: str | None = None  # the reflection's raw yes/no text, when the graph reflected
    replan: str | None = None
    tool_calls: int = 0
    trace: str = ""
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    turns: list[str] = field(default_factory=list)  # the executor's turns (training's ReAct loop)
    observations: list[str] = field(default_factory=list)
    trajectory: Any = None  # the graph's memory Trajectory of the episode (GraphEpisodeRunner)


class Accuracy:
    """Accuracy of one answer: EM / F1 / contains (no model), or the LLM judge's ground-truth
    grader (`metric: judge`, the paper's choice), which then needs `judge_model`."""

    def __init__(self, metric: AccuracyMetric = "f1", judge_model: str | None = None, max_chars: int = 100) -> None:
        if metric == "judge" and not judge_model:
            raise ValueError("reward.accuracy 'judge' needs a judge model (reward.judge_model)")
        self.metric, self.judge_model, self.max_chars = metric, judge_model, max_chars
        self._model: Any = None

    def __call__(self, question: str, answer: str | None, gold_answers: Sequence[str]) -> float:
        if self.metric != "judge":
            return answer_accuracy(answer, gold_answers, self.metric, self.max_chars)
        if answer_accuracy(answer, gold_answers, "em", self.max_chars) == 1.0:
            return 1.0  # exact: no model call needed
        if not answer or not answer.strip() or len(answer) > 4 * self.max_chars:
            return 0.0
        from mia.graph.judge import judge

        if self._model is None:
            from mia.graph.models import load_chat_model

            if not self.judge_model:  # __init__ checks this; the metric may have been changed since
                raise ValueError("reward.accuracy 'judge' needs a judge model (reward.judge_model)")
            self._model = load_chat_model(self.judge_model, temperature=0.0, max_tokens=64)
        verdict = judge(self._model, question, answer, gold_answers=list(gold_answers), mode="ground_truth")
        return 1.0 if verdict.outcome == "correct" else 0.0


class EpisodeRunner(Protocol):
    """Anything that turns (question, plan, paragraphs, golds) into an EpisodeOutcome."""

    def run(
        self, question: str, plan: str, paragraphs: Sequence[dict[str, str]], gold_answers: Sequence[str]
    ) -> EpisodeOutcome: ...


class LocalEpisodeRunner:
    """The frozen executor as a transformers model in this process, greedy, no reflection."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        budget: ReactBudget,
        metric: AccuracyMetric | Accuracy = "f1",
        search_top_k: int = 2,
        sample: bool = False,
    ) -> None:
        self.react = ReactRunner(model, tokenizer, SandboxSearch(top_k=search_top_k), budget)
        self.accuracy = metric if isinstance(metric, Accuracy) else Accuracy(metric)
        self.sample = sample

    def run(
        self, question: str, plan: str, paragraphs: Sequence[dict[str, str]], gold_answers: Sequence[str]
    ) -> EpisodeOutcome:
        from mia.training.prompts import executor_messages

        ep = self.react.run(executor_messages(question, plan), paragraphs, sample=self.sample)
        acc = self.accuracy(question, ep.answer, gold_answers)
        return EpisodeOutcome(
            answer=ep.answer,
            first_answer=ep.answer,
            acc_first=acc,
            acc_final=acc,
            tool_calls=ep.tool_calls,
            trace=ep.trace(),
            turns=list(ep.turns),
            observations=list(ep.observations),
        )


class GraphEpisodeRunner:
    """The real graph with a preset plan: frozen executor, and the reflection and replan of the
    planner. `planner` (the live policy as a chat model, see training.policy_chat) answers for the
    spec POLICY_SPEC, so a plan's reflection and replan come from the planner being trained, not
    from the executor. `deps_parts` are further Deps factories (tests inject fakes)."""

    def __init__(
        self,
        context_overrides: dict[str, Any],
        metric: AccuracyMetric | Accuracy = "f1",
        planner: Any = None,
        **deps_parts: Any,
    ) -> None:
        from mia import Context, build_graph
        from mia.graph.builder import recursion_limit
        from mia.graph.nodes.deps import Deps
        from mia.training.policy_chat import POLICY_SPEC

        overrides = {
            "memory_mode": "mia",
            "memorise": False,
            "judge_mode": "ground_truth",
            "plan_when": "start",  # the planner's plan (or a preset one) is what is trained
            **context_overrides,
        }
        self.context = Context(**overrides)
        make_model = deps_parts.pop("model_factory", None) or _load_model

        def model_factory(spec: str, temperature: float, max_tokens: int) -> Any:
            if spec == POLICY_SPEC:
                if planner is None:
                    raise ValueError(f"planner_model {POLICY_SPEC!r} needs the live policy (planner=...)")
                return planner
            return make_model(spec, temperature, max_tokens)

        self.graph = build_graph(deps=Deps(model_factory=model_factory, **deps_parts))
        self.accuracy = metric if isinstance(metric, Accuracy) else Accuracy(metric)
        self.config = {"recursion_limit": recursion_limit(self.context)}

    def run(
        self, question: str, plan: str, paragraphs: Sequence[dict[str, str]], gold_answers: Sequence[str]
    ) -> EpisodeOutcome:
        state = {
            "question": question,
            "plan": plan,
            "gold_answers": list(gold_answers),
            "paragraphs": [dict(p) for p in paragraphs],
        }
        try:
            result = run_question(self.graph, state, self.context, self.config)
        except Exception as exc:  # a broken episode costs the plan its reward, not the run
            log.warning("graph episode failed: %s", exc)
            return EpisodeOutcome(None, None, 0.0, 0.0, error=f"{type(exc).__name__}: {exc}")
        return outcome_from_result(result, gold_answers, self.accuracy, question)


def _load_model(spec: str, temperature: float, max_tokens: int) -> Any:
    from mia.graph.models import load_chat_model

    return load_chat_model(spec, temperature=temperature, max_tokens=max_tokens)


def outcome_from_result(
    result: RunResult, gold_answers: Sequence[str], metric: AccuracyMetric | Accuracy, question: str = ""
) -> EpisodeOutcome:
    """First and final answers, the reflection and the replan, read off the graph's typed result."""
    accuracy = metric if isinstance(metric, Accuracy) else Accuracy(metric)
    answers, replanned = result.answers(), result.replanned()
    final = result.answer or (answers[-1] if answers else None)
    first = answers[0] if answers and replanned else final
    acc_final = accuracy(question, final, gold_answers)
    acc_first = accuracy(question, first, gold_answers) if replanned else acc_final
    return EpisodeOutcome(
        answer=final,
        first_answer=first,
        acc_first=acc_first,
        acc_final=acc_final,
        replanned=replanned,
        decision=result.reflection(),
        replan=result.replan or result.trajectory.replan or None,
        tool_calls=result.tool_calls,
        trace=result.trajectory.to_trace_text(),
        trajectory=result.trajectory,
    )
