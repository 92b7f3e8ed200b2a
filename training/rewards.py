"""Reward functions of the two GRPO stages, as plain functions of an episode's outcome.

They follow the paper's code (mia-reference §5.1, §5.2, §9 items 12-13):

- planner: R = 0.7 * acc_final + 0.2 * acc_first + 0.05 * format + 0.05 * decision
- executor: R = 0.7 * acc + 0.2 * tool + 0.1 * format, where acc is 1 + bonus (paper: 1.2) for a
  correct first attempt and 0 for an answer longer than 100 characters; tool is averaged over the
  plan/replan segments.

Kept free of torch/TRL so they are cheap to test and reuse (test-time learning scores rollouts
with the same functions).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from mia.graph.judge.metrics import cover_match, exact_match, f1_score, normalize_answer
from mia.graph.protocol import ToolCall, after_last_think, count_tags, last_answer, parse_calls


AccuracyMetric = Literal["em", "f1", "contains", "judge"]  # judge: see mia.training.episodes.Accuracy
#: An accuracy (F1, EM, the judge's 0/1) at or above this is a right answer: the planner's decision
#: term, the frozen planner's replan in the executor stage, and a rollout's outcome as a memory.
CORRECT_AT = 0.5


@dataclass(frozen=True)
class PlannerRewardWeights:
    """Weights of the planner reward (the paper's 0.7 / 0.2 / 0.05 / 0.05)."""

    final: float = 0.7
    first: float = 0.2
    format: float = 0.05
    decision: float = 0.05


@dataclass(frozen=True)
class ExecutorRewardWeights:
    """Weights of the executor reward (the paper's 0.7 / 0.2 / 0.1, first-try bonus 0.2)."""

    accuracy: float = 0.7
    tool: float = 0.2
    format: float = 0.1
    first_attempt_bonus: float = 0.2
    max_answer_chars: int = 100


# --------------------------------------------------------------------------- answer matching


def contains_match(prediction: str, golds: Sequence[str]) -> float:
    """The paper's judge fallback: a gold answer appears (token-wise) inside the prediction."""
    return float(cover_match(prediction, golds))


_METRICS: dict[str, Callable[[str, Sequence[str]], float]] = {
    "em": exact_match,
    "f1": f1_score,
    "contains": contains_match,
}


def answer_accuracy(
    prediction: str | None, golds: Sequence[str], metric: AccuracyMetric = "em", max_chars: int | None = 100
) -> float:
    """Accuracy in [0, 1] of one answer. Answers over `max_chars` characters score 0, as in the
    paper's length guard (it stops a policy from listing every candidate)."""
    if not prediction or not prediction.strip():
        return 0.0
    if max_chars is not None and len(normalize_answer(prediction)) > max_chars:
        return 0.0
    if metric == "judge":
        raise ValueError("the 'judge' metric needs a model: use mia.training.episodes.Accuracy")
    try:
        fn = _METRICS[metric]
    except KeyError:
        raise ValueError(f"unknown accuracy metric {metric!r}; expected one of {sorted(_METRICS)}") from None
    golds = [g for g in golds if isinstance(g, str) and g.strip()]
    if not golds:
        raise ValueError("answer_accuracy needs at least one non-empty gold answer")
    return fn(prediction, golds)


# --------------------------------------------------------------------------- format checks


def think_balanced(text: str) -> bool:
    """Every <think> is closed (the paper's format check on plans, decisions and replans)."""
    return count_tags(text, "think", False) == count_tags(text, "think", True)


_NUMBERED_STEP = re.compile(r"^\s*(?:step\s*)?\d+\s*[.):]", re.I | re.M)


def plan_format_ok(
    plan: str,
    decision: str | None = None,
    replan: str | None = None,
    max_chars: int = 4000,
    max_words: int | None = None,
    numbered: bool = False,
) -> bool:
    """A plan is well formed when it is non-empty, not runaway (within `max_words`, the limit its
    prompt states), with balanced think tags, and (`numbered`) written as the numbered steps the
    planner prompt asks for; a reflection decision must be a bare yes/no after think; a replan
    must be balanced too."""
    if not plan or not after_last_think(plan) or len(plan) > max_chars or not think_balanced(plan):
        return False
    if max_words is not None and len(after_last_think(plan).split()) > max_words:
        return False
    if numbered and not _NUMBERED_STEP.search(after_last_think(plan)):
        return False
    if decision is not None:
        if not think_balanced(decision) or after_last_think(decision).lower().strip(" .!") not in ("yes", "no"):
            return False
    if replan is not None and (not think_balanced(replan) or not after_last_think(replan)):
        return False
    return True


def decision_correct(first_correct: bool, replanned: bool) -> bool:
    """The reflection decision was right: replan after a wrong first answer, keep a right one."""
    return replanned != first_correct


def parse_tool_calls(text: str) -> list[ToolCall]:
    """All tool-call blocks of an assistant turn, malformed ones included (the protocol's strict reading)."""
    return parse_calls(text, strict=True)


def tool_call_ok(call: ToolCall, allowed: Sequence[str] = ("search",)) -> bool:
    """The paper's strict validator: a known tool and, for search, exactly {"query_list": [str, ...]}."""
    if call.error or call.name not in allowed or call.arguments is None:
        return False
    if call.name == "search":
        queries = call.arguments.get("query_list")
        return (
            set(call.arguments) == {"query_list"}
            and isinstance(queries, list)
            and bool(queries)
            and all(isinstance(q, str) and q.strip() for q in queries)
        )
    return True


def executor_format_ok(turns: Sequence[str], allowed_tools: Sequence[str] = ("search",)) -> bool:
    """The executor's assistant turns are well formed: balanced think tags, every tool call valid,
    and exactly one final <answer> block with balanced tags in the last turn."""
    if not turns:
        return False
    for turn in turns:
        if not think_balanced(turn) or count_tags(turn, "answer", False) != count_tags(turn, "answer", True):
            return False
        if count_tags(turn, "tool_call", False) != count_tags(turn, "tool_call", True):
            return False
        if not all(tool_call_ok(c, allowed_tools) for c in parse_tool_calls(turn)):
            return False
    return last_answer(turns[-1]) is not None


def tool_use_score(segments: Sequence[Sequence[str]], tools: Sequence[str] = ("search",)) -> float:
    """Share of plan/replan segments in which the executor called a tool at all (paper §5.1)."""
    if not segments:
        return 0.0
    used = [any(c.name in tools for turn in seg for c in parse_tool_calls(turn)) for seg in segments]
    return sum(used) / len(used)


# --------------------------------------------------------------------------- rewards


def planner_reward(
    acc_final: float,
    acc_first: float,
    format_ok: bool,
    decision_ok: bool,
    weights: PlannerRewardWeights = PlannerRewardWeights(),
) -> float:
    """R = w_final * acc_final + w_first * acc_first + w_format * format + w_decision * decision."""
    return (
        weights.final * acc_final
        + weights.first * acc_first
        + weights.format * float(format_ok)
        + weights.decision * float(decision_ok)
    )


class PlanOutcome(Protocol):
    """What a plan led to, as the planner reward reads it (training.episodes.EpisodeOutcome)."""

    acc_first: float
    acc_final: float
    replanned: bool
    decision: str | None
    replan: str | None


def plan_reward(
    plan_text: str,
    outcome: PlanOutcome,
    weights: PlannerRewardWeights = PlannerRewardWeights(),
    max_words: int | None = None,
    numbered: bool = True,
) -> float:
    """The planner reward of one plan given what it led to (the offline stage and test-time
    learning score plans with this one function)."""
    format_ok = plan_format_ok(
        plan_text, decision=outcome.decision, replan=outcome.replan, max_words=max_words, numbered=numbered
    )
    decision_ok = decision_correct(outcome.acc_first >= CORRECT_AT, outcome.replanned)
    return planner_reward(outcome.acc_final, outcome.acc_first, format_ok, decision_ok, weights)


def executor_reward(
    accuracy: float,
    first_attempt: bool,
    tool_score: float,
    format_ok: bool,
    weights: ExecutorRewardWeights = ExecutorRewardWeights(),
) -> float:
    """R = w_acc * acc + w_tool * tool + w_format * format; a correct first attempt earns the
    paper's bonus (acc 1.2), so a policy that needs no replan is preferred."""
    acc = accuracy * (1.0 + weights.first_attempt_bonus) if first_attempt and accuracy > 0 else accuracy
    return weights.accuracy * acc + weights.tool * tool_score + weights.format * float(format_ok)
