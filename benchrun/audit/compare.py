"""`compare RUN RUN [RUN ...]`: runs aligned by sample id against the first (the baseline).

For each other run: which manifest inputs differ (benchrun.audit.inputs: config keys, benchmark files, prompts and
references, scorers, formats, judges), then per task x metric the paired means, their difference, a p-value and a 95%
interval (see benchrun.audit.significance), the speed figures beside the baseline's with their ratio, and for 0/1
metrics the samples that flipped. A sweep directory stands for its jobs, in job order. A run with no responses is
named with its status and not compared; a run that did not finish is compared over the samples it answered, and
says so; one that shares no scored sample with the baseline is named as such and not compared, and when no run is
compared the command fails.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from typing import Any, Iterable

from pydantic import computed_field
from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchrun.archive.answerunit import answer_unit, figure_label
from benchrun.archive.reader import Run, Values
from benchrun.archive.sessions import mixed_judges, mixed_models
from benchrun.archive.speed import SIDE_BY_SIDE, figures, speed_of
from benchrun.audit import arguments, significance
from benchrun.audit.inputs import Inputs, ids, input_lines, inputs
from benchrun.audit.kinship import kinship
from benchrun.audit.lines import metric_lines as metric_lines_of
from benchrun.audit.named import one_each, runs_named
from benchrun.audit.show import check_known, check_task
from benchrun.console import output
from benchrun.console.visible import shown_name, visible
from benchrun.core.errors import EXIT, BenchrunError
from benchrun.core.frozen import Frozen
from benchrun.core.layout import UNFINISHED
from benchrun.core.manifest import Manifest
from benchrun.core.records import MetricSummary, Number, Speed


class RunRef(Frozen):
    id: str
    path: str
    label: str
    model: str
    manifest_id: str | None
    status: str
    answered: bool
    """Whether the run has any responses (a run without is named, not compared)."""
    note: str | None = None
    """What a reader must know first: the run has no responses, or did not finish (compared over the samples it
    answered), or more than one model answered it; None for a run that finished with one model's responses."""


class MetricKey(Frozen):
    task: str
    metric: str


class MetricLine(significance.Paired, MetricKey):
    """One task x metric (MetricKey's fields first: pydantic puts the last base's first) of a run against the
    baseline: the paired statistics over the samples both have a value for, and the samples that flipped."""

    to_1: tuple[str, ...] | None
    """0/1 metrics: the samples that went 0 -> 1."""
    to_0: tuple[str, ...] | None


class SpeedRatio(Frozen):
    """One speed figure of a run beside the baseline's."""

    figure: str
    """A key of benchrun.archive.speed.FIGURES: latency_p50_s, tokens_per_s, ..."""
    unit: str
    """What the rate counts (`rate_unit`): `answers` where either run asked each sample more than once."""
    baseline: float | None
    value: float | None
    ratio: float | None
    """value / baseline; None when either is missing or the baseline's is 0."""

    @computed_field
    @property
    def label(self) -> str:
        """The figure as printed (`figure_label`): its rate `answers/s` or `samples/s`."""
        return figure_label(self.figure, self.unit)


class Comparison(Frozen):
    run: RunRef
    inputs: Inputs | None
    """None when the run has no responses: nothing was compared."""
    metrics: tuple[MetricLine, ...]
    speed: tuple[SpeedRatio, ...] = ()

    @property
    def compared(self) -> bool:
        """Whether any sample was scored in both this run and the baseline."""
        return any(line.n for line in self.metrics)


class Report(Frozen):
    """The baseline, one comparison per other run, and how the statistics were computed."""

    baseline: RunRef
    comparisons: tuple[Comparison, ...]
    method: dict[str, Any]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="run directories, run id prefixes or sweep directories; the first run is the baseline")
    arguments.add_root(parser)
    parser.add_argument("--metric", metavar="NAME", help="only this metric")
    parser.add_argument("--task", metavar="NAME", help="only this task")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")


def main(args: argparse.Namespace) -> int:
    runs = runs_named(args.runs, args.root)
    report = compare(runs, metric=args.metric, task=args.task)
    if args.json:
        print(json.dumps(report.model_dump(mode="json"), indent=2))  # as every --json: a path not UTF-8 escaped
    else:
        print_report(report, output.stdout())
    return EXIT["ok"]


