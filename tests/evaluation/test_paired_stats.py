"""Bounded F1 intervals, exact McNemar, paired bootstrap and questions needed, against hand
computations; and the paired table of `mia eval-report`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mia.app.evaluation.paired import compare_pair, markdown_paired
from mia.app.evaluation.records import QuestionResult
from mia.app.evaluation.report import compare
from mia.app.evaluation.stats import (
    McNemar,
    binomial_two_sided,
    bootstrap_mean,
    mcnemar_exact,
    mean_ci,
    paired_bootstrap,
    questions_needed_mcnemar,
    questions_needed_mean,
)

from .test_report import _run
from .fakes import write_tiny


def test_f1_bootstrap_interval_stays_in_0_1_where_t_goes_negative() -> None:
    values = [0.0] * 57 + [0.4, 0.5, 0.5]  # a small run's F1: mostly 0
    t = mean_ci(values)
    assert t.low < 0  # the defect: a t interval below 0
    est = bootstrap_mean(values)
    assert est.value == pytest.approx(1.4 / 60)
    assert 0.0 <= est.low < est.value < est.high <= 1.0
    assert bootstrap_mean([1.0] * 5).model_dump() == {"value": 1.0, "low": 1.0, "high": 1.0, "n": 5}
    assert bootstrap_mean([]).value is None


def test_bootstrap_of_two_values_by_hand() -> None:
    # resampled means of [0, 1] are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4: 2.5% -> 0, 97.5% -> 1
    est = bootstrap_mean([0.0, 1.0])
    assert (est.value, est.low, est.high) == (0.5, 0.0, 1.0)
    assert bootstrap_mean([0.0, 1.0], seed=3) == bootstrap_mean([0.0, 1.0], seed=3)


def test_mcnemar_exact_by_hand() -> None:
    # b = 5, c = 0: p = 2 * (1/2)^5 = 0.0625
    a = [True] * 5 + [True, False] * 3
    b = [False] * 5 + [True, False] * 3
    m = mcnemar_exact(a, b)
    assert (m.n, m.b, m.c) == (11, 5, 0) and m.p_value == pytest.approx(0.0625)
    # b = 1, c = 9: p = 2 * (C(10,0) + C(10,1)) / 2^10 = 22 / 1024
    assert binomial_two_sided(1, 10) == pytest.approx(22 / 1024)
    assert binomial_two_sided(9, 10) == pytest.approx(22 / 1024)
    assert binomial_two_sided(5, 10) == 1.0 and binomial_two_sided(0, 0) == 1.0
    # issue 15's figure: 5/60 vs 9/60 correct; with 4 discordant only B right, 0 only A: p = 2/16
    assert mcnemar_exact([False] * 4, [True] * 4).p_value == pytest.approx(0.125)
    with pytest.raises(ValueError):
        mcnemar_exact([True], [True, False])


def test_paired_bootstrap_by_hand() -> None:
    same = paired_bootstrap([0.1, 0.5, 0.9], [0.1, 0.5, 0.9])
    assert same.diff.value == 0 and same.p_value == 1.0 and (same.diff.low, same.diff.high) == (0.0, 0.0)
    shift = paired_bootstrap([0.1, 0.5, 0.9], [0.3, 0.7, 1.0])  # differences 0.2, 0.2, 0.1: all > 0
    assert shift.diff.value == pytest.approx(0.5 / 3)
    assert shift.diff.low == pytest.approx(0.1) and shift.diff.high == pytest.approx(0.2)
    assert shift.p_value == pytest.approx(1e-4)  # no resample on the other side: bounded by 1/resamples
    # the per-question spread cancels: unpaired intervals of a and b overlap, the paired one excludes 0
    a = [i / 20 for i in range(20)]
    b = [x + 0.05 for x in a]
    assert mean_ci(a).high > mean_ci(b).low and paired_bootstrap(a, b).diff.low > 0


def test_questions_needed_by_hand() -> None:
    # b = 4, c = 1 of 60: pd = 5/60, delta = 3/60;
    # n = (1.96 sqrt(pd) + 0.8416 sqrt(pd - delta^2))^2 / delta^2 = (0.56580 + 0.23928)^2 / 0.0025 = 259.3 -> 260
    pd, delta = 5 / 60, 3 / 60
    expected = math.ceil(
        (1.959963984540054 * math.sqrt(pd) + 0.8416212335729143 * math.sqrt(pd - delta**2)) ** 2 / delta**2
    )
    assert questions_needed_mcnemar(McNemar(n=60, b=4, c=1, p_value=0.375)) == expected == 260
    assert questions_needed_mcnemar(McNemar(n=60, b=2, c=2, p_value=1.0)) is None
    # differences 0.1, 0.3 (mean 0.2, sd sqrt(0.02)): n = ((1.96 + 0.8416) * sqrt(0.02) / 0.2)^2 = 3.92 -> 4
    assert questions_needed_mean([0.0, 0.0], [0.1, 0.3]) == 4
    assert questions_needed_mean([0.5, 0.5], [0.5, 0.5]) is None


def _r(id_: str, em: float, f1: float, judged: bool | None = None) -> QuestionResult:
    return QuestionResult(id=id_, question="q", gold_answers=["g"], em=em, f1=f1, judge_correct=judged)


def test_compare_pair_uses_the_shared_questions_and_the_judge_when_both_have_it() -> None:
    a = [_r("1", 1, 1.0, True), _r("2", 0, 0.2, False), _r("3", 0, 0.0, False), _r("x", 1, 1.0, True)]
    b = [_r("1", 1, 1.0, True), _r("2", 1, 1.0, True), _r("3", 0, 0.5, True), _r("y", 0, 0.0, False)]
    row = compare_pair(a, b, "A", "B")
    assert row.n == 3 and row.outcome == "judge" and (row.mcnemar.b, row.mcnemar.c) == (0, 2)
    assert row.f1.diff.value == pytest.approx((0 + 0.8 + 0.5) / 3)
    unjudged = compare_pair([_r("1", 1, 1.0)], [_r("1", 0, 0.0)], "A", "B")
    assert unjudged.outcome == "em" and (unjudged.mcnemar.b, unjudged.mcnemar.c) == (1, 0)
    md = markdown_paired([row])
    assert "| A | B | 3 | judge | 0 | 2 | 0.500 |" in md
    assert markdown_paired([]) == ""


async def test_eval_report_has_paired_comparisons(tmp_path: Path) -> None:
    tiny = write_tiny(tmp_path / "tiny.jsonl")
    await _run(tiny, tmp_path / "none", "none", fail={"q1", "q2"})
    await _run(tiny, tmp_path / "mia", "mia")
    _, md = compare([tmp_path / "none", tmp_path / "mia"], tmp_path / "cmp", title="T")
    assert "Paired comparisons" in md and "McNemar" in md
    pairs = json.loads((tmp_path / "cmp" / "paired.json").read_text())
    assert len(pairs) == 1 and pairs[0]["n"] == 4
    assert 0.0 <= pairs[0]["f1"]["p_value"] <= 1.0
