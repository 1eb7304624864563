"""What a rescore wrote and found: the shape of rescore.json, the means and sample values that changed, the scorers'
errors, and how they are printed."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchrun.audit.judged import judge_identity
from benchrun.console import output
from benchrun.console.visible import shown_name, visible
from benchrun.core.frozen import Frozen
from benchrun.core.manifest import Manifest
from benchrun.core.records import Counts, FileDigest, Number, answer_name
from benchrun.core.recordvalues import Seconds, Version
from benchrun.core.text import counted

SHOWN = 20
"""Changed samples printed on a terminal (--json lists them all)."""
RESCORE_NUMBERS = 10**9
"""A rescore's number is below this: a folder of a larger one under rescores/ (255 digits, planted) is no rescore's
to count on from, whose next number would make a name the file system refuses, and no rescore could be made."""


class ScorerUsed(Frozen):
    """One scorer of a rescore: where its code came from and the hashes of that code."""

    name: str
    origin: str
    """`builtin`, or the absolute path of the scorer file."""
    origin_sha256: str | None
    """The sha256 of the scorer file (None for a built-in)."""
    sha256: str
    """The sha256 of the function's source, as in the manifest's scorers."""
    run_sha256: str | None
    """The sha256 the run's manifest gives for this scorer (None when the run did not use it)."""
    tasks: tuple[str, ...]


class ModuleUsed(Frozen):
    """A module beside a scorer file that the file imported (`from helpers import same`): code that scored, whose
    change a scorer's own sha256 does not show."""

    path: str
    """Its absolute path."""
    sha256: str
    run_sha256: str | None
    """The sha256 the run's manifest gives for it (None when the run's benchmark did not import it)."""


class RescoreInfo(Frozen):
    """rescore.json: which scorers scored which run, when, and with which benchrun."""

    schema_version: Version = 1
    rescore: str
    """The rescore's number (its directory name), e.g. 001."""
    run_id: str
    manifest_id: str
    created_at: str
    """When it was written, its scores made."""
    benchrun: str | None
    selected: tuple[str, ...] | None
    """The --scorer names, or None when every task was scored with its own scorers."""
    scorers: tuple[ScorerUsed, ...]
    counts: Counts
    files: dict[str, FileDigest]
    judge: dict[str, Any] | None = Field(None, exclude_if=lambda judge: judge is None)
    """With --rejudge: the judge model asked again (its identity and its runner config as used)."""
    unverified: tuple[str, ...] = Field((), exclude_if=lambda found: not found)
    """With --force: what of the run's records did not verify when they were scored (`file: why`)."""
    modules: tuple[ModuleUsed, ...] = Field((), exclude_if=lambda modules: not modules)
    """The modules the scorer files imported from their own folders, as they were when scored."""
    started_at: str | None = Field(None, exclude_if=lambda started: started is None)
    """When it began scoring: its own judge calls (rejudged) were asked from then to `created_at` (a benchrun before
    the thirty-sixth hostile pass gives none)."""
    clock_stepped_back_s: Seconds | None = Field(None, exclude_if=lambda behind: behind is None)
    """How far the wall clock went back while it scored (`archive.clockstep`), which its span is read with."""

    @field_validator("judge")
    @classmethod
    def _judged_some_times(cls, judge: dict[str, Any] | None) -> dict[str, Any] | None:
        repeats = (judge or {}).get("repeats", 1)
        if type(repeats) is not int or repeats < 1:
            raise PydanticCustomError("judge_repeats", "judge.repeats is {given}: a judge is asked a whole number of "
                                      "times, 1 or more", {"given": json.dumps(repeats)})
        return judge

    def graded(self, manifest: Manifest) -> Manifest:
        """The run's `manifest` as this rescore graded with it: rejudged, its judge asked as many times an answer as
        it says (`judge.repeats`), which its judges' agreement is over."""
        if self.judge is None or manifest.judge is None or "repeats" not in self.judge:
            return manifest
        judge = manifest.judge.model_copy(update={"repeats": self.judge["repeats"]})
        return manifest.model_copy(update={"judge": judge})


class MeanChange(Frozen):
    """One task x metric of the new summary beside the run's own."""

    task: str
    metric: str
    old: float | None
    new: float | None
    delta: float | None
    old_n: int
    """The values the run's mean is over (a scorer error or failed request has none)."""
    new_n: int
    """The values the new mean is over: fewer than old_n where the new scorer raised on some."""


