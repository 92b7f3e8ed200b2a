"""95% confidence intervals: Wilson for proportions, Student t for means.

Why no scipy: a few hundred questions need nothing more than these closed forms, and keeping them
here makes every bound checkable by hand in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

Z95 = 1.959963984540054
# two-sided 95% Student t critical values t_{0.975, df}, df = 1..30
_T95 = (
    12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851, 2.364624252,
    2.306004135, 2.262157163, 2.228138852, 2.200985160, 2.178812830, 2.160368656, 2.144786688,
    2.131449546, 2.119905299, 2.109815578, 2.100922040, 2.093024054, 2.085963447, 2.079613845,
    2.073873068, 2.068657610, 2.063898562, 2.059538553, 2.055529439, 2.051830516, 2.048407142,
    2.045229642, 2.042272456,
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
