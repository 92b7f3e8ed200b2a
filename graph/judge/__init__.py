"""The judge: decides whether an agent's answer is correct, with or without gold answers.

Used by the graph's judge node, the evaluation harness and the training rewards::

    from mia.graph.judge import judge, ajudge, Verdict, JudgeConfig
    verdict = judge(model, question, answer, trace_text=trace, gold_answers=["Paris"])
    verdict.outcome, verdict.score, verdict.feedback, verdict.usage

Against gold answers the answer matcher (`match_answer`, no model) grades what its rules are sure of and
the judge model only the rest (`JudgeConfig.method`, bench/judge/grader-agreement.md).

The metrics (`normalize_answer`, `exact_match`, `f1_score`, `cover_match`, `extract_answer`) need
no model; the names that need LangChain are loaded on first use, so importing the metrics for a
reward function or a report stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

from .metrics import cover_match, exact_match, extract_answer, f1_score, normalize_answer
from .outcome import Outcome

if TYPE_CHECKING:  # pragma: no cover
    from .api import MODES, JudgeMode, ajudge, judge
    from .config import JudgeConfig
    from .matching import Match, match_answer
    from .parsing import parse_arbiter, parse_grade, parse_review
    from .verdict import GraderLabel, JudgeMethod, Review, Usage, Verdict


__getattr__, _dir, _lazy = lazy_loader.attach(
    __name__,
    submod_attrs={
        "api": ["judge", "ajudge", "JudgeMode", "MODES"],
        "config": ["JudgeConfig"],
        "matching": ["match_answer", "Match"],
        "verdict": ["Verdict", "Review", "Usage", "GraderLabel", "JudgeMethod"],
        "parsing": ["parse_grade", "parse_review", "parse_arbiter"],
    },
)
__all__ = ["Outcome", "normalize_answer", "exact_match", "f1_score", "cover_match", "extract_answer", *_lazy]
