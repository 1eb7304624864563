"""Paired statistics for two runs' values of one metric on the same samples.

0/1 metrics get the exact McNemar test (two-sided binomial test on the discordant pairs); other metrics a
paired sign-flip permutation test on the differences: exact over all 2^n sign patterns when there are at
most RESAMPLES of them, else RESAMPLES random patterns drawn with the fixed SEED. The 95% interval of the
mean difference is a paired percentile bootstrap with RESAMPLES resamples, also seeded with SEED, so the
same values always give the same p-value and interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Sequence

import numpy as np

RESAMPLES = 10_000
SEED = 0
CONFIDENCE = 0.95
CHUNK = 1 << 21
"""Elements per block of resampled values, so memory stays flat in the number of samples."""
FEW = 64
"""Up to this many distinct differences, resample how often each is drawn (the same distribution, much faster)."""
METHOD = MappingProxyType({
    "confidence": CONFIDENCE, "resamples": RESAMPLES, "seed": SEED,
    "binary": "exact McNemar (two-sided binomial test on the discordant pairs)",
    "other": f"paired sign-flip permutation test (exact up to {RESAMPLES} sign patterns, else {RESAMPLES} "
             f"drawn with seed {SEED})",
    "interval": f"paired percentile bootstrap of the mean difference ({RESAMPLES} resamples, seed {SEED})",
})


@dataclass(frozen=True)
class Paired:
    """Two runs' values on the same n samples: means, difference, test and interval."""

    n: int
    mean_a: float | None
    mean_b: float | None
    delta: float | None
    test: Literal["mcnemar", "permutation"] | None
    p_value: float | None
    ci_low: float | None
    ci_high: float | None
    b: int | None
    """0/1 metrics: samples that went 0 -> 1."""
    c: int | None
    """0/1 metrics: samples that went 1 -> 0."""


def paired(a: Sequence[float], b: Sequence[float], binary: bool) -> Paired:
    """Compare values `b` with the baseline `a` (aligned: a[i] and b[i] are the same sample), each a 0/1 answer
    when `binary` (McNemar's test), else any number (the permutation test)."""
    if not a:
        return Paired(0, None, None, None, None, None, None, None, None, None)
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diffs = y - x
    low, high = bootstrap_ci(diffs)
    if binary:
        to_1, to_0 = int(np.sum(diffs > 0)), int(np.sum(diffs < 0))
        return Paired(len(a), float(x.mean()), float(y.mean()), float(diffs.mean()), "mcnemar",
                      mcnemar_exact(to_1, to_0), low, high, to_1, to_0)
    return Paired(len(a), float(x.mean()), float(y.mean()), float(diffs.mean()), "permutation",
                  permutation_p(diffs), low, high, None, None)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: 2 * P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), at most 1."""
    n, k = b + c, min(b, c)
    term = tail = 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        tail += term
    return min(1.0, tail / 2 ** (n - 1)) if n else 1.0


def permutation_p(diffs: np.ndarray) -> float:
    """Two-sided sign-flip test of mean difference 0: the share of sign patterns with |sum| >= the observed."""
    d = diffs[diffs != 0]
    if d.size == 0:
        return 1.0
    observed = abs(d.sum()) - 1e-9 * np.abs(d).sum()
    if 2 ** d.size <= RESAMPLES:
        signs = 1 - 2 * ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1)
        return float(np.mean(np.abs(signs @ d) >= observed))
    rng = np.random.default_rng(SEED)
    values, counts = np.unique(d, return_counts=True)
    if values.size <= FEW:  # the signs of `count` equal values: 2 * Binomial(count, 1/2) - count of them positive
        sums = (2 * rng.binomial(counts, 0.5, size=(RESAMPLES, values.size)) - counts) @ values
    else:
        sums = np.concatenate([2 * (_random_bits(rng, rows, d.size) @ d) - d.sum() for rows in _blocks(d.size)])
    return (int(np.sum(np.abs(sums) >= observed)) + 1) / (RESAMPLES + 1)


def bootstrap_ci(diffs: np.ndarray) -> tuple[float, float]:
    """Percentile bootstrap interval (CONFIDENCE) of the mean of paired differences."""
    rng = np.random.default_rng(SEED)
    values, counts = np.unique(diffs, return_counts=True)
    if values.size <= FEW:  # how often each distinct value is drawn: Multinomial(n, its share)
        means = rng.multinomial(diffs.size, counts / diffs.size, size=RESAMPLES) @ values / diffs.size
    else:
        means = np.concatenate([diffs[rng.integers(0, diffs.size, size=(rows, diffs.size))].mean(axis=1)
                                for rows in _blocks(diffs.size)])
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def _random_bits(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """A rows x n matrix of fair 0/1 draws as floats (a sign is 2 * bit - 1)."""
    bits = np.unpackbits(np.frombuffer(rng.bytes(-(-rows * n // 8)), dtype=np.uint8), count=rows * n)
    return bits.reshape(rows, n).astype(float)


def _blocks(n: int) -> list[int]:
    """RESAMPLES split into row counts of at most CHUNK elements of n values each."""
    rows = max(1, CHUNK // n)
    return [min(rows, RESAMPLES - start) for start in range(0, RESAMPLES, rows)]
