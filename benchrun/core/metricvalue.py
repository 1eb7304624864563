"""What a metric's value, a statistic and a count may be, wherever one enters or is read: a finite number of magnitude
at most MAX_METRIC, a count of 0 to MAX_COUNT; checked here without pydantic, which the scorer process, checking each
score, never loads (`core.metrictypes` gives these checks to the records' models)."""

from __future__ import annotations

import math
from typing import Any

MAX_METRIC = 1e100
"""The largest magnitude a metric's value may have: its square, summed over a million samples and a thousand
repeats for the standard error, stays a finite float."""


def in_bounds(value: int | float) -> bool:
    """Whether `value` is finite and of magnitude at most MAX_METRIC."""
    try:
        return math.isfinite(value) and abs(value) <= MAX_METRIC
    except OverflowError:  # an int beyond any float
        return False


def number_shown(value: int | float | str) -> str:
    """A number as an error says it: as Python writes it (or as JSON text wrote it, given that text), or one of more
    than 40 digits or characters by its length."""
    if isinstance(value, str):
        return value if len(value) <= 40 else f"a number written in {len(value):,} characters"
    digits = len(str(abs(value))) if isinstance(value, int) else 0
    return f"an integer of {digits:,} digits" if digits > 40 else str(value)


def bounded(value: int | float) -> int | float:
    """`value`, refused (ValueError) unless `in_bounds`."""
    if not in_bounds(value):
        raise ValueError(f"a metric's value is a finite number of magnitude at most {MAX_METRIC:g}, not "
                         f"{number_shown(value)}")
    return value


def finite(value: float) -> float:
    """`value`, refused (ValueError) unless finite: a statistic of bounded values."""
    if not math.isfinite(value):
        raise ValueError(f"{value} is no statistic of a run's scores (a finite number)")
    return value


MAX_COUNT = 2**53 - 1
"""The largest count a record may hold (of answers, tokens, or a server's nanoseconds): the integers every JSON reader
keeps exactly, as a server's are taken (`execute.boundary.received`)."""


def tally(value: int) -> int:
    """`value`, refused (ValueError) unless a count of 0 to MAX_COUNT."""
    if value < 0:
        raise ValueError(f"{value} is no number of answers (0 or more)")
    if value > MAX_COUNT:
        raise ValueError(f"{number_shown(value)} is no number of answers (0 to 2^53 - 1)")
    return value



def shares(line: Any) -> Any:
    """A summary line (`core.records.MetricSummary`) whose metric is 0/1 (`binary`) with its mean, pass@k and
    majority@k shares, from 0 to 1, as every tally of 0/1 values gives them (Wilson's interval takes the mean for
    one), and its standard error not negative."""
    if line.stderr is not None and line.stderr < 0:
        raise ValueError(f"stderr {line.stderr} is no standard error (0 or more)")
    for name in ("mean", "pass_at_k", "majority_at_k") if line.binary else ():
        if (value := getattr(line, name)) is not None and not 0 <= value <= 1:
            raise ValueError(f"{name} {value} is no share of 0/1 values (from 0 to 1), as a 0/1 metric's must be")
    return line
