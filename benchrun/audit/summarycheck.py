"""Whether a finished run's summary.json says what its score records do: show, list and compare read the one,
export and report the other, and a sealed run must read alike whichever reads it."""

from __future__ import annotations

import math

from benchrun.archive.reader import Run
from benchrun.audit.lines import tallied
from benchrun.core.records import MetricSummary

FIELDS = ("n", "errors", "mean", "stderr")
"""What a metric line says that its records make (as any benchrun wrote it: `binary` and `samples` came later)."""


def disagreement(run: Run) -> str | None:
    """The first metric line of summary.json that its score records do not make (`task/metric: ...`); None when
    every line is theirs, or the run has no summary.json."""
    if run.summary is None:
        return None
    written = {(line.task, line.metric): line for line in run.summary.metrics}
    found = {(line.task, line.metric): line for line in tallied(run)}
    for key in [*written, *(key for key in found if key not in written)]:
        if (why := _differs(written.get(key), found.get(key))) is not None:
            return f"{'/'.join(key)}: {why}: show, list and compare read it, export and report read the records"
    return None


def _differs(written: MetricSummary | None, found: MetricSummary | None) -> str | None:
    if written is None or found is None:
        return "in its score records, not in summary.json" if written is None else "in summary.json, not in its score records"
    for field in FIELDS:
        said, made = getattr(written, field), getattr(found, field)
        if (said is None) != (made is None) or (said is not None and not math.isclose(said, made, rel_tol=1e-9,
                                                                                        abs_tol=1e-12)):
            return f"summary.json's {field} is {said}, its score records make {made}"
    return None
