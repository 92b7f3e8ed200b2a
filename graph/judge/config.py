"""Tunable knobs of the judge, with the paper's values as defaults where it has any."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator


# The judge settings a run may choose; Context reuses these types (one definition).
Arbiter = Literal["weighted", "llm"]
Contradiction = Literal["metrics", "llm", "unknown"]
Method = Literal["match+llm", "llm"]
GraderPrompt = Literal["simpleqa", "rules"]
Split = Literal["unknown", "veto"]


class JudgeConfig(BaseModel):
    """Judge settings. Defaults follow the paper (weights 0.5/0.3/0.2) unless noted."""

    weights: dict[str, float] = Field(
        default_factory=lambda: {"reasoning": 0.5, "sources": 0.3, "validity": 0.2},
        description="importance of each reviewer in the weighted arbiter (renormalised over the reviews present)",
    )
    threshold: float = Field(
        6.0, ge=1.0, le=10.0, description="weighted mean score (1-10) at or above which the answer is correct"
    )
    veto_below: float | None = Field(
        3.0,
        ge=1.0,
        le=10.0,
        description="any single review scoring below this makes the answer incorrect (the paper's arbiter "
        "requires all three qualities); None disables the veto",
    )
    min_reviews: int = Field(2, ge=1, le=3, description="fewer usable reviews than this: the outcome is unknown")
    split: Split = Field(
        "unknown",
        description="when one review falls below veto_below while the weighted mean passes the threshold (the "
        "reviewers disagree; `make demo` once scored 8, 8 and 1 on a right answer): unknown (the default: neither a "
        "lesson stored as a failure nor a debit of the memories used) or veto (the paper's: incorrect)",
    )
    incorrect_below: float | None = Field(
        None,
        ge=1.0,
        le=10.0,
        description="a weighted mean below this is incorrect, and from it up to the threshold the outcome is unknown "
        "(a panel that is sure only at the ends); None: every mean below the threshold is incorrect. With the "
        "embedded 1.5B panel, bench/judge/panel_agreement.py's selective rule",
    )
    disagree_spread: float | None = Field(
        None,
        ge=1.0,
        le=9.0,
        description="when the highest and lowest review differ by at least this many points the reviewers disagree "
        "and the outcome is unknown (bench/judge/panel_agreement.py calibrates it); None: never",
    )
    trace_checks: bool = Field(
        True,
        description="without gold, an answer whose trace shows a failure (given by the caller: the graph's failure "
        "rule, mia.graph.nodes.failure: no answer, a forced answer, a tool error, an answer no search result supports, "
        "the wrong kind of answer, one its own results contradict) is incorrect with no reviewer call. On the "
        "ablation ladder's final-split rows, which no check was written from, 253 of the 282 answers it flagged "
        "were wrong (90%); on the labelled reference answers the panel bench reviewed, 96% on the held-out half "
        "(bench/judge/panel-agreement.md). False: the reviewers judge every answer",
    )
    arbiter: Arbiter = Field(
        "weighted",
        description="weighted: the numeric rule above; llm: an extra arbiter call that must reply with a bare "
        "verdict, falling back to the weighted rule when it does not",
    )
    reask: bool = Field(True, description="ask once more after a malformed reply before falling back")
    force_temperature_zero: bool = Field(
        True, description="run a copy of the model at temperature 0 when it exposes a temperature field"
    )
    contradiction: Contradiction = Field(
        "metrics",
        description="when the grader says CORRECT but the answer shares no token with any gold answer (F1 0, no "
        "exact or cover match), or says anything else for an exact match of a gold answer or its words in another "
        "order (F1 1.0, judge.metrics.same_words; 3 logged Qwen verdicts in bench/judge/contradiction.md): metrics (default): trust the metrics (the embedded Qwen-1.5B grader did this 10 "
        "times in 456 logged HotpotQA verdicts: 9 wrong answers, 1 right yes/no answer written without 'yes': "
        "bench/judge/contradiction.md); llm: trust the grader, for a strong judge and gold answers with "
        "paraphrases such as 'JFK' for 'John F. Kennedy', which share no token; unknown: record the outcome as "
        "unknown. A note in the verdict says what happened",
    )
    method: Method = Field(
        "match+llm",
        description="how ground truth is graded. match+llm (default): the answer matcher (judge/matching.py, the "
        "rules of bench/judge/reference/LABELLING.md, no model) decides the answers it is sure of; only those it "
        "is uncertain about go to the grader model. llm: every answer goes to the grader model (the SimpleQA "
        "prompt), as before. Agreement with 360 labelled answers: bench/judge/grader-agreement.md",
    )
    grader_prompt: GraderPrompt = Field(
        "simpleqa",
        description="the grader model's prompt: simpleqa (the paper's SimpleQA grader; the default: on the matcher's "
        "uncertain answers it agreed with the labels more often, bench/judge/grader-agreement.md) or rules (the "
        "labelling rules, short; the embedded 1.5B grader calls too much of the residue CORRECT with it)",
    )
    max_trace_chars: int = Field(12_000, ge=200, description="longer traces keep their head and tail")
    max_answer_chars: int = Field(2_000, ge=50, description="longer answers are cut for the prompts (metrics use all)")

    @model_validator(mode="after")
    def _check_weights(self) -> "JudgeConfig":
        unknown = set(self.weights) - {"reasoning", "sources", "validity"}
        if unknown:
            raise ValueError(f"unknown reviewer weights {sorted(unknown)}; use reasoning, sources, validity")
        if any(w < 0 for w in self.weights.values()) or sum(self.weights.values()) <= 0:
            raise ValueError("reviewer weights must be non-negative and not all zero")
        if self.incorrect_below is not None and self.incorrect_below > self.threshold:
            raise ValueError(
                f"incorrect_below ({self.incorrect_below:g}) must not exceed the threshold ({self.threshold:g})"
            )
        return self

    def prompt_name(self) -> str:
        """The prompts.toml table the grader model is asked with."""
        return "grader_rules" if self.grader_prompt == "rules" else "grader"


__all__ = ["JudgeConfig", "Method", "GraderPrompt", "Arbiter", "Contradiction"]
