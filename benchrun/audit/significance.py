"""Paired statistics for two runs' values of one metric on the same samples.

0/1 metrics get the exact McNemar test (two-sided binomial test on the discordant pairs); other metrics a
paired sign-flip permutation test on the differences: exact over all 2^n sign patterns when there are at
most RESAMPLES of them, else RESAMPLES random patterns drawn with the fixed SEED. The 95% interval of the
mean difference is a paired percentile bootstrap with RESAMPLES resamples, also seeded with SEED, so the
same values always give the same p-value and interval.

Where scipy.stats gives the same digits about as fast (the exact permutation test, the bootstrap of many distinct
differences) it computes them, loaded only then: it takes 0.6 s to load, twice what a small compare takes.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Literal, Sequence

from benchrun.archive.tally import exact_mean
from benchrun.core.errors import BenchrunError
from benchrun.core.frozen import Frozen

try:
    import numpy as np
except (ImportError, RuntimeError) as err:  # a numpy built for another CPU (2.4 needs x86-64-v2), or a broken one
    from benchrun.execute.runners.llama_build import numpy_unusable  # only then: auditing loads no runner code

    raise BenchrunError(numpy_unusable(err, "benchrun-audit compare")) from None

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


class Paired(Frozen):
    """Two runs' values on the same n samples: both means, their difference, its test and 95% interval."""

    n: int
    baseline_mean: float | None
    mean: float | None
    delta: float | None
    """mean - baseline_mean."""
    test: Literal["mcnemar", "permutation"] | None
    """`mcnemar` (both runs' values 0/1 answers) or `permutation`; None with no sample in common."""
    p_value: float | None
    ci_low: float | None
    """None with fewer than two samples: a bootstrap of one difference is that difference, an interval of width 0."""
    ci_high: float | None
    b: int | None
    """0/1 metrics: samples that went 0 -> 1."""
    c: int | None
    """0/1 metrics: samples that went 1 -> 0."""


NOTHING = dict.fromkeys(("baseline_mean", "mean", "delta", "test", "p_value", "ci_low", "ci_high", "b", "c"))


def paired(a: Sequence[float], b: Sequence[float], binary: bool) -> Paired:
    """Compare values `b` with the baseline `a` (aligned: a[i] and b[i] are the same sample), each a 0/1 answer
    when `binary` (McNemar's test), else any number (the permutation test)."""
    if not a:
        return Paired(n=0, **NOTHING)
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diffs = y - x
    low, high = bootstrap_ci(diffs) if diffs.size > 1 else (None, None)  # one difference: its resamples are itself
    base, mean = exact_mean(a), exact_mean(b)
    means = {"n": len(a), "baseline_mean": float(base), "mean": float(mean), "delta": float(mean - base),
             "ci_low": low, "ci_high": high}
    if binary:
        to_1, to_0 = int(np.sum(diffs > 0)), int(np.sum(diffs < 0))
        return Paired(**means, test="mcnemar", p_value=mcnemar_exact(to_1, to_0), b=to_1, c=to_0)
    return Paired(**means, test="permutation", p_value=permutation_p(diffs), b=None, c=None)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: 2 * P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), at most 1.

    Summed in integers and divided once, so correctly rounded: scipy.stats.binomtest(min(b, c), b + c).pvalue
    sums floats and is a few units in the last place off from 350 pairs on (0.008720036530555947 for
    0.008720036530555949), and would load scipy.stats into every compare of 0/1 metrics."""
    n, k = b + c, min(b, c)
    term = tail = 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        tail += term
    return min(1.0, tail / 2 ** (n - 1)) if n else 1.0


def permutation_p(diffs: np.ndarray) -> float:
    """Two-sided sign-flip test of mean difference 0: the share of sign patterns with |sum| >= the observed.

    Exact (all 2^n patterns, n <= log2(RESAMPLES)): scipy.stats.permutation_test. Beyond, RESAMPLES random
    patterns drawn here: scipy draws each sign itself, 20 to 4000 times slower (17 s for 0.8 s on 20,000
    differences, 4 s for 1 ms on 20,000 of three values, which a binomial count per value draws at once)."""
    d = diffs[diffs != 0]
    if d.size < 2:  # none, or one whose two signs give one |sum| (scipy's test refuses a single value)
        return 1.0
    if 2 ** d.size <= RESAMPLES:
        from scipy.stats import permutation_test

        return float(permutation_test((d,), np.sum, permutation_type="samples", n_resamples=RESAMPLES).pvalue)
    observed = abs(d.sum()) - 1e-9 * np.abs(d).sum()
    rng = np.random.default_rng(SEED)
    values, counts = np.unique(d, return_counts=True)
    if values.size <= FEW:  # the signs of `count` equal values: 2 * Binomial(count, 1/2) - count of them positive
        sums = (2 * rng.binomial(counts, 0.5, size=(RESAMPLES, values.size)) - counts) @ values
    else:
        sums = np.concatenate([2 * (_random_bits(rng, rows, d.size) @ d) - d.sum() for rows in _blocks(d.size)])
    return (int(np.sum(np.abs(sums) >= observed)) + 1) / (RESAMPLES + 1)


def bootstrap_ci(diffs: np.ndarray) -> tuple[float, float]:
    """Percentile bootstrap interval (CONFIDENCE) of the mean of paired differences.

    scipy.stats.bootstrap, but for FEW distinct differences or fewer (0/1 metrics: -1, 0, 1): then how often each
    is drawn is one multinomial draw per resample, the same distribution 500 times faster (2 ms for 1.1 s on
    20,000 differences)."""
    rng = np.random.default_rng(SEED)
    values, counts = np.unique(diffs, return_counts=True)
    if values.size > FEW:
        from scipy.stats import bootstrap

        found = bootstrap((diffs,), np.mean, n_resamples=RESAMPLES, confidence_level=CONFIDENCE,
                          method="percentile", rng=rng, batch=max(1, CHUNK // diffs.size)).confidence_interval
        return float(found.low), float(found.high)
    means = rng.multinomial(diffs.size, counts / diffs.size, size=RESAMPLES) @ values / diffs.size
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
