"""`show RUN`: a run's provenance, per task x metric table with 95% intervals, and speed; `--samples` for each
sample, with its reference; `--task` keeps one task in the samples and metrics (and leaves out the speed, a figure
of the whole run). `show RUN [RUN ...] --wrong METRIC`: the samples below 1 on a metric in any of the runs, side
by side."""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import IO, Any, Iterable, Iterator, Sequence

from rich.table import Table
from rich.text import Text

from benchrun.archive.answerunit import answer_unit, figure_label
from benchrun.archive.reader import Run
from benchrun.archive.rows import joined
from benchrun.archive.speed import speed_of
from benchrun.audit import arguments
from benchrun.audit.heading import header
from benchrun.audit.intervals import MetricRow, grade_bounds, with_intervals
from benchrun.audit.judged import agreement_table, agreements, call_lines, calls_by_answer
from benchrun.audit.lines import MetricLines
from benchrun.audit.listing import read_as, task_names
from benchrun.audit.named import one_each, runs_named
from benchrun.console import output
from benchrun.console.long_tables import Row, print_table
from benchrun.console.visible import shown_name, visible
from benchrun.core.errors import EXIT, BenchrunError
from benchrun.core.layout import FORMAT_VALID
from benchrun.core.manifest import Message, Reference, Turn, preamble
from benchrun.core.records import (
    JudgementRecord,
    MetricSummary,
    Number,
    ResponseRecord,
    ScoreRecord,
    Speed,
    answer_name,
)
from benchrun.core.text import counted

CALCULATED = "calculated"
"""What a sample's reference is shown as when the scorer computes it from the sample's values (none is stored)."""
EXCERPT = 40
"""Characters of a prompt shown by --wrong."""


def metric_rows(run: Run, task: str | None = None) -> list[MetricRow]:
    """Per task x metric (of `task` only, if given): n, mean, stderr, errors (as in summary.json) and the 95%
    interval; a run that does not match the digests written with it is refused (`Run.require_records`)."""
    return with_intervals(MetricLines(run.require_records()).lines(task), grade_bounds(run))


def check_task(runs: Sequence[Run], task: str) -> None:
    """Refuse a task that none of the runs has, naming the tasks they have."""
    check_known("task", task, runs, (name for run in runs for name in task_names(run)))


def check_known(kind: str, name: str, runs: Sequence[Run], known: Iterable[str]) -> None:
    """Refuse a `kind` (task, metric) `name` that none of the runs has, in one line naming those they have (in the
    order of `known`)."""
    known = list(dict.fromkeys(known))
    if name not in known:
        which = f"run {runs[0].id}" if len(runs) == 1 else f"any of the {len(runs)} runs"
        raise BenchrunError(f"no {kind} '{name}' in {which} ({kind}s: {', '.join(known) or 'none'})")


def reference_text(reference: Reference) -> str:
    """A sample's reference as JSON (`"at"`, `6`, `["a", "b"]`), or `calculated` when none is stored."""
    return CALCULATED if reference is None else json.dumps(reference, ensure_ascii=False)


@dataclass(frozen=True)
class SampleView:
    """One answered sample: its prompt and reference (from the manifest), the response record, its judge calls
    and its score records."""

    prompt: str | None
    reference: Reference
    """None when the scorer computes it (`calculated`)."""
    response: ResponseRecord
    scores: list[ScoreRecord]
    judgements: list[JudgementRecord] = field(default_factory=list)
    before: tuple[Message, ...] = ()
    """The messages sent before the prompt: the task's system prompt and few-shot turns."""

    def to_json(self) -> dict[str, Any]:
        calls = {"judgements": [c.model_dump(mode="json") for c in self.judgements]} if self.judgements else {}
        turns = {"before_prompt": list(self.before)} if self.before else {}
        return {"id": self.response.id, "task": self.response.task, **turns, "prompt": self.prompt,
                "reference": self.reference, "response": self.response.model_dump(mode="json"),
                "scores": [s.model_dump(mode="json") for s in self.scores], **calls}


def is_failed(response: ResponseRecord, scores: Iterable[ScoreRecord]) -> bool:
    """The request failed, or a scorer raised (error set), or the response did not fit its format (format_valid 0)."""
    return response.error is not None or any(
        s.error is not None or (s.scorer == FORMAT_VALID and s.metrics == {FORMAT_VALID: 0}) for s in scores)


