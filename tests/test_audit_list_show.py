"""`list` and `show` (and the 95% intervals) against real runs made by `python -m benchrun` (called in this process)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import scipy.stats

from benchrun.archive.reader import load_run
from benchrun.archive.rows import joined
from benchrun.audit.listing import list_runs
from benchrun.audit.show import is_failed, metric_rows, samples
from benchrun.audit.stats import interval, t_interval, wilson
from benchrun.core.errors import EXIT, ArchiveError
from benchrun.core.records import ErrorInfo, ResponseRecord, ScoreRecord
from benchrun.core.recordvalues import moment_at
from benchrun.testing.ollama_server import fake_digest
from tests.helpers.answers import BROKEN, LISTBENCH_SUMMARY, broken_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import make_run

Z = 1.959963984540054
"""The 0.975 quantile of the standard normal distribution."""


@dataclass(frozen=True)
class Archive:
    root: Path
    single: Path
    llama: Path
    gemma: Path
    broken: Path

    @property
    def outputs(self) -> Path:
        return self.root / "outputs"


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Archive:
    """In this order: a listbench run, a two-model folderbench sweep, a listbench run with failures."""
    root = tmp_path_factory.mktemp("archive")
    single = make_run(root)
    sweep = make_run(root, "task=folderbench", "runner.model=llama3.2,gemma3", multirun=True)
    broken = make_run(root, *BROKEN, responder=broken_answer)
    return Archive(root, single, sweep / "0_llama3.2", sweep / "1_gemma3", broken)


def wilson_expected(successes: int, n: int) -> tuple[float, float]:
    """(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = successes / n
    centre, spread = p + Z ** 2 / (2 * n), Z * math.sqrt(p * (1 - p) / n + Z ** 2 / (4 * n * n))
    return (centre - spread) / (1 + Z ** 2 / n), (centre + spread) / (1 + Z ** 2 / n)


# -- intervals --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("successes,n", [(2, 3), (3, 3), (0, 5), (3, 9), (8, 9), (50, 100)])
def test_wilson_interval(successes, n):
    got = wilson(successes / n, n)
    assert (got.low, got.high, got.method) == (*map(pytest.approx, wilson_expected(successes, n)), "wilson")


def test_wilson_known_values():
    got = wilson(2 / 3, 3)
    assert (round(got.low, 4), round(got.high, 4)) == (0.2077, 0.9385)


def test_t_interval_uses_students_t():
    got = t_interval(0.5, 0.1, 4)
    half = scipy.stats.t.ppf(0.975, 3) * 0.1
    assert (got.low, got.high, got.method) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half), "t")


def test_no_interval_below_two_values():
    assert interval(0, None, None, True) is None
    assert interval(1, 1.0, None, True) is None
    assert interval(1, 0.3, None, False) is None
    assert interval(2, 0.5, 0.5, True).method == "wilson"
    assert interval(2, 0.5, 0.5, False).method == "t"


# -- list --------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_list_newest_first_with_sweep_jobs(archive):
    entries = list_runs(archive.outputs)
    assert [e.run.path for e in entries] == [archive.broken, archive.gemma, archive.llama, archive.single]
    single = entries[-1]
    assert single.tasks == ("product", "product_combination", "symbol", "symbol_dir")
    assert [f"{m.task}/{m.metric}={m.mean:.3f}" for m in single.headline()] == [
        "product/calculated_answer=0.667", "product_combination/add_justify=0.333",
        "product_combination/calculated_answer=0.889"]
    gemma = entries[1].to_json()
    assert {k: gemma[k] for k in ("benchmark", "tasks", "model", "digest", "status", "samples", "responses")} == {
        "benchmark": "folderbench", "tasks": ["add"], "model": "gemma3", "digest": fake_digest("gemma3"),
        "status": "completed", "samples": 3, "responses": 3}


@pytest.mark.slow
@pytest.mark.parametrize("filters,expected", [
    ({"model": "gemma3"}, ["gemma"]),
    ({"model": "llama3.2:latest"}, ["broken", "llama", "single"]),
    ({"task": "add"}, ["gemma", "llama"]),
    ({"task": "symbol"}, ["single"]),
    ({"task": "nope"}, []),
    ({"status": ["completed_with_errors"]}, ["broken"]),
    ({"status": ["completed", "failed"]}, ["gemma", "llama", "single"]),
    ({"model": "llama3.2", "task": "product"}, ["broken", "single"]),
])
def test_list_filters(archive, filters, expected):
    paths = [e.run.path for e in list_runs(archive.outputs, **filters)]
    assert paths == [getattr(archive, name) for name in expected]


