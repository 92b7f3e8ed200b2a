"""95% confidence intervals (Wilson for proportions, Student t for means, percentile bootstrap for
bounded means such as F1) and paired tests (exact McNemar, paired bootstrap) with sample sizes.

Why no scipy: a few hundred questions need nothing more than these closed forms, and keeping them
here makes every bound checkable by hand in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

Z95 = 1.959963984540054
# two-sided 95% Student t critical values t_{0.975, df}, df = 1..30
_T95 = (
    12.706204736,
    4.302652730,
    3.182446305,
    2.776445105,
    2.570581836,
    2.446911851,
    2.364624252,
    2.306004135,
    2.262157163,
    2.228138852,
    2.200985160,
    2.178812830,
    2.160368656,
    2.144786688,
    2.131449546,
    2.119905299,
    2.109815578,
    2.100922040,
    2.093024054,
    2.085963447,
    2.079613845,
    2.073873068,
    2.068657610,
    2.063898562,
    2.059538553,
    2.055529439,
    2.051830516,
    2.048407142,
    2.045229642,
    2.042272456,
)


class Estimate(BaseModel):
    """A point estimate with its 95% interval and the number of observations behind it."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    def fmt(self, digits: int = 3, pct: bool = False) -> str:
        """`0.333 [0.193, 0.510]` (or percentages) for tables; an em dash when undefined."""
        if self.value is None:
            return "—"
        scale, unit = (100.0, "%") if pct else (1.0, "")
        v, lo, hi = (self.value * scale, (self.low or 0) * scale, (self.high or 0) * scale)
        return f"{v:.{digits}f}{unit} [{lo:.{digits}f}, {hi:.{digits}f}]"


def t_critical(df: int) -> float:
    """t_{0.975, df}: exact table to 30, then the Cornish-Fisher expansion (error < 1e-5 above 30)."""
    if df < 1:
        raise ValueError("df must be >= 1")
    if df <= len(_T95):
        return _T95[df - 1]
    z, v = Z95, float(df)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
    )


def wilson(successes: int, n: int) -> Estimate:
    """Wilson score interval: sane at 0/n and n/n, unlike the normal approximation."""
    if n == 0:
        return Estimate(value=None, low=None, high=None, n=0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} outside 0..{n}")
    p, z2 = successes / n, Z95**2
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact bounds, not 1 - 1e-16
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Estimate(value=p, low=low, high=high, n=n)


def mean_ci(values: Sequence[float]) -> Estimate:
    """Mean with a Student t interval (sample sd, n-1 df); one value gives a zero-width interval."""
    n = len(values)
    if n == 0:
        return Estimate(value=None, low=None, high=None, n=0)
    mean = sum(values) / n
    if n == 1:
        return Estimate(value=mean, low=mean, high=mean, n=1)
    sd = math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1))
    half = t_critical(n - 1) * sd / math.sqrt(n)
    return Estimate(value=mean, low=mean - half, high=mean + half, n=n)


# ------------------------------------------------------------------ bounded and paired statistics
#
# Why a bootstrap for F1: token F1 lives in [0, 1] and piles up at 0 and 1, so a Student t interval
# goes below 0 on small runs (it did: 0.023 [-0.01, 0.06]). A percentile bootstrap of the mean
# resamples the observed values, so its bounds are means of values in [0, 1] and stay there.

BOOTSTRAP_RESAMPLES = 10_000
Z80 = 0.8416212335729143  # one-sided z for 80% power


