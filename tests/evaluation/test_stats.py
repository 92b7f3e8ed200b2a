"""Confidence intervals against hand-computed and reference values."""

from __future__ import annotations

import math

import pytest

from mia.app.evaluation.stats import mean_ci, t_critical, wilson


def test_wilson_two_of_four_by_hand():
    # z^2 = 3.8415; centre = (0.5 + 3.8415/8) / (1 + 3.8415/4) = 0.5;
    # half = 1.96 * sqrt(0.25/4 + 3.8415/64) / 1.96037 = 0.35
    est = wilson(2, 4)
    assert est.value == 0.5
    assert est.low == pytest.approx(0.1500, abs=1e-4)
    assert est.high == pytest.approx(0.8500, abs=1e-4)


def test_wilson_one_of_four_and_extremes():
    est = wilson(1, 4)
    assert (est.low, est.high) == (pytest.approx(0.04560, abs=1e-4), pytest.approx(0.69936, abs=1e-4))
    zero, full = wilson(0, 30), wilson(30, 30)
    assert zero.low == 0.0 and zero.high == pytest.approx(0.11351, abs=1e-4)  # not a zero-width interval
    assert full.high == 1.0 and full.low == pytest.approx(0.88649, abs=1e-4)
    assert wilson(0, 0).value is None
    with pytest.raises(ValueError):
        wilson(5, 4)


def test_mean_ci_by_hand():
    # mean 2, sd 1, se 1/sqrt(3), t_{0.975,2} = 4.3027
    est = mean_ci([1.0, 2.0, 3.0])
    assert est.value == 2.0
    assert est.low == pytest.approx(2 - 4.302653 / math.sqrt(3), abs=1e-6)
    assert est.high == pytest.approx(2 + 4.302653 / math.sqrt(3), abs=1e-6)
    assert mean_ci([5.0]).low == 5.0 and mean_ci([]).value is None
    assert mean_ci([7.0, 7.0, 7.0]).high == 7.0


def test_t_critical_matches_scipy_beyond_the_table():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 5, 29, 30, 31, 45, 100, 999):
        assert t_critical(df) == pytest.approx(stats.t.ppf(0.975, df), abs=2e-5), df
