"""95% confidence intervals of a metric's mean: Wilson score for 0/1 metrics (with repeats on Korn and Graubard's
effective sample size), Student's t otherwise."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Literal

LEVEL = 0.95
Z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
"""The normal quantile of a two-sided 95% interval (1.959964...)."""
Method = Literal["wilson", "wilson-kg", "t"]


@dataclass(frozen=True)
class Interval:
    """A 95% interval of a mean and how it was computed."""

    low: float
    high: float
    method: Method


def wilson(p: float, n: float) -> Interval:
    """Wilson score interval of a proportion `p` observed in `n` trials (n > 0; an effective n need not be whole).

    scipy.stats.binomtest(k, n).proportion_ci(method="wilson") is the same interval to the last digit or two (a
    test checks), but loading scipy.stats (0.6 s) would more than double the time of a `show` of 0/1 metrics."""
    scale = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / scale
    half = Z / scale * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return Interval(max(0.0, centre - half), min(1.0, centre + half), "wilson")


def _t(units: int) -> float:
    """t(0.975, units - 1): the quantile of a two-sided 95% interval with units - 1 degrees of freedom."""
    from scipy.special import stdtrit  # the quantile behind scipy.stats.t.ppf, at half the import time

    return float(stdtrit(units - 1, 0.5 + LEVEL / 2))


def t_interval(mean: float, stderr: float, n: int, bounds: tuple[float, float] | None = None) -> Interval:
    """mean ± t(0.975, n - 1) · stderr, for a standard error from n independent units (n >= 2), within `bounds` (the
    least and most a value can be: the mean of such values can be no other)."""
    half = _t(n) * stderr
    low, high = bounds or (-math.inf, math.inf)
    return Interval(max(low, mean - half), min(high, mean + half), "t")


def clustered_wilson(p: float, n: int, stderr: float, units: int) -> Interval:
    """Wilson's interval of a share of n 0/1 answers in `units` clusters (a sample's repeats), on Korn and Graubard's
    (1998) effective sample size: p(1-p)/stderr² (at most n: a design effect below 1 is taken as 1), times
    (z / t(units - 1))² for the degrees of freedom. Always within 0..1 and never of width 0, unlike a t interval."""
    effective = n if stderr == 0 or p * (1 - p) == 0 else min(n, p * (1 - p) / stderr ** 2)
    return replace(wilson(p, effective * (Z / _t(units)) ** 2), method="wilson-kg")


def interval(n: int, mean: float | None, stderr: float | None, binary: bool,
             units: int | None = None, bounds: tuple[float, float] | None = None) -> Interval | None:
    """The 95% interval of a metric with `n` values (0/1 answers when `binary`), its standard error from `units`
    independent units (default n; with repeats the samples, each one cluster of answers), within the values'
    `bounds` if known; None when n or units < 2."""
    units = n if units is None else units
    if n < 2 or units < 2 or mean is None:
        return None
    if binary:
        return wilson(mean, n) if units == n else clustered_wilson(mean, n, stderr or 0.0, units)
    return t_interval(mean, stderr or 0.0, units, bounds)
