"""What a metric's value may be, wherever one enters or is read: a finite number of magnitude at most MAX_METRIC."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator

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


def _bounded(value: int | float) -> int | float:
    if not in_bounds(value):
        raise ValueError(f"a metric's value is a finite number of magnitude at most {MAX_METRIC:g}, not "
                         f"{number_shown(value)}")
    return value


MetricValue = Annotated[int | float, AfterValidator(_bounded)]
"""A metric's value as scores.jsonl may hold it: what a scorer may give (benchrun.compiler.scoring.metrics), so a
line edited to hold 1e308 or NaN is an invalid record where it is read, not an overflow in the statistics."""


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{value} is no statistic of a run's scores (a finite number)")
    return value


Statistic = Annotated[float, AfterValidator(_finite)]
"""A mean, standard error or estimate in summary.json: what a tally of bounded values gives, finite (a NaN or an
infinity written by a hand is refused where the file is read, never made into an interval)."""


MAX_COUNT = 2**53 - 1
"""The largest count a record may hold (of answers, tokens, or a server's nanoseconds): the integers every JSON reader
keeps exactly, as a server's are taken (`execute.boundary.received`)."""


def _tally(value: int) -> int:
    if value < 0:
        raise ValueError(f"{value} is no number of answers (0 or more)")
    if value > MAX_COUNT:
        raise ValueError(f"{number_shown(value)} is no number of answers (0 to 2^53 - 1)")
    return value


Tally = Annotated[int, AfterValidator(_tally)]
"""A number of answers or samples in summary.json, run.json or rescore.json: 0 to MAX_COUNT."""


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