def samples(run: Run, task: str | None = None, failed: bool = False,
            scan: MetricLines | None = None) -> Iterator[SampleView]:
    """The run's answered samples in record order, optionally of one task and only the failed ones; `scan`
    watches every score record on the way (so the metrics need no second pass). A run that does not match the
    digests written with it is refused (`Run.require_records`)."""
    if run.require_records().info.manifest_id is None:
        return
    data = run.manifest_data()
    manifest = {s["id"]: s for s in data["samples"] if task is None or s["task"] == task}
    chats = {t["name"]: tuple(preamble(t.get("system"), [Turn(**turn) for turn in t.get("fewshot", ())]))
             for t in data["tasks"]}
    records = run.scores() if scan is None else scan.watch(run.scores())
    calls = calls_by_answer(run)
    for response, scores in joined(run.responses(), records):
        if (task is None or response.task == task) and (not failed or is_failed(response, scores)):
            sample = manifest.get(response.id, {})
            yield SampleView(sample.get("prompt"), sample.get("reference"), response, scores,
                             calls.get((response.id, response.repeat), []), chats.get(response.task, ()))
    deque(records, maxlen=0)


def metrics_table(rows: list[MetricRow], consistency: dict[str, float] | None = None) -> Table:
    """task x metric: n, mean, 95% interval (Wilson, Wilson on the effective n, or t), errors; with repeats also
    pass@k, majority@k and each task's consistency."""
    repeated = bool(consistency) or any(row.pass_at_k is not None for row in rows)
    kind = "wilson for 0/1 metrics (wilson-kg: on the effective n of repeats)" if repeated else "wilson for 0/1 metrics"
    table = Table(title=f"metrics (95% intervals: {kind}, t otherwise)", title_justify="left")
    columns = ["task", "metric", "n", "mean", "95% interval", "method", "errors"]
    for column in columns + (["pass@k", "majority@k", "consistency"] if repeated else []):
        table.add_column(column, justify="left" if column in ("task", "metric", "method") else "right")
    for row in rows:
        span = f"{output.number(row.interval.low)}–{output.number(row.interval.high)}" if row.interval else "-"
        cells = [Text(visible(row.task)), Text(visible(row.metric)), str(row.n), output.number(row.mean), span,
                 row.interval.method if row.interval else "-", str(row.errors)]
        if repeated:
            cells += [output.number(row.pass_at_k), output.number(row.majority_at_k),
                      output.number((consistency or {}).get(row.task))]
        table.add_row(*cells)
    return table


