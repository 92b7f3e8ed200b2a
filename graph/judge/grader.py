"""The ground-truth grader: a grading prompt run by the judge model (SimpleQA's, or the labelling
rules' for the answers the matcher is uncertain about: JudgeConfig.prompt_name).

Writes no Verdict itself; it yields the prompts to send (see calls.py) and returns the label with
how it was obtained. When the model fails or twice replies something that is not a grade, the label
comes from the metrics instead, as the paper does (substring match), and the fallback is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.messages import HumanMessage

from .calls import Conversation, Steps, continue_with
from .config import JudgeConfig
from .metrics import cover_match, exact_match, f1_score, is_refusal, same_words
from .parsing import parse_grade
from .prompts import load_prompts, render
from .verdict import GraderLabel, JudgeMethod


@dataclass
class GradeResult:
    """The grader's label and how it was obtained."""

    label: GraderLabel
    method: JudgeMethod
    raw: str | None = None
    notes: list[str] = field(default_factory=list)


def metrics_label(prediction: str, golds: list[str]) -> GraderLabel:
    """A grade without a model: exact or cover match, or a gold's words in another order, is
    CORRECT; a refusal NOT_ATTEMPTED."""
    if cover_match(prediction, golds) or same_words(exact_match(prediction, golds), f1_score(prediction, golds)):
        return "CORRECT"
    return "NOT_ATTEMPTED" if is_refusal(prediction) else "INCORRECT"


def grader_conversation(question: str, prediction: str, golds: list[str], config: JudgeConfig) -> Conversation:
    """The grading prompt for one answer (gold aliases shown together as equivalent targets)."""
    prompts = load_prompts()[config.prompt_name()]
    target = prompts["alias_separator"].join(golds)
    text = render(
        prompts["template"], question=question, target=target, prediction=prediction[: config.max_answer_chars]
    )
    return [HumanMessage(content=text)]


def grade_steps(question: str, prediction: str, golds: list[str], config: JudgeConfig) -> Steps[GradeResult]:
    """Ask the grader; re-ask once after an unreadable reply; fall back to the metrics."""
    notes: list[str] = []
    conversation = grader_conversation(question, prediction, golds, config)
    (reply,) = yield [conversation]
    attempts = 1
    while True:
        if reply.error is not None:
            notes.append(f"grader call failed ({reply.error}); graded by exact/cover match instead")
            break
        label = parse_grade(reply.text or "")
        if label is not None:
            if attempts > 1:
                notes.append("grader reply was malformed; re-asked once and the second reply was read")
            return GradeResult(label=label, method="llm", raw=reply.text, notes=notes)
        if attempts > 1 or not config.reask:
            notes.append(
                f"grader reply could not be read as a grade ({_short(reply.text)}); graded by exact/cover match instead"
            )
            break
        notes.append(f"grader reply could not be read as a grade ({_short(reply.text)}); re-asked")
        follow_up = HumanMessage(content=load_prompts()[config.prompt_name()]["reask"])
        conversation = continue_with(conversation, reply, follow_up)
        (reply,) = yield [conversation]
        attempts += 1
    return GradeResult(label=metrics_label(prediction, golds), method="fallback", raw=reply.text, notes=notes)


def _short(text: str | None, limit: int = 80) -> str:
    text = " ".join((text or "").split())
    return repr(text if len(text) <= limit else text[:limit] + "...")


__all__ = ["GradeResult", "metrics_label", "grader_conversation", "grade_steps"]
