"""`export RUN ... --format csv|jsonl`: one row per sample x metric, the sample's values as columns."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import IO, Any, Iterator, Sequence

from benchrun.errors import EXIT
from benchrun.records import ErrorInfo, ScoreRecord
from benchrun.runs import DEFAULT_ROOT, Run, expand_runs

BASE_COLUMNS = ("run_id", "model", "manifest_id", "task", "sample_id", "scorer", "metric", "value", "error")
VALUE_PREFIX = "value."


def value_columns(runs: Sequence[Run]) -> list[str]:
    """`value.<name>` for every value name of the runs' samples, in order of first appearance."""
    names: dict[str, None] = {}
    for run in _compiled(runs):
        for sample in run.manifest_data()["samples"]:
            names.update(dict.fromkeys(sample["values"]))
    return [VALUE_PREFIX + name for name in names]


def _compiled(runs: Sequence[Run]) -> list[Run]:
    """The runs that have a manifest (a run that failed before it compiled has no samples)."""
    return [run.require_records() for run in runs if run.info.manifest_id is not None]


def columns(runs: Sequence[Run]) -> list[str]:
    return [*BASE_COLUMNS, *value_columns(runs), "reference"]


def scorer_metrics(run: Run) -> dict[tuple[str, str], list[str]]:
    """(task, scorer) -> the metric names its records give, so a failed scorer gets a row per metric."""
    found: dict[tuple[str, str], dict[str, None]] = {}
    for record in run.scores():
        if record.metrics is not None:
            found.setdefault((record.task, record.scorer), {}).update(dict.fromkeys(record.metrics))
    return {key: list(names) for key, names in found.items()}


def export_rows(run: Run) -> Iterator[dict[str, Any]]:
    """One row per score record x metric, in scores.jsonl order; a failed scorer's rows have no value and
    its error, one per metric the scorer gives elsewhere in the run (or one named after the scorer)."""
    samples = {s["id"]: s for s in run.manifest_data()["samples"]}
    metrics_of = scorer_metrics(run)
    info = run.info
    for record in run.scores():
        base = {"run_id": info.run_id, "model": info.model, "manifest_id": info.manifest_id, "task": record.task,
                "sample_id": record.id, "scorer": record.scorer}
        extra = _sample_columns(samples.get(record.id))
        for metric, value in _values(record, metrics_of):
            yield {**base, "metric": metric, "value": value, "error": _error(record.error), **extra}


def _values(record: ScoreRecord, metrics_of: dict[tuple[str, str], list[str]]) -> list[tuple[str, Any]]:
    if record.metrics is not None:
        return list(record.metrics.items())
    return [(metric, None) for metric in metrics_of.get((record.task, record.scorer)) or [record.scorer]]


def _sample_columns(sample: dict[str, Any] | None) -> dict[str, Any]:
    """The value columns and reference of a manifest sample (plain JSON data)."""
    if sample is None:
        return {"reference": None}
    return {**{VALUE_PREFIX + k: v for k, v in sample["values"].items()}, "reference": sample.get("reference")}


def _error(error: ErrorInfo | None) -> str | None:
    return None if error is None else str(error)


def write_csv(runs: Sequence[Run], out: IO[str]) -> int:
    """CSV with a header; empty cells for missing values, a list reference as JSON. Returns the row count."""
    writer = csv.DictWriter(out, fieldnames=columns(runs), lineterminator="\n")
    writer.writeheader()
    count = 0
    for run in _compiled(runs):
        for row in export_rows(run):
            writer.writerow({**row, "reference": _cell(row["reference"])})
            count += 1
    return count


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def write_jsonl(runs: Sequence[Run], out: IO[str]) -> int:
    """One JSON object per row, every row with the same keys (null where there is no value)."""
    empty = dict.fromkeys(columns(runs))
    count = 0
    for run in _compiled(runs):
        for row in export_rows(run):
            out.write(json.dumps({**empty, **row}, ensure_ascii=False) + "\n")
            count += 1
    return count


WRITERS = {"csv": write_csv, "jsonl": write_jsonl}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directory, run id prefix or sweep directory")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help=f"archive root for run ids "
                                                                       f"(default: {DEFAULT_ROOT})")
    parser.add_argument("--format", choices=sorted(WRITERS), default="csv", help="csv (default) or jsonl")
    parser.add_argument("--output", type=Path, help="write to this file (default: standard output)")


def main(args: argparse.Namespace) -> int:
    runs = [run for ref in args.runs for run in expand_runs(ref, args.root)]
    target = open(args.output, "w", encoding="utf-8", newline="") if args.output else nullcontext(sys.stdout)
    with target as out:
        WRITERS[args.format](runs, out)
    return EXIT["ok"]