def compare(runs: list[Run], metric: str | None = None, task: str | None = None) -> Report:
    """Each run after the first against the first; `metric`/`task` keep only those lines."""
    if len(runs) < 2:
        raise BenchrunError(f"compare needs at least two runs (got {len(runs)}); a sweep directory gives its jobs")
    refs = [_ref(run.require_records()) for run in runs]
    baseline = runs[0]
    if not refs[0].answered:
        raise BenchrunError(f"the baseline, run {baseline.id} ({baseline.label}), has {refs[0].note}: nothing to "
                            "compare against", file=str(baseline.path))
    lines = [metric_lines_of(run) if ref.answered else [] for run, ref in zip(runs, refs)]
    if task is not None:
        check_task(runs, task)
    if metric is not None:
        check_known("metric", metric, runs, sorted({line.metric for found in lines for line in found}))
    _named_once(runs)
    base = side(baseline, lines[0])
    comparisons = tuple(_comparison(baseline, base, run, ref, found, metric, task)
                        for run, ref, found in zip(runs[1:], refs[1:], lines[1:]))
    if not any(comparison.compared for comparison in comparisons):
        raise BenchrunError("nothing to compare: " + "; ".join(
            f"run {c.run.id} ({c.run.label}) has {c.run.note}" for c in comparisons))
    return Report(baseline=refs[0], comparisons=comparisons, method=dict(significance.METHOD))


def _named_once(runs: list[Run]) -> None:
    """Each run named once (by its path, its id or as a sweep's job): a run compared with itself differs in nothing;
    and one run id in two folders (a copy) once, as the table names runs by their ids (`named.one_each`)."""
    seen: set[str] = set()
    for run in runs:
        if (where := os.path.realpath(run.path)) in seen:
            raise BenchrunError(f"run {run.id} ({shown_name(where)}) is named twice: a run compared with itself "
                                "differs in nothing; name each run once")
        seen.add(where)
    one_each(runs, "compare tells its runs apart by run id")


@dataclass(frozen=True)
class Side:
    """What a run brings to a comparison: its values, which of its metrics are shares of 0/1 answers, its speed."""

    values: Values
    proportions: set[tuple[str, str]]
    speed: Speed | None


def side(run: Run, lines: Iterable[MetricSummary]) -> Side:
    """The run's values and speed, and of its metric `lines` those whose mean is a share of independent 0/1
    answers (MetricSummary.proportion)."""
    return Side(run.metric_values(), {(line.task, line.metric) for line in lines if line.proportion}, speed_of(run))


def _comparison(baseline: Run, base: Side, run: Run, ref: RunRef, lines: list[MetricSummary], metric: str | None,
                task: str | None) -> Comparison:
    if not ref.answered:
        return Comparison(run=ref, inputs=None, metrics=())
    other = side(run, lines)
    found = metric_lines(base, other, baseline.manifest, metric, task)
    if not any(line.n for line in found):
        note = f"no sample scored in both it and the baseline, run {baseline.id}"
        return Comparison(run=ref.model_copy(update={"note": note}), inputs=inputs(baseline, run), metrics=found)
    if kin := kinship(baseline, run):
        ref = ref.model_copy(update={"note": "; ".join(filter(None, (ref.note, kin)))})
    return Comparison(run=ref, inputs=inputs(baseline, run), metrics=found,
                      speed=speed_ratios(base.speed, other.speed, rate_unit(baseline, run)))


def rate_unit(baseline: Run, run: Run) -> str:
    """What two runs' request rates count: `answers` where either asked each sample more than once, else `samples`."""
    return "answers" if "answers" in (answer_unit(baseline), answer_unit(run)) else "samples"


def speed_ratios(baseline: Speed | None, other: Speed | None, unit: str) -> tuple[SpeedRatio, ...]:
    """The side-by-side speed figures of a run and the baseline, with their ratio (run / baseline); the rate in
    `unit`s per second (`rate_unit`)."""
    base, run = figures(baseline), figures(other)
    return tuple(SpeedRatio(figure=key, unit=unit, baseline=base[key], value=run[key],
                            ratio=run[key] / base[key] if base[key] and run[key] is not None else None)
                 for key in SIDE_BY_SIDE)


def _ref(run: Run) -> RunRef:
    info = run.info
    answered = info.manifest_id is not None and next(run.responses(), None) is not None
    return RunRef(id=run.id, path=str(run.path), label=run.label, model=info.model, manifest_id=info.manifest_id,
                  status=info.status, answered=answered, note=status_note(run, answered))


def status_note(run: Run, answered: bool) -> str | None:
    """`no responses (status failed: why)`, `not finished (status interrupted: why); ...`, that more than one model
    answered (`answers from 2 models: ...`) or graded (`grades from 2 judge models: ...`), or None."""
    info = run.info
    state = info.status + (f": {info.reason}" if info.reason else "")
    if not answered:
        return f"no responses (status {state})"
    unfinished = f"not finished (status {state}); compared over the samples it answered"
    notes = (unfinished if info.status in UNFINISHED else None, mixed_models(run), mixed_judges(run))
    return "; ".join(note for note in notes if note) or None


