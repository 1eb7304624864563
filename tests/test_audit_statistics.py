"""The statistics of show and compare. Whether a metric is 0/1 is decided once, by the tally that writes summary.json:
show, compare and report read it from there, and scan the score records only for a run whose summary.json was
written before it was recorded. compare refuses a metric or task no run has."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.audit.compare import compare
from benchrun.audit.lines import MetricLines, metric_lines
from benchrun.audit.show import metric_rows
from benchrun.errors import BenchrunError
from benchrun.layout import SCORES, SUMMARY
from benchrun.runs import Run, load_run
from tests.test_audit_list_show import synthetic_run


def written_before_the_kinds(run_dir: Path) -> Path:
    """The run as benchrun wrote it before summary.json said which metrics are 0/1 (and their samples)."""
    summary = json.loads((run_dir / SUMMARY).read_text())
    for line in summary["metrics"]:
        line.pop("binary"), line.pop("samples", None)
    (run_dir / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n")
    return run_dir


def shares_of_0_1(run: Run) -> set[tuple[str, str]]:
    """The (task, metric)s for which compare uses McNemar's test, show Wilson's interval."""
    return {(line.task, line.metric) for line in metric_lines(run) if line.proportion}


def test_summary_json_says_which_metrics_are_0_1(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [0.5, 1, 0])
    text = (run_dir / SUMMARY).read_text()
    assert '''
  "metrics": [
    {
      "task": "t",
      "metric": "closeness",
      "n": 3,
      "mean": 0.5,
      "stderr": 0.28867513459481287,
      "errors": 0,
      "binary": false
    },
    {
      "task": "t",
      "metric": "format_valid",
      "n": 3,
      "mean": 1.0,
      "stderr": 0.0,
      "errors": 0,
      "binary": true
    }
  ],
''' in text


def test_show_of_a_finished_run_reads_no_score_record(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [0.5, 1, 0])
    before = metric_rows(load_run(run_dir))
    (run_dir / SCORES).write_text("not a score record\n")  # reading it would raise ArchiveError
    assert metric_rows(load_run(run_dir)) == before
    assert [(row.metric, row.interval.method) for row in before] == [("closeness", "t"), ("format_valid", "wilson")]


def test_a_summary_written_before_the_kinds_shows_as_it_always_did(tmp_path):
    for values in ([0, 1, 1], [0.25, 1.0, 0.5]):
        run_dir = synthetic_run(tmp_path / str(values), values)
        rows, kinds = metric_rows(load_run(run_dir)), shares_of_0_1(load_run(run_dir))
        old = load_run(written_before_the_kinds(run_dir))
        assert [line.binary for line in old.summary.metrics] == [None, None]
        assert metric_rows(old) == rows and shares_of_0_1(old) == kinds
    assert [(row.metric, row.interval.method) for row in rows] == [("closeness", "t"), ("format_valid", "wilson")]
    assert kinds == {("t", "format_valid")}


def test_the_scan_of_an_older_run_reads_the_scores_once_and_only_then(tmp_path):
    run_dir = written_before_the_kinds(synthetic_run(tmp_path / "run", [0, 1, 1]))
    lines = MetricLines(load_run(run_dir))
    records = list(lines.watch(load_run(run_dir).scores()))
    (run_dir / SCORES).write_text("not a score record\n")
    assert len(records) == 6
    assert [(line.metric, line.binary, line.n) for line in lines.lines()] == [("closeness", True, 3),
                                                                              ("format_valid", True, 3)]


def test_compare_refuses_a_metric_or_task_no_run_has(tmp_path):
    runs = [load_run(synthetic_run(tmp_path / name, [0, 1], run_id=name * 12)) for name in "ab"]
    with pytest.raises(BenchrunError) as metric:
        compare(runs, metric="closenes")
    with pytest.raises(BenchrunError) as task:
        compare(runs, task="u")
    assert (str(metric.value), str(task.value)) == (
        "no metric 'closenes' in any of the 2 runs (metrics: closeness, format_valid)",
        "no task 'u' in any of the 2 runs (tasks: t)")
    assert [line.metric for line in compare(runs, metric="closeness").comparisons[0].metrics] == ["closeness"]
