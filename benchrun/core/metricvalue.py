"""What a metric's value may be, wherever one enters or is read: a finite number of magnitude at most MAX_METRIC."""

from __future__ import annotations

import math
from typing import Annotated

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


def _bounded(value: int | float) -> int | float:
    if not in_bounds(value):
        shown = str(value) if len(str(value)) <= 40 else f"an integer of {len(str(value)):,} digits"
        raise ValueError(f"a metric's value is a finite number of magnitude at most {MAX_METRIC:g}, not {shown}")
    return value


MetricValue = Annotated[int | float, AfterValidator(_bounded)]
"""A metric's value as scores.jsonl may hold it: what a scorer may give (benchrun.compiler.scoring.metrics), so a
line edited to hold 1e308 or NaN is an invalid record where it is read, not an overflow in the statistics."""