@pytest.mark.slow
def test_list_since(archive):
    started = {e.run.path: e.started for e in list_runs(archive.outputs)}
    since = started[archive.llama]
    assert [e.run.path for e in list_runs(archive.outputs, since=since)] == [archive.broken, archive.gemma,
                                                                             archive.llama]
    day = moment_at(since.date().isoformat())
    assert len(list_runs(archive.outputs, since=day)) == 4
    assert list_runs(archive.outputs, since=day + timedelta(days=1)) == []


def test_parse_time_defaults_to_utc():
    assert moment_at("2026-03-01") == datetime(2026, 3, 1, tzinfo=timezone.utc)
    assert moment_at("2026-03-01T10:00:00+02:00") == datetime(2026, 3, 1, 8, tzinfo=timezone.utc)


@pytest.mark.slow
def test_list_command(archive):
    result = audit(archive.root, "list")
    assert result.returncode == EXIT["ok"], result.stderr
    ids = [load_run(p).id for p in (archive.broken, archive.gemma, archive.llama, archive.single)]
    assert result.stdout.startswith("4 runs")
    assert sorted(ids, key=result.stdout.index) == ids
    single = load_run(archive.single).info
    row = next(line for line in result.stdout.splitlines() if single.run_id in line)
    assert f"│ {single.started_at[:19].replace('T', ' ')} │ {single.run_id} │ completed             │   18/18 │ " \
           f"llama3.2 @{fake_digest('llama3.2')[:12]} │ listbench: product," in row
    assert "product/calculated_answer=0.667" in row

    result = audit(archive.root, "list", str(archive.outputs), "--json", "--task", "add", "--model", "gemma3")
    assert [e["run_id"] for e in json.loads(result.stdout)] == [load_run(archive.gemma).id]

    result = audit(archive.root, "list", "--since", "last week")
    assert result.returncode == EXIT["usage"]
    assert "argument --since: not an ISO date or date-time: 'last week'" in result.stderr

    result = audit(archive.root, "list", "nowhere")
    assert (result.returncode, result.stderr) == (EXIT["archive"], "benchrun: error: no archive directory 'nowhere'\n")


# -- show ---------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_metric_rows_with_wilson_intervals(archive):
    rows = {(r.task, r.metric): r for r in metric_rows(load_run(archive.single))}
    assert rows.keys() == LISTBENCH_SUMMARY.keys()
    for key, (n, mean, stderr, errors) in LISTBENCH_SUMMARY.items():
        row = rows[key]
        assert (row.n, row.mean, row.stderr, row.errors) == (n, pytest.approx(mean), pytest.approx(stderr), errors)
        low, high = wilson_expected(round(mean * n), n)
        assert (row.interval.low, row.interval.high, row.interval.method) == (
            pytest.approx(low), pytest.approx(high), "wilson"), key
    product = rows["product", "calculated_answer"]
    assert (product.n, round(product.mean, 3), round(product.interval.low, 3), round(product.interval.high, 3)) == (
        3, 0.667, 0.208, 0.939)


def test_metric_rows_t_interval_for_other_values(tmp_path):
    values = [0.5, 0.25, 1.0, 0.75]
    row = next(r for r in metric_rows(load_run(synthetic_run(tmp_path / "run", values))) if r.metric == "closeness")
    mean, stderr = sum(values) / 4, math.sqrt(sum((v - 0.625) ** 2 for v in values) / 3 / 4)
    half = scipy.stats.t.ppf(0.975, 3) * stderr
    assert (row.n, row.mean, row.stderr) == (4, pytest.approx(mean), pytest.approx(stderr))
    assert (row.interval.low, row.interval.high, row.interval.method) == (
        pytest.approx(mean - half), pytest.approx(mean + half), "t")


def test_metric_rows_of_a_run_that_did_not_finish(tmp_path):
    run = load_run(synthetic_run(tmp_path / "run", [1, 0, 1], finish=False))
    assert run.summary is None
    rows = {r.metric: (r.n, r.mean, r.interval.method) for r in metric_rows(run)}
    assert rows == {"closeness": (3, pytest.approx(2 / 3), "wilson"), "format_valid": (3, 1.0, "wilson")}


