"""The statistics of show and compare. Whether a metric is 0/1 is decided once, by the tally that writes summary.json:
show, compare and report read it from there, and scan the score records only for a run whose summary.json was
written before it was recorded. compare refuses a metric or task no run has."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from benchrun.archive.reader import Run, load_run
from benchrun.audit import significance
from benchrun.audit.compare import compare
from benchrun.audit.lines import MetricLines, metric_lines
from benchrun.audit.show import metric_rows
from benchrun.audit.stats import wilson
from benchrun.core.errors import BenchrunError
from benchrun.core.layout import SCORES, SUMMARY
from benchrun.testing.inprocess import cli
from tests.helpers.archives import reseal, synthetic_run


def written_before_the_kinds(run_dir: Path) -> Path:
    """The run as benchrun wrote it before summary.json said which metrics are 0/1 (and their samples)."""
    summary = json.loads((run_dir / SUMMARY).read_text())
    for line in summary["metrics"]:
        line.pop("binary"), line.pop("samples", None)
    (run_dir / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n")
    reseal(run_dir, SUMMARY)
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


def test_show_of_a_finished_run_reads_no_score_record(tmp_path, monkeypatch):
    run_dir = synthetic_run(tmp_path / "run", [0.5, 1, 0])
    before = metric_rows(load_run(run_dir))
    monkeypatch.setattr(Run, "scores", lambda run: pytest.fail("a score record was read"))
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


# -- the digits compare --json and show --json print for fixed inputs ----------------------------------------------

PAIRED = {  # name: (baseline values, compared values) of one metric on the same samples
    "mcnemar, 350 discordant": ([1] * 200 + [0] * 150 + [1] * 50, [0] * 200 + [1] * 150 + [1] * 50),
    "mcnemar, 4 discordant": ([1, 1, 0, 1, 0, 0], [0, 1, 1, 1, 1, 1]),
    "exact permutation": ([0.5, 0.25, 0.125, 1.0, 0.75, 0.0], [0.625, 0.25, 0.5, 0.875, 1.0, 0.25]),
    "few distinct differences": ([0.25 * (i % 4) for i in range(40)], [0.25 * (i * 7 % 5) for i in range(40)]),
    "many distinct differences": ([round(float(x), 6) for x in np.random.default_rng(3).random(200)],
                                  [round(float(x), 6) for x in np.random.default_rng(4).random(200)]),
}
PRINTED = {  # name: (n, delta, test, p_value, ci_low, ci_high, b, c) as compare --json prints them
    "mcnemar, 350 discordant": (400, -0.125, "mcnemar", 0.008720036530555949, -0.215, -0.035, 150, 200),
    "mcnemar, 4 discordant": (6, 0.3333333333333333, "mcnemar", 0.625, -0.3333333333333333, 0.8333333333333334, 3,
                              1),
    "exact permutation": (6, 0.14583333333333334, "permutation", 0.1875, 0.0, 0.2708333333333333, None, None),
    "few distinct differences": (40, 0.125, "permutation", 0.1131886811318868, -0.0125, 0.2625, None, None),
    "many distinct differences": (200, 0.038469585, "permutation", 0.15658434156584342,
                                  -0.015470549624999988, 0.09098023237499994, None, None),
}


@pytest.mark.parametrize("name", PAIRED)
def test_compare_json_prints_these_digits(tmp_path, name):
    dirs = [synthetic_run(tmp_path / side, values, run_id=side * 12) for side, values in zip("ab", PAIRED[name])]
    result = cli("compare", *map(str, dirs), "--json", "--metric", "closeness", cwd=tmp_path, module="benchrun.audit")
    [line] = json.loads(result.stdout)["comparisons"][0]["metrics"]
    assert tuple(line[key] for key in ("n", "delta", "test", "p_value", "ci_low", "ci_high", "b", "c")) == \
        PRINTED[name]


@pytest.mark.parametrize("values,low,high", [
    ([1, 0, 1], 0.20765960080204782, 0.9385080552796038),
    ([1, 0] * 50, 0.4038315303659957, 0.5961684696340044),
    ([0] * 5, 0.0, 0.43448246478317465),
])
def test_show_json_prints_these_wilson_intervals(tmp_path, values, low, high):
    result = cli("show", str(synthetic_run(tmp_path / "run", values)), "--json", cwd=tmp_path, module="benchrun.audit")
    line = json.loads(result.stdout)["metrics"][0]
    assert (line["metric"], line["low"], line["high"], line["interval"]) == ("closeness", low, high, "wilson")


# -- what stays hand-written, against scipy -------------------------------------------------------------------------

@pytest.mark.parametrize("b,c", [(1, 3), (12, 30), (150, 200), (1000, 1100)])
def test_mcnemar_is_the_binomial_tail_correctly_rounded(b, c):
    n = b + c
    tail = min(Fraction(1), Fraction(2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)), 2 ** n))
    assert significance.mcnemar_exact(b, c) == float(tail)
    assert significance.mcnemar_exact(b, c) == pytest.approx(scipy.stats.binomtest(min(b, c), n).pvalue, rel=1e-13)


@pytest.mark.parametrize("k,n", [(2, 3), (50, 100), (0, 5), (5, 5), (1, 20), (123, 457)])
def test_wilson_is_scipys_wilson_interval(k, n):
    theirs, ours = scipy.stats.binomtest(k, n).proportion_ci(method="wilson"), wilson(k / n, n)
    assert (ours.low, ours.high) == (pytest.approx(theirs.low, rel=1e-13), pytest.approx(theirs.high, rel=1e-13))


def test_the_monte_carlo_permutation_test_is_scipys_test_in_distribution():
    d = np.random.default_rng(5).normal(0.1, 1, 300)
    theirs = scipy.stats.permutation_test((d,), np.sum, permutation_type="samples", n_resamples=20_000, rng=1).pvalue
    assert significance.permutation_p(d) == pytest.approx(theirs, abs=0.02)  # 0.284 and 0.275: 1.6 Monte Carlo sd