def speed_section(speed: Speed | None, unit: str = "samples") -> Table | str:
    """Every speed figure of the whole run (answers from the cache or carried over left out), its rate in `unit`s
    (`answer_unit`), or why there are none."""
    if speed is None or not speed.n + speed.failed:
        return "speed: none (no request was asked in this run)"
    table = Table(title=f"speed ({counted(speed.n, 'answer')}, {speed.failed} failed)", title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, text in output.speed_cells(speed).items():
        table.add_row(figure_label(key, unit), text)
    return table


def sample_text(view: SampleView) -> str:
    """One sample as indented lines: id and task, prompt, reference, response (or its error), one line per
    scorer."""
    response = view.response
    lines = [f"{answer_name(response.id, response.repeat)}  [{response.task}]",
             *(f"  {m['role']:<9} {_indented(m['content'])}" for m in view.before),
             f"  prompt    {_indented(view.prompt or '-')}", f"  reference {_indented(reference_text(view.reference))}"]
    if response.error is None:
        lines.append(f"  response  {_indented(response.text or '')}")
    else:
        attempts = f"{response.attempts} attempt{'s' * (response.attempts != 1)}"
        lines.append(f"  response  none: {response.error} (after {attempts})")
    lines += call_lines(view.judgements)
    lines += [f"  score     {_score_text(s)}" for s in view.scores]
    return "\n".join(lines)


def _indented(text: str) -> str:
    return text.replace("\n", "\n" + " " * 12)


def _score_text(score: ScoreRecord) -> str:
    if score.error is not None:
        return f"{score.scorer}: error {score.error}"
    values = "  ".join(f"{k}={v}" for k, v in (score.metrics or {}).items())
    return values + (f"  ({score.detail})" if score.detail else "")


def print_samples(views: Iterable[SampleView], out: IO[str]) -> int:
    """Each sample's text (its control characters made visible), a blank line between; how many were printed."""
    count = 0
    for view in views:
        out.write(("\n" if count else "") + visible(sample_text(view)) + "\n")
        count += 1
    return count


def write_json(run: Run, views: Iterable[SampleView] | None, scan: MetricLines, task: str | None,
               out: IO[str]) -> None:
    """One JSON object: path, how list lists the run (`read_as`), run.json, the samples if asked (streamed, one at a
    time), then the metrics (of `task` only, if given) or the metrics and the run's speed."""
    out.write(json.dumps({"path": str(run.path), **read_as(run), "run": run.info.model_dump(mode="json")})[:-1])
    if views is not None:
        out.write(', "samples": [')
        for i, view in enumerate(views):
            out.write(("," if i else "") + "\n" + json.dumps(view.to_json()))
        out.write("\n]")
    repeated = {"consistency": scan.consistency(task), "consistency_samples": scan.consistency_samples(task)}
    rows = with_intervals(scan.lines(task), grade_bounds(run))
    out.write(', "metrics": ' + json.dumps([row.to_json() for row in rows], indent=2))
    if repeated["consistency"]:
        out.write(", " + json.dumps({key: found for key, found in repeated.items() if found})[1:-1])
    judges = agreements(run)
    if judges:
        out.write(', "judges": ' + json.dumps({name: j.model_dump(mode="json") for name, j in judges.items()}))
    if task is None:
        speed = speed_of(run)
        out.write(', "speed": ' + json.dumps(None if speed is None else speed.model_dump(mode="json"), indent=2))
    out.write("}\n")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="run directory or run id prefix (several, or a sweep directory, with --wrong)")
    arguments.add_root(parser)
    parser.add_argument("--samples", action="store_true",
                        help="also list each sample (prompt, response, scores), before the metrics table")
    parser.add_argument("--failed", action="store_true",
                        help="only samples whose request failed, whose scorer raised, or whose response did not "
                             "fit its format (format_valid 0); implies --samples")
    parser.add_argument("--task", help="only this task, in the samples and the metrics; implies --samples")
    parser.add_argument("--wrong", metavar="METRIC",
                        help="list the samples whose value on METRIC is below 1 in any of the runs, one column per "
                             "run; not with --samples or --failed")
    parser.add_argument("--json", action="store_true",
                        help="print JSON: path, run, samples (with --samples), metrics, speed (without --task)")


def main(args: argparse.Namespace) -> int:
    runs = [run.require_records().require_manifest() for run in runs_named(args.runs, args.root)]
    if args.task is not None:  # given empty too (`--task "$T"`, T unset): it names no task, never every task
        check_task(runs, args.task)
    if args.wrong is not None:
        if args.samples or args.failed:
            raise BenchrunError("--wrong lists samples side by side across runs; it takes no --samples or --failed")
        return show_wrong(runs, args.wrong, args.task, args.json)
    if len(runs) > 1:
        raise BenchrunError(f"show takes one run ({len(runs)} given); several go side by side with --wrong METRIC")
    return show_one(runs[0], args)


def show_one(run: Run, args: argparse.Namespace) -> int:
    """The header, the samples if asked and the metrics table, of `args.task` only if given; else then the run's
    speed (a figure of the whole run)."""
    scan = MetricLines(run)
    views = samples(run, args.task, args.failed, scan) if args.samples or args.failed or args.task is not None else None
    if args.json:
        write_json(run, views, scan, args.task, sys.stdout)
        return EXIT["ok"]
    out = output.stdout()
    out.print(header(run))
    if views is not None:
        out.print()
        out.file.flush()
        shown = print_samples(views, sys.stdout)
        out.print(("\n" if shown else "") + f"{shown} {answer_unit(run)} shown" + (" (failed only)" if args.failed else ""))
    found = with_intervals(scan.lines(args.task), grade_bounds(run))
    out.print()
    out.print(metrics_table(found, scan.consistency(args.task)) if found else "metrics: none (no score records)")
    for said in output.at_k_note(found) + output.consistency_note(scan.consistency_samples(args.task)):
        out.print(said)
    judges = agreements(run)
    if judges:
        out.print()
        out.print(agreement_table(judges))
    if args.task is None:
        out.print()
        out.print(speed_section(speed_of(run), answer_unit(run)))
    return EXIT["ok"]