@pytest.mark.slow
def test_show_command_table(archive):
    result = audit(archive.root, "show", load_run(archive.single).id[:8])
    assert result.returncode == EXIT["ok"], result.stderr
    info = load_run(archive.single).info
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    assert f"manifest id  {info.manifest_id}" in lines
    assert (f"model        llama3.2  name llama3.2:latest  digest {fake_digest('llama3.2')}  server "
            f"{info.identity['server_version']}") in lines
    assert "status       completed" in lines
    assert f"overrides    {' '.join(info.overrides)}" in lines
    assert "counts       18/18 samples, 0 request errors, 0 scorer errors, 0 invalid formats" in lines
    assert "┃ task                ┃ metric                   ┃ n ┃  mean ┃ 95% interval ┃ method ┃ errors ┃" in lines
    assert "│ product             │ calculated_answer        │ 3 │ 0.667 │  0.208–0.939 │ wilson │      0 │" in lines
    assert "│ product_combination │ add_justify              │ 9 │ 0.333 │  0.121–0.646 │ wilson │      0 │" in lines
    assert "│ symbol_dir          │ check_name_dir.name      │ 3 │ 0.667 │  0.208–0.939 │ wilson │      0 │" in lines


@pytest.mark.slow
def test_show_command_samples_of_a_task(archive):
    result = audit(archive.root, "show", str(archive.single), "--samples", "--task", "product")
    assert result.returncode == EXIT["ok"], result.stderr
    assert """
product:a=2,b=3  [product]
  prompt    find the product of 2 and 3
  reference calculated
  response  {"answer": 6}
  score     format_valid=1
  score     calculated_answer=1

product:a=3,b=4  [product]
  prompt    find the product of 3 and 4
  reference calculated
  response  {"answer": 11}
  score     format_valid=1
  score     calculated_answer=0

product:a=5,b=5  [product]
  prompt    find the product of 5 and 5
  reference calculated
  response  {"answer": 25}
  score     format_valid=1
  score     calculated_answer=1

3 samples shown

metrics (95% intervals: wilson for 0/1 metrics, t otherwise)
""" in "\n".join(line.rstrip() for line in result.stdout.splitlines())
    assert result.stdout.index("counts       18/18 samples") < result.stdout.index("3 samples shown")


@pytest.mark.slow
def test_show_failed_samples(archive):
    run = load_run(archive.broken)
    assert [v.response.id for v in samples(run, failed=True)] == [
        "product:a=2,b=3", "product:a=5,b=5", "symbol_dir:symb=<,name=less,direction=left"]
    assert [v.response.id for v in samples(run, task="symbol_dir", failed=True)] == [
        "symbol_dir:symb=<,name=less,direction=left"]
    assert len(list(samples(run))) == 6
    assert [v.response.id for v in samples(run, task="symbol_dir")] == [
        "symbol_dir:symb=^,name=carat,direction=up", "symbol_dir:symb=<,name=less,direction=left",
        "symbol_dir:symb=>,name=greater,direction=right"]

    result = audit(archive.root, "show", run.id, "--samples", "--failed")
    assert result.returncode == EXIT["ok"], result.stderr
    assert """
product:a=2,b=3  [product]
  prompt    find the product of 2 and 3
  reference calculated
  response  the answer is 6
  score     format_valid=0  (invalid JSON: Expecting value: line 1 column 1 (char 0))
  score     calculated_answer: error JSONDecodeError: Expecting value: line 1 column 1 (char 0)

product:a=5,b=5  [product]
  prompt    find the product of 5 and 5
  reference calculated
  response  none: ResponseError: HTTP 503: server busy (after 1 attempt)
  score     format_valid: error NoResponse: no response: HTTP 503: server busy
  score     calculated_answer: error NoResponse: no response: HTTP 503: server busy

symbol_dir:symb=<,name=less,direction=left  [symbol_dir]
  prompt    what direction does the < symbol point? and what is its name 
  reference calculated
  response  not json
  score     format_valid=0  (invalid JSON: Expecting value: line 1 column 1 (char 0))
  score     check_name_dir: error JSONDecodeError: Expecting value: line 1 column 1 (char 0)

3 samples shown (failed only)
""" in result.stdout
    assert "│ product    │ calculated_answer        │ 1 │ 0.000 │            - │ -      │      2 │" in result.stdout
    assert f"overrides    {' '.join(run.info.overrides)}" in result.stdout  # [...] is not read as markup
    assert "3 samples shown (failed only)" in audit(archive.root, "show", run.id, "--failed").stdout  # implies --samples


