"""Typed results of a judgement: what the graph stores, the harness reports and rewards read."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from .outcome import Outcome

GraderLabel = Literal["CORRECT", "INCORRECT", "NOT_ATTEMPTED"]
# llm: the judge model decided; match: the answer matcher's rules decided (matching.py, no model call);
# fallback: the model failed or replied nonsense and a rule decided; metrics: no model was given (EM/F1/cover
# only); off: judging was switched off.
# weighted: the reviewers' numeric rule; trace: a failure the trace shows, no reviewer call
JudgeMethod = Literal["llm", "match", "weighted", "fallback", "metrics", "off", "trace"]
ResolvedMode = Literal["ground_truth", "reviewers", "off"]
ReviewerName = Literal["reasoning", "sources", "validity"]


class Usage(BaseModel):
    """Token usage of the judge's model calls, summed (same keys as the graph's per-role usage)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    # where the time goes: prompt tokens the backend's prompt cache served (LangChain's
    # input_token_details.cache_read: llama.cpp, OpenAI), and wall milliseconds inside model calls
    cached_tokens: int = 0
    ms: int = 0

    def add(
        self,
        usage_metadata: dict[str, Any] | None,
        *,
        input_estimate: int = 0,
        output_estimate: int = 0,
        ms: float = 0.0,
    ) -> None:
        """Count one call and add the tokens an AIMessage reported (the estimates when it reported none)."""
        self.calls += 1
        meta = usage_metadata or {}
        inp = int(meta.get("input_tokens") or input_estimate)
        out = int(meta.get("output_tokens") or output_estimate)
        self.input_tokens += inp
        self.output_tokens += out
        self.total_tokens += int(meta.get("total_tokens") or inp + out)
        self.cached_tokens += int((meta.get("input_token_details") or {}).get("cache_read") or 0)
        self.ms += round(ms)

    def counts(self) -> dict[str, int]:
        """The graph's per-role usage entry (the `usage` channel sums these keys)."""
        return self.model_dump(exclude={"total_tokens"})


class Review(BaseModel):
    """One reviewer's judgement of an answer without ground truth."""

    name: ReviewerName
    title: str
    weight: float
    score: int | None = Field(None, ge=1, le=10, description="1-10; None when the review is missing")
    reason: str = ""
    missing: bool = False
    repaired: bool = Field(False, description="the reply was not clean JSON and had to be repaired")
    reasked: bool = Field(False, description="the first reply was hopeless and the reviewer was asked again")
    raw: str | None = Field(None, description="the reviewer's last raw reply")
    error: str | None = Field(None, description="why the review is missing, when it is")

    def line(self) -> str:
        """A one-line rendering for feedback text and logs."""
        if self.missing:
            return f"{self.title} (weight {self.weight:g}): missing ({self.error or 'no usable reply'})"
        reason = self.reason or "(no reason given)"
        return f"{self.title} (weight {self.weight:g}): {self.score}/10. {reason}"


class Verdict(BaseModel):
    """The judge's decision on one answer, with everything needed to store, report and reward it.

    `score` is in [0, 1]: 1/0 for a model- or matcher-graded ground-truth verdict; 1 when exact/cover match,
    else token F1, for metrics; the reviewers' weighted mean mapped from 1-10 onto 0-1.
    `em`, `f1`, `cover` are computed whenever gold answers are known (also in reviewers mode,
    where the reviewers never see them) and are None otherwise.
    """

    outcome: Outcome
    score: float = Field(ge=0.0, le=1.0)
    mode: ResolvedMode
    method: JudgeMethod
    prediction: str = Field(description="the answer that was judged, after extraction")
    em: float | None = None
    f1: float | None = None
    cover: bool | None = None
    grader_label: GraderLabel | None = None
    feedback: str = ""
    reviews: list[Review] = Field(default_factory=list)
    raw_reply: str | None = Field(None, description="the grader's or arbiter's last raw reply")
    notes: list[str] = Field(default_factory=list, description="fallbacks, repairs and re-asks, in order")
    usage: Usage = Field(default_factory=Usage)

    @property
    def is_correct(self) -> bool:
        return self.outcome == "correct"

    @property
    def why(self) -> str:
        """The one line that says how the outcome was reached (the reviewers' weighted decision with
        its scores, the matcher's rule, the failure the trace shows): the feedback's last line."""
        lines = [line.strip() for line in self.feedback.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    @property
    def reviewer_feedback(self) -> dict[str, str]:
        """Reviewer name -> feedback line (the memory record's evaluator feedback fields)."""
        return {review.name: review.line() for review in self.reviews}


def verdict_to_channel(verdict: Verdict | dict[str, Any]) -> dict[str, Any]:
    """A verdict as the graph's `judgement` channel holds it (plain JSON, so checkpoints stay
    plain); validated first, so a malformed verdict fails in the judge node, not in a consumer."""
    return Verdict.model_validate(verdict).model_dump(mode="json")


def verdict_from_channel(value: Verdict | dict[str, Any] | None) -> Verdict | None:
    """The `judgement` channel (or a judge node's update) read back as a `Verdict`."""
    return Verdict.model_validate(value) if value else None


__all__ = [
    "GraderLabel",
    "JudgeMethod",
    "ResolvedMode",
    "ReviewerName",
    "Usage",
    "Review",
    "Verdict",
    "verdict_to_channel",
    "verdict_from_channel",
]
