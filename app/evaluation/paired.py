"""Paired comparisons between neighbouring runs of a report (`mia eval-report A B C`: A-B, B-C).

Why paired: the runs answer the same questions, and most of the spread between questions (easy vs
hard) is shared; McNemar on the 0/1 outcome and a paired bootstrap on F1 only look at how the two
runs differ on each question, so they separate configurations that unpaired intervals cannot.
Each comparison also says how many questions the observed difference would need to be significant.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from mia.app.evaluation import runlog
from mia.app.evaluation.records import QuestionResult
from mia.app.evaluation.stats import (
    McNemar,
    PairedDifference,
    mcnemar_exact,
    paired_bootstrap,
    questions_needed_mcnemar,
    questions_needed_mean,
)


class PairedComparison(BaseModel):
    """Run B against run A on the questions both answered."""

    a: str
    b: str
    n: int
    outcome: str  # "judge" (LLM-judge verdicts) or "em" (exact match), the 0/1 outcome McNemar tests
    mcnemar: McNemar
    questions_needed_outcome: int | None
    f1: PairedDifference
    questions_needed_f1: int | None


def _correct(r: QuestionResult, outcome: str) -> bool:
    return bool(r.judge_correct) if outcome == "judge" else r.em >= 1.0


def compare_pair(a: list[QuestionResult], b: list[QuestionResult], label_a: str, label_b: str) -> PairedComparison:
    """McNemar, paired F1 bootstrap and questions needed, over the question ids both lists hold."""
    by_a, by_b = {r.id: r for r in a}, {r.id: r for r in b}
    ids = sorted(set(by_a) & set(by_b))
    ra, rb = [by_a[i] for i in ids], [by_b[i] for i in ids]
    judged = bool(ids) and all(r.judge_correct is not None for r in ra + rb)
    outcome = "judge" if judged else "em"
    m = mcnemar_exact([_correct(r, outcome) for r in ra], [_correct(r, outcome) for r in rb])
    fa, fb = [r.f1 for r in ra], [r.f1 for r in rb]
    return PairedComparison(
        a=label_a,
        b=label_b,
        n=len(ids),
        outcome=outcome,
        mcnemar=m,
        questions_needed_outcome=questions_needed_mcnemar(m),
        f1=paired_bootstrap(fa, fb),
        questions_needed_f1=questions_needed_mean(fa, fb),
    )


def neighbours(run_dirs: list[Path], labels: list[str]) -> list[PairedComparison]:
    """Each run against the next one, in the order given."""
    results = [list(runlog.latest_by_id(runlog.read_results(Path(d))).values()) for d in run_dirs]
    return [compare_pair(results[i], results[i + 1], labels[i], labels[i + 1]) for i in range(len(results) - 1)]


def _p(p: float) -> str:
    return "<0.0001" if p < 1e-4 else f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def _needed(n: int | None) -> str:
    return "— (no difference)" if n is None else f"{n}"


def markdown_paired(rows: list[PairedComparison]) -> str:
    """A table of paired tests; empty when there is a single run."""
    if not rows:
        return ""
    head = (
        "Paired comparisons (same questions; B against A). McNemar: exact binomial test on the discordant questions "
        "(b: only A right, c: only B right). ΔF1: mean of B − A with a 95% paired-bootstrap interval. "
        "Questions needed: how many questions the observed difference would need to be significant "
        "at 5% with 80% power.\n\n"
        "| A | B | n | outcome | b | c | McNemar p | questions needed (outcome) | ΔF1 | ΔF1 p | questions needed (F1) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r.a} | {r.b} | {r.n} | {r.outcome} | {r.mcnemar.b} | {r.mcnemar.c} | {_p(r.mcnemar.p_value)} | "
        f"{_needed(r.questions_needed_outcome)} | {r.f1.diff.fmt(3)} | {_p(r.f1.p_value)} | "
        f"{_needed(r.questions_needed_f1)} |"
        for r in rows
    ]
    return head + "\n".join(lines) + "\n"