@pytest.mark.slow
def test_show_command_json(archive):
    result = audit(archive.root, "show", str(archive.broken), "--json", "--samples", "--failed", "--task", "product")
    assert result.returncode == EXIT["ok"], result.stderr
    data = json.loads(result.stdout)
    assert data["run"]["run_id"] == load_run(archive.broken).id
    fmt = next(m for m in data["metrics"] if (m["task"], m["metric"]) == ("product", "format_valid"))
    low, high = wilson_expected(1, 2)
    assert fmt == {"task": "product", "metric": "format_valid", "n": 2, "mean": 0.5, "stderr": 0.5, "errors": 1,
                   "low": pytest.approx(low), "high": pytest.approx(high), "interval": "wilson"}
    assert [(s["id"], s["prompt"], s["response"]["text"]) for s in data["samples"]] == [
        ("product:a=2,b=3", "find the product of 2 and 3", "the answer is 6"),
        ("product:a=5,b=5", "find the product of 5 and 5", None)]
    assert [s["scorer"] for s in data["samples"][0]["scores"]] == ["format_valid", "calculated_answer"]

    plain = json.loads(audit(archive.root, "show", str(archive.single), "--json").stdout)
    assert "samples" not in plain and len(plain["metrics"]) == len(LISTBENCH_SUMMARY)


@pytest.mark.slow
def test_show_unknown_run_is_one_line(archive):
    result = audit(archive.root, "show", "zzz")
    assert result.returncode == EXIT["archive"]
    assert result.stderr == "benchrun: error: no run directory or run id 'zzz' under outputs\n"


# -- joining records -----------------------------------------------------------------------------------------------


def response(sample_id: str, error: bool = False) -> ResponseRecord:
    return ResponseRecord(id=sample_id, task="t", text=None if error else "{}", seconds=0.0, attempts=1,
                          error=ErrorInfo(type="E", message="m") if error else None)


def score(sample_id: str, scorer: str = "s", value: int | None = 1) -> ScoreRecord:
    return ScoreRecord(id=sample_id, task="t", scorer=scorer, metrics=None if value is None else {scorer: value},
                       error=ErrorInfo(type="E", message="m") if value is None else None)


def pairs(responses: list[ResponseRecord], scores: list[ScoreRecord]) -> list[tuple[str, list[str]]]:
    return [(r.id, [f"{s.id}/{s.scorer}" for s in group]) for r, group in joined(responses, scores)]


def test_joined_in_step():
    assert pairs([response("a"), response("b")], [score("a"), score("a", "u"), score("b")]) == [
        ("a", ["a/s", "a/u"]), ("b", ["b/s"])]


def test_joined_out_of_step():
    """A resumed run re-grades a response: its scores come after those of later samples; one has none."""
    assert pairs([response("a"), response("b"), response("c")], [score("b"), score("c"), score("a")]) == [
        ("a", ["a/s"]), ("b", ["b/s"]), ("c", ["c/s"])]
    assert pairs([response("a"), response("b")], [score("b")]) == [("a", []), ("b", ["b/s"])]


def test_is_failed():
    assert not is_failed(response("a"), [score("a", "format_valid", 1), score("a")])
    assert is_failed(response("a", error=True), [])
    assert is_failed(response("a"), [score("a", "format_valid", 0), score("a")])
    assert is_failed(response("a"), [score("a", "format_valid", 1), score("a", value=None)])


@pytest.mark.parametrize("edit,line,why", [
    (lambda lines: lines.__setitem__(3, lines[3].replace(b'"task"', b'"tusk"')), 4, "task: Field required"),
    (lambda lines: lines.__setitem__(-1, lines[-1][:20]), 6, "Invalid JSON: EOF while parsing an object at line 1 "
                                                             "column 20"),
    (lambda lines: lines.insert(1, b"\n"), 2, "Invalid JSON: EOF while parsing a value at line 2 column 0"),
])
def test_an_invalid_record_line_is_named_by_its_number(tmp_path, edit, line, why):
    run_dir = synthetic_run(tmp_path / "run", [0.5, 1, 0])
    scores = run_dir / "scores.jsonl"
    lines = scores.read_bytes().splitlines(keepends=True)
    edit(lines)
    scores.write_bytes(b"".join(lines))
    with pytest.raises(ArchiveError) as err:
        list(load_run(run_dir).scores())
    assert str(err.value) == f"in '{scores}': line {line}: not a valid record: {why}"
