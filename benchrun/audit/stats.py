"""95% confidence intervals of a metric's mean: Wilson score for 0/1 metrics, Student's t otherwise."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

LEVEL = 0.95
Z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
"""The normal quantile of a two-sided 95% interval (1.959964...)."""
Method = Literal["wilson", "t"]


@dataclass(frozen=True)
class Interval:
    """A 95% interval of a mean and how it was computed."""

    low: float
    high: float
    method: Method


def wilson(p: float, n: int) -> Interval:
    """Wilson score interval of a proportion `p` observed in `n` trials (n >= 1).

    scipy.stats.binomtest(k, n).proportion_ci(method="wilson") is the same interval to the last digit or two (a
    test checks), but loading scipy.stats (0.6 s) would more than double the time of a `show` of 0/1 metrics."""
    scale = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / scale
    half = Z / scale * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return Interval(max(0.0, centre - half), min(1.0, centre + half), "wilson")


def t_interval(mean: float, stderr: float, n: int) -> Interval:
    """mean ± t(0.975, n - 1) · stderr, for a standard error from n independent units (n >= 2)."""
    from scipy.special import stdtrit  # the quantile behind scipy.stats.t.ppf, at half the import time

    half = float(stdtrit(n - 1, 0.5 + LEVEL / 2)) * stderr
    return Interval(mean - half, mean + half, "t")


def interval(n: int, mean: float | None, stderr: float | None, binary: bool,
             units: int | None = None) -> Interval | None:
    """The 95% interval of a metric with `n` values (independent 0/1 answers when `binary`), its standard error
    from `units` independent units (default n; with repeats the samples, each one cluster of answers); None when
    n or units < 2."""
    units = n if units is None else units
    if n < 2 or units < 2 or mean is None:
        return None
    if binary:
        return wilson(mean, n)
    return t_interval(mean, stderr or 0.0, units)
