"""The records' types of a metric's value, a statistic and a count: `core.metricvalue`'s checks as pydantic runs them
where a record is read."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from benchrun.core.metricvalue import bounded, finite, tally

MetricValue = Annotated[int | float, AfterValidator(bounded)]
"""A metric's value as scores.jsonl may hold it: what a scorer may give (benchrun.compiler.scoring.metrics), so a
line edited to hold 1e308 or NaN is an invalid record where it is read, not an overflow in the statistics."""
Statistic = Annotated[float, AfterValidator(finite)]
"""A mean, standard error or estimate in summary.json: what a tally of bounded values gives, finite (a NaN or an
infinity written by a hand is refused where the file is read, never made into an interval)."""
Tally = Annotated[int, AfterValidator(tally)]
"""A number of answers or samples in summary.json, run.json or rescore.json: 0 to MAX_COUNT."""
