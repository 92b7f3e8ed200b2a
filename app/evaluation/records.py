"""Typed records of an evaluation: the question we ask and the one log line we keep per question.

Why typed: the JSONL log is the checkpoint and the only input of the summary, so its shape must be
stable and validated when read back (a resumed or merged run never trusts a half-written line).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from mia.graph.models.defaults import ROLES as ROLES  # re-exported: the one role list
from mia.memory.text import cleaned_data


class Paragraph(BaseModel):
    """One searchable passage of a question's own context (the distractor "sandbox")."""

    title: str
    text: str


class EvalExample(BaseModel):
    """One question in the normalised format committed under app/evaluation/datasets/."""

    id: str
    question: str
    answer: str
    answer_aliases: list[str] = Field(default_factory=list)
    type: str | None = None
    paragraphs: list[Paragraph] = Field(default_factory=list)
    supporting_titles: list[str] = Field(default_factory=list)
    image: str | None = None  # a path (relative to the dataset file), an http(s) or data URL
    caption: str | None = None  # a caption given with the dataset (then no captioner is needed)

    @property
    def gold_answers(self) -> list[str]:
        """The answer first, then its aliases, without duplicates."""
        seen: list[str] = []
        for ans in [self.answer, *self.answer_aliases]:
            if ans and ans not in seen:
                seen.append(ans)
        return seen


class RoleUsage(BaseModel):
    """Calls and tokens of one role for one question (the graph's `usage[role]`)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens the backend's prompt cache served (0 in runs before it was recorded)
    ms: int = 0  # wall milliseconds inside this role's model calls (0 in runs before it was recorded)


class QuestionResult(BaseModel):
    """One line of results.jsonl: everything the summary needs, plus what a human reads to debug."""

    id: str
    question: str
    gold_answers: list[str]
    type: str | None = None
    answer: str = ""
    plan: str | None = None
    trajectory: list[dict[str, Any]] = Field(default_factory=list)
    # scores
    em: float = 0.0
    f1: float = 0.0
    judge_correct: bool | None = None  # None when the run did not use the LLM judge
    judge_grade: str | None = None  # the grader's raw letter / label, for auditing
    # cost
    tool_calls: int = 0
    usage: dict[str, RoleUsage] = Field(default_factory=dict)
    wall_s: float = 0.0
    # memory
    memories_used: list[str] = Field(default_factory=list)
    memories: list[dict[str, Any]] = Field(
        default_factory=list
    )  # {id, outcome, question, score, similarity} of each used memory
    memory_id: str | None = None  # the memory this episode was stored as
    stop_reason: str | None = None  # why the executor stopped (answered, budget, context, ...)
    warnings: list[str] = Field(default_factory=list)  # what the graph survived (a failed judge or memorise)
    error: str | None = None  # set when the graph raised; the question scores 0
    # when the answer was logged (epoch s; None in runs before it was kept), and, with test-time
    # learning, the planner adapter version that served it: the learning report's lag and windows
    finished_at: float | None = None
    served_version: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _clean(cls, data: Any) -> Any:
        """A lone surrogate or NUL (a dataset's question, a model's answer) cleaned as the result is
        made: it cannot be encoded, append_result would raise, and the question's line be lost."""
        return cleaned_data(data)

    @property
    def llm_calls(self) -> int:
        return sum(u.calls for u in self.usage.values())

    @property
    def prompt_tokens(self) -> int:
        return sum(u.input_tokens for u in self.usage.values())

    @property
    def completion_tokens(self) -> int:
        return sum(u.output_tokens for u in self.usage.values())

    def role(self, name: str) -> RoleUsage:
        return self.usage.get(name, RoleUsage())