@dataclass(frozen=True)
class WrongSample:
    """A sample below 1 on a metric in at least one run, with each run's value (None: no value in that run)."""

    id: str
    task: str
    prompt: str
    reference: Reference
    values: dict[str, Number | None]
    """Run id -> the sample's value on the metric."""
    asked_otherwise: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Run id -> the prompt and reference that run asked the sample with, where they are not `prompt` and `reference`
    (the first run's): the benchmark was edited between the runs. Left out of the JSON when empty."""


def wrong_samples(runs: Sequence[Run], metric: str, task: str | None = None) -> list[WrongSample]:
    """The samples (of `task`, if given) whose value on `metric` is below 1 in any of `runs`, in manifest order
    (the first run's, then samples only later runs have). An unknown metric is refused, naming those there are."""
    compiled = [run for run in runs if run.info.manifest_id is not None]
    runs = one_each(runs, WRONG_COLUMNS)
    values = {run.id: run.metric_values() for run in compiled}
    check_known("metric", metric, runs, sorted({name for found in values.values() for _, name in found}
                                               | {line.metric for run in compiled for line in _lines(run)}))
    manifest: dict[str, dict[str, Any]] = {}
    otherwise: dict[str, dict[str, dict[str, Any]]] = {}
    for run in compiled:
        for sample in run.manifest_data()["samples"]:
            if (asked := _asked(sample)) != _asked(manifest.setdefault(sample["id"], sample)):
                otherwise.setdefault(sample["id"], {})[run.id] = asked
    found = []
    for sample in manifest.values():
        by_run = {run_id: got.get((sample["task"], metric), {}).get(sample["id"]) for run_id, got in values.items()}
        if task in (None, sample["task"]) and any(v is not None and v < 1 for v in by_run.values()):
            found.append(WrongSample(sample["id"], sample["task"], sample["prompt"], sample.get("reference"), by_run,
                                     otherwise.get(sample["id"], {})))
    return found


def _lines(run: Run) -> tuple[MetricSummary, ...]:
    """The metric lines of a run's summary (none before it has one): a metric whose every sample failed has one, and
    no value."""
    return run.summary.metrics if run.summary is not None else ()


def _asked(sample: dict[str, Any]) -> dict[str, Any]:
    return {"prompt": sample["prompt"], "reference": sample.get("reference")}


WRONG_COLUMNS = "--wrong shows each run in a column of its id"


def wrong_table(runs: Sequence[Run], metric: str, count: int, rows: Sequence[Row]) -> Table:
    """The table of `count` samples below 1 with `rows` (some or all of them): sample, task, the prompt's start,
    reference, then one column per run (its label and id) with its value."""
    table = Table(title=f"{count} sample{'s' * (count != 1)} below 1 on {shown_name(metric)}", title_justify="left")
    for column in ("sample", "task", "prompt", "reference"):
        table.add_column(column, overflow="fold")
    for run in runs:
        table.add_column(Text(visible(f"{run.label}\n{run.id}")), justify="right")
    for row in rows:
        table.add_row(*row)
    return table


def wrong_row(runs: Sequence[Run], sample: WrongSample) -> Row:
    """One sample's cells in `wrong_table`."""
    cells = (sample.id, sample.task, _as_asked(sample, "prompt", excerpt), _as_asked(sample, "reference", reference_text))
    return *(Text(visible(cell)) for cell in cells), *(_value(sample.values.get(run.id)) for run in runs)


def _as_asked(sample: WrongSample, key: str, shown: Any) -> str:
    """The sample's prompt or reference as the first run asked it, then as each run that asked it otherwise did."""
    first = getattr(sample, key)
    return "\n".join([shown(first), *(f"(run {run_id}: {shown(asked[key])})" for run_id, asked in
                                      sample.asked_otherwise.items() if asked[key] != first)])


def excerpt(text: str, width: int = EXCERPT) -> str:
    """The text on one line (white space folded), cut to `width` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[:width - 1] + "…"


def _value(value: Number | None) -> str:
    return "-" if value is None else json.dumps(value)


def show_wrong(runs: Sequence[Run], metric: str, task: str | None, as_json: bool) -> int:
    """The --wrong table (or JSON), each run once."""
    runs = one_each(runs, WRONG_COLUMNS)
    found = wrong_samples(runs, metric, task)
    if as_json:
        print(json.dumps({"metric": metric, "task": task,
                          "runs": [{"run_id": run.id, "label": run.label, "path": str(run.path)} for run in runs],
                          "samples": [{key: value for key, value in asdict(sample).items()
                                       if key != "asked_otherwise" or value} for sample in found]},
                         indent=2, ensure_ascii=False))
    else:
        print_table(output.stdout(), partial(wrong_table, runs, metric, len(found)),
                    [wrong_row(runs, sample) for sample in found])
    return EXIT["ok"]
