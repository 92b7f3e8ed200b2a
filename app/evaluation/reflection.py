"""Does the planner's reflection tell a wrong first answer from a right one?

MIA's reflect-replan costs a planner call on every question (and a replan plus more executor turns
on a "yes"). It pays only if the planner replans the wrong first answers and accepts the right
ones. The judge grades only the final answer, so the first answer is scored by cover match (a gold
answer appears in it as whole tokens), the same signal the summary uses for judge sanity.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from mia.app.evaluation.records import QuestionResult
from mia.memory.trajectory import TrajectoryStep


class ReflectionSummary(BaseModel):
    """Reflection decisions against the first answer's correctness (cover match), and what
    replanning did to it."""

    reflected: int  # questions on which the planner reflected
    first_wrong: int
    replanned_wrong: int  # replans of a wrong first answer: the reflection doing its job
    first_right: int
    replanned_right: int  # replans of a right first answer: wasted at best
    fixed: int  # replanned, wrong first answer, right final one
    broken: int  # replanned, right first answer, wrong final one
    dropped: int = 0  # replans not followed: they only repeated the plan (the answer stood)


def first_answer(steps: Iterable[dict[str, Any]]) -> str | None:
    """The executor's answer before any replan (None when it never answered): what reflection
    judged, so the replan's effect is the change from this to the final answer."""
    return next((s["content"] for s in steps if s.get("kind") == "answer"), None)


def _first_answer_and_decision(steps: list[dict[str, Any]]) -> tuple[str | None, str | None, bool]:
    """(first answer, reflection decision, whether the replan was dropped)."""
    answer, decision = first_answer(steps), None
    for step in map(TrajectoryStep.model_validate, steps):
        if step.kind == "reflection" and decision is None:
            decision = step.content.strip().lower()
        elif step.kind == "replan" and decision is not None:
            return answer, decision, step.dropped
    return answer, decision, False


def summarise_reflection(results: list[QuestionResult]) -> ReflectionSummary | None:
    """None when no question was reflected on (memory modes without a planner)."""
    from mia.graph.judge import cover_match

    counts = dict(
        reflected=0, first_wrong=0, replanned_wrong=0, first_right=0, replanned_right=0, fixed=0, broken=0, dropped=0
    )
    for r in results:
        first, decision, dropped = _first_answer_and_decision(r.trajectory)
        if decision is None or first is None:
            continue
        counts["reflected"] += 1
        right = bool(first) and cover_match(first, r.gold_answers)
        replanned = decision == "yes"
        final_right = bool(r.answer) and cover_match(r.answer, r.gold_answers)
        counts["first_right" if right else "first_wrong"] += 1
        if replanned:
            counts["replanned_right" if right else "replanned_wrong"] += 1
            counts["dropped"] += dropped
            if right and not final_right:
                counts["broken"] += 1
            elif final_right and not right:
                counts["fixed"] += 1
    return ReflectionSummary(**counts) if counts["reflected"] else None


def reflection_lines(labelled: list[tuple[str, ReflectionSummary | None]]) -> str:
    """A short section: one line per run that reflected."""
    lines = [
        f"- {label}: replanned {s.replanned_wrong} of {s.first_wrong} wrong first answers and "
        f"{s.replanned_right} of {s.first_right} right ones; replanning fixed {s.fixed} and broke {s.broken}"
        + (f"; {s.dropped} replans only repeated the plan and were not followed" if s.dropped else "")
        for label, s in labelled
        if s is not None
    ]
    if not lines:
        return ""
    return (
        "Reflection (the first answer scored by cover match; a useful reflection replans the wrong ones "
        "and accepts the right ones):\n\n" + "\n".join(lines) + "\n"
    )
