"""Whether a finished run's numbers (run.json's counts, summary.json's metric lines) are what its records make:
show and list read those, export and report the records, and a sealed run must read alike whichever reads it."""

from __future__ import annotations

import math

from benchrun.archive.books import Books
from benchrun.archive.reader import Run
from benchrun.archive.trust import seal_broken
from benchrun.core.errors import ArchiveError
from benchrun.core.layout import RUN, SUMMARY
from benchrun.core.records import Counts, MetricSummary

FIELDS = ("n", "errors", "mean", "stderr")
"""What a metric line says that its records make (as any benchrun wrote it: `binary` and `samples` came later)."""
READ = "show, list and compare read it, export and report read the records"


def books_for(run: Run) -> Books | None:
    """Empty books to keep a finished run's records in as verify reads them (`trust.unreadable`); None when there is
    nothing to check them against: the run has not ended (its counts are those it started with), a file is unreadable
    (verify says so), or its seal does not cover its run.json (verify says so already: its numbers are no writer's)."""
    try:
        seal, summary, manifest = run.seal, run.summary, run.manifest
    except ArchiveError:
        return None
    if summary is None or run.info.manifest_id is None or seal is None or seal_broken(run, seal):
        return None
    return Books(manifest, shard=run.info.shard)  # as its writer kept them (`counts_of`)


def disagreement(run: Run, books: Books) -> tuple[str, str] | None:
    """The first of run.json's counts and summary.json's metric lines that the run's records, kept in `books`, do not
    make, as (file, `what: why`); None when all are theirs."""
    made = books.counts()
    for field in Counts.model_fields:
        if (said := getattr(run.info.counts, field)) != getattr(made, field):
            return RUN, f"counts.{field} is {said}, its records make {getattr(made, field)}: {READ}"
    written = {(line.task, line.metric): line for line in run.summary.metrics} if run.summary else {}
    found = {(line.task, line.metric): line for line in books.tally.summaries()}
    for key in [*written, *(key for key in found if key not in written)]:
        if (why := _differs(written.get(key), found.get(key))) is not None:
            return SUMMARY, f"{'/'.join(key)}: {why}: {READ}"
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