class SampleChange(Frozen):
    """A sample whose metric value changed; a value is None when there is none (error or not scored)."""

    id: str
    task: str
    repeat: int = 0
    metric: str
    old: Number | None
    new: Number | None
    old_error: str | None = None
    new_error: str | None = None


class ScorerFailure(Frozen):
    """A scorer that raised on an answered sample (no value: its error is in scores.jsonl)."""

    id: str
    task: str
    repeat: int = 0
    scorer: str
    error: str


class Rescore(Frozen):
    """What a rescore wrote, what changed against the run's own scores, and what its scorers raised."""

    dir: str
    info: RescoreInfo
    means: tuple[MeanChange, ...]
    changed: tuple[SampleChange, ...]
    errors: tuple[ScorerFailure, ...]
    """One per score line whose scorer raised on a response (a failed request is not a scorer's error); as many as
    info.counts.scorer_errors."""


def covers_fewer(info: RescoreInfo, held: int) -> str | None:
    """Said of a rescore made while its run was unfinished, of a run holding `held` answers now (resumed since): its
    numbers are of the answers there when it was made."""
    if info.counts.responses >= held:
        return None
    return (f"scored {counted(info.counts.responses, 'answer')}, those its run held when it was made; the run holds "
            f"{held} now: "
            "its numbers cover those only (rescore again to score them all)")


def print_rescore(result: Rescore, out: Console) -> None:
    """The means old -> new, the samples whose value changed and the scorer errors (at most SHOWN of each), the
    scorers and modules whose code is not the run's, then where it was written."""
    out.print(means_table(result))
    if (counts := result.info.counts).responses < counts.samples:
        out.print(f"scored {counts.responses} of the {counts.samples} answers the run asks: it holds no more yet "
                  "(rescore again once it does)", markup=False, soft_wrap=True)
    if result.info.judge:  # the judges' new means are another judge model's grades when it was asked of another
        out.print(visible(f"judged again by {judge_identity(result.info.judge)} (old mean: the run's judge, "
                          "as show names it)"), markup=False, soft_wrap=True)
    changes = [f"{answer_name(c.id, c.repeat)} {c.metric}: {_value(c.old, c.old_error)} -> {_value(c.new, c.new_error)}"
               for c in result.changed]
    _print_list(out, f"{len(changes)} sample values changed", changes)
    failures = [f"{answer_name(e.id, e.repeat)} {e.scorer}: {e.error}" for e in result.errors]
    _print_list(out, f"{len(failures)} scorer errors", failures)
    if changed := [s.name for s in result.info.scorers if s.run_sha256 is not None and s.sha256 != s.run_sha256]:
        out.print(visible(f"scorers whose code is not the run's: {', '.join(changed)}"), markup=False, soft_wrap=True)
    if others := [module.path for module in result.info.modules if module.sha256 != module.run_sha256]:
        out.print(visible(f"modules the scorers import that are not the run's: {', '.join(others)}"), markup=False,
                  soft_wrap=True)
    out.print(visible(f"rescore {result.info.rescore} written to {shown_name(str(result.dir))}"), markup=False,
              soft_wrap=True)


def _print_list(out: Console, title: str, lines: list[str]) -> None:
    """A count, then at most SHOWN of its lines indented."""
    for line in [title, *(f"  {line}" for line in lines[:SHOWN])]:
        out.print(visible(line), markup=False, soft_wrap=True)
    if len(lines) > SHOWN:
        out.print(f"  ... and {len(lines) - SHOWN} more (--json lists them all)", markup=False, soft_wrap=True)


def means_table(result: Rescore) -> Table:
    """task x metric: the run's mean, the rescore's mean, the difference, and the values each is over (`4 -> 1`
    where they differ: the two means are then not of the same answers)."""
    table = Table(title=visible(f"rescore {result.info.rescore} of run {result.info.run_id}"), title_justify="left")
    for column in ("task", "metric", "old mean", "new mean", "delta", "n"):
        table.add_column(column, justify="left" if column in ("task", "metric") else "right")
    for line in result.means:
        n = str(line.new_n) if line.old_n == line.new_n else f"{line.old_n} -> {line.new_n}"
        table.add_row(*(Text(visible(name)) for name in (line.task, line.metric)), output.number(line.old),
                      output.number(line.new), output.number(line.delta, True), n)
    return table


def _value(value: Number | None, error: str | None) -> str:
    if value is not None:
        return json.dumps(value)
    return f"error ({error})" if error else "-"