def bootstrap_mean(values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Estimate:
    """Mean with a 95% percentile-bootstrap interval (deterministic: a fixed seed)."""
    import numpy as np

    n = len(values)
    if n == 0:
        return Estimate(value=None, low=None, high=None, n=0)
    data = np.asarray(values, dtype=float)
    means = _resampled_means(data, resamples, seed)
    low, high = np.quantile(means, [0.025, 0.975])
    return Estimate(value=float(data.mean()), low=float(low), high=float(high), n=n)


def _resampled_means(data: Any, resamples: int, seed: int) -> Any:
    """Means of `resamples` bootstrap resamples of `data`, in chunks (bounded memory at any n)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n, out, done = len(data), np.empty(resamples), 0
    chunk = max(1, 2_000_000 // max(n, 1))
    while done < resamples:
        k = min(chunk, resamples - done)
        out[done : done + k] = data[rng.integers(0, n, size=(k, n))].mean(axis=1)
        done += k
    return out


class McNemar(BaseModel):
    """Exact McNemar test on paired 0/1 outcomes: b = only A right, c = only B right."""

    n: int
    b: int
    c: int
    p_value: float


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> McNemar:
    """Two-sided exact (binomial) McNemar test of A vs B on the same questions, in the same order."""
    if len(a) != len(b):
        raise ValueError("paired outcomes must have the same length")
    only_a = sum(1 for x, y in zip(a, b) if x and not y)
    only_b = sum(1 for x, y in zip(a, b) if y and not x)
    return McNemar(n=len(a), b=only_a, c=only_b, p_value=binomial_two_sided(only_a, only_a + only_b))


def binomial_two_sided(k: int, n: int) -> float:
    """P-value of k successes in n fair coin flips, two-sided (2 x the smaller tail, at most 1)."""
    if n == 0:
        return 1.0
    low = min(k, n - k)
    tail = sum(math.exp(_log_choose(n, i) - n * math.log(2)) for i in range(low + 1))
    return min(1.0, 2.0 * tail)


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


class PairedDifference(BaseModel):
    """Mean of B - A over the same questions, with a paired-bootstrap 95% interval and p-value."""

    n: int
    diff: Estimate
    p_value: float


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> PairedDifference:
    """Paired bootstrap of mean(b - a): questions are resampled together, so the question-to-question
    spread that both runs share cancels. p: two-sided, twice the share of resampled means on the
    other side of 0 (at least 1/resamples when none is, at most 1)."""
    import numpy as np

    if len(a) != len(b):
        raise ValueError("paired values must have the same length")
    n = len(a)
    if n == 0:
        return PairedDifference(n=0, diff=Estimate(value=None, low=None, high=None, n=0), p_value=1.0)
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    means = _resampled_means(d, resamples, seed)
    low, high = np.quantile(means, [0.025, 0.975])
    if not d.any():
        p = 1.0
    else:
        share = min(float((means <= 0).mean()), float((means >= 0).mean()))
        p = min(1.0, max(2.0 * share, 1.0 / resamples))
    return PairedDifference(n=n, diff=Estimate(value=float(d.mean()), low=float(low), high=float(high), n=n), p_value=p)


def questions_needed_mcnemar(m: McNemar, z_alpha: float = Z95, z_beta: float = Z80) -> int | None:
    """Questions needed for the observed discordance (b/n, c/n) to be significant at 5% with 80% power
    (Connor 1987): n = (z_a sqrt(pd) + z_b sqrt(pd - delta^2))^2 / delta^2; None when b == c."""
    if m.n == 0 or m.b == m.c:
        return None
    pb, pc = m.b / m.n, m.c / m.n
    pd, delta = pb + pc, pb - pc
    return math.ceil((z_alpha * math.sqrt(pd) + z_beta * math.sqrt(max(pd - delta**2, 0.0))) ** 2 / delta**2)


def questions_needed_mean(
    a: Sequence[float], b: Sequence[float], z_alpha: float = Z95, z_beta: float = Z80
) -> int | None:
    """Questions needed for the observed mean paired difference to be significant at 5% with 80%
    power: n = ((z_a + z_b) sd_d / mean_d)^2; None when the mean difference is 0 or n < 2."""
    d = [y - x for x, y in zip(a, b, strict=True)]
    n = len(d)
    if n < 2:
        return None
    mean = sum(d) / n
    if mean == 0:
        return None
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    return max(2, math.ceil(((z_alpha + z_beta) * sd / mean) ** 2))