def metric_lines(base: Side, other: Side, manifest: Manifest, metric: str | None,
                 task: str | None) -> tuple[MetricLine, ...]:
    """One line per task x metric of either run (baseline task order, metrics by name), filtered."""
    tasks = {t.name: i for i, t in enumerate(manifest.tasks)}
    order = {s.id: i for i, s in enumerate(manifest.samples)}
    keys = sorted(set(base.values) | set(other.values), key=lambda k: (tasks.get(k[0], len(tasks)), k))
    return tuple(metric_line(*key, base.values.get(key, {}), other.values.get(key, {}), order,
                             key in base.proportions and key in other.proportions)
                 for key in keys if metric in (None, key[1]) and task in (None, key[0]))


def metric_line(task: str, metric: str, base: dict[str, Number], other: dict[str, Number], order: dict[str, int],
                binary: bool) -> MetricLine:
    """The paired statistics of one task x metric, samples in the baseline manifest's order; `binary` when both
    runs' values are 0/1 answers (one per sample)."""
    ids = sorted((i for i in base if i in other), key=lambda i: (order.get(i, len(order)), i))
    stats = significance.paired([base[i] for i in ids], [other[i] for i in ids], binary)
    flips = stats.test == "mcnemar"
    return MetricLine(task=task, metric=metric, **dict(stats),
                      to_1=tuple(i for i in ids if base[i] < other[i]) if flips else None,
                      to_0=tuple(i for i in ids if base[i] > other[i]) if flips else None)


def print_report(report: Report, out: Console) -> None:
    """For each compared run: differing inputs, the metrics table, then the flipped samples."""
    base = report.baseline
    out.print(visible(f"baseline: {_named(base, True)}"), markup=False, soft_wrap=True)
    for comparison in report.comparisons:
        out.print(visible(f"\nvs {_named(comparison.run, comparison.compared)}"), markup=False, soft_wrap=True)
        if not comparison.compared:
            continue
        tables = [metrics_table(base, comparison), speed_table(base, comparison)]
        for line in input_lines(comparison.inputs) + tables + flip_lines(comparison.metrics):
            out.print(visible(line) if isinstance(line, str) else line, markup=False, soft_wrap=True)
    out.print(f"\np: {report.method['binary']} for 0/1 metrics, else {report.method['other']}; "
              f"95% CI: {report.method['interval']}", markup=False, soft_wrap=True)


def _named(run: RunRef, compared: bool) -> str:
    """`label id (path)`, and what a reader must know first (`: not compared: no responses (status failed: ...)`)."""
    named = f"{shown_name(run.label)} {run.id} ({shown_name(run.path)})"
    if not compared:
        return f"{named}: not compared: {run.note}"
    return f"{named}: {run.note}" if run.note else named


def metrics_table(base: RunRef, comparison: Comparison) -> Table:
    """task x metric: n paired, both means, the difference with its 95% interval, p-value and test."""
    table = Table(title=visible(f"{comparison.run.label} {comparison.run.id} vs baseline {base.label} {base.id}"),
                  title_justify="left")
    for column in ("task", "metric", "n", "baseline", comparison.run.label, "delta", "95% CI", "p", "test"):
        table.add_column(Text(visible(column)), justify="left" if column in ("task", "metric", "test") else "right")
    for line in comparison.metrics:
        ci = "-" if line.ci_low is None else f"[{output.number(line.ci_low, True)}, {output.number(line.ci_high, True)}]"
        table.add_row(*(Text(visible(name)) for name in (line.task, line.metric)), str(line.n),
                      output.number(line.baseline_mean), output.number(line.mean),
                      output.number(line.delta, True), ci,
                      "-" if line.p_value is None else f"{line.p_value:.4g}", line.test or "-")
    return table


def speed_table(base: RunRef, comparison: Comparison) -> Table:
    """Each side-by-side speed figure: the baseline's, the run's, and their ratio (`2.05x`)."""
    run = comparison.run
    title = visible(f"speed: {run.label} {run.id} vs baseline {base.label} {base.id}")
    table = Table(title=title, title_justify="left")
    for column in ("figure", "baseline", run.label, "ratio"):
        table.add_column(Text(visible(column)), justify="left" if column == "figure" else "right")
    for line in comparison.speed:
        table.add_row(line.label, output.figure(line.figure, line.baseline),
                      output.figure(line.figure, line.value), "-" if line.ratio is None else f"{line.ratio:.2f}x")
    return table


def flip_lines(metrics: Iterable[MetricLine]) -> list[str]:
    """For each 0/1 metric with flips: the counts b and c and the flipped sample ids."""
    lines = []
    for line in metrics:
        if line.b or line.c:
            lines.append(f"flipped {line.task} {line.metric}: b={line.b} (0->1), c={line.c} (1->0)")
            lines += [f"  0->1{ids(line.to_1)}"] if line.to_1 else []
            lines += [f"  1->0{ids(line.to_0)}"] if line.to_0 else []
    return lines
