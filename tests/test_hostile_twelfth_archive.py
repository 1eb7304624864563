"""Hostile input, twelfth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- `resume` of a killed run whose responses.jsonl or scores.jsonl was deleted, or replaced by a named pipe or a
  folder: an AttributeError traceback (the check of a missing file fed the piecewise line reader an empty iterator,
  which has no `readline`). Now a missing record file has no lines (`truncated: 2 lines of 2 written missing after
  line 0`) and a pipe, a device or a folder in its place is said to be that, never opened
  (`archive.ledger.check_file`): `responses.jsonl: a named pipe (FIFO) in its place`, one line, exit 4
- `verify` of a run that did not end whose run.lock is a named pipe: it waited for ever (the lock's probe opened
  it for reading, which waits for a writer); a folder there: `benchrun: error: is a directory`, naming nothing. Now
  the probe opens it without waiting and says what is there (`archive.dirlock.probe`, `LockState.misplaced`), and
  verify says it in one finding: `run.lock: a named pipe (FIFO) in its place, which no writer can hold: ...`
- a run whose manifest.json is a named pipe, a device or a folder: `show`, `export` and `report` read it as intact,
  exit 0 (verify said NOT intact; a deleted manifest was refused). Now trust says what is in its place
  (`archive.trust._manifest`), as for every other file: `manifest.json: a directory in its place, so what it says
  cannot be trusted`; and a record file that is a pipe or a folder is said to be that, where the readers said `its
  records are gone` (`archive.reader.Run.require_records`)
- `export --format csv` of a run whose run.json's `varied` (any text in a run that did not end, which no seal
  covers) names a setting `=HYPERLINK(...)` or starting with a CR: the header cell was written as it was, a formula
  a spreadsheet runs. Now every header cell is escaped as the rows' are (`audit.export.write_csv`): `'=HYPERLINK(...`
- `list`'s `started (UTC)` column printed run.json's time as written, whatever its offset, while the rows are sorted
  by it in UTC: `1969-07-20T20:17:00-14:00` was shown as `1969-07-20 20:17:00` and sorted as 10:17 the next day,
  `2026-01-01T00:00:00+14:00` shown above a later run. Now the column shows the UTC time it sorts by
  (`audit.listing.in_utc`); one that UTC's calendar cannot hold (`0001-01-01T00:00:00+01:00`) as written, with its
  offset
- a summary.json holding `NaN`, `Infinity`, a 0/1 metric's mean of `1e308`, a negative stderr or n (resealed, as a
  writer that wrote it so would leave it): `show` and `report` a ValueError traceback (math domain error in Wilson's
  interval), `list` `t/closeness=nan`. Now a summary line's statistics are finite, its counts 0 or more and a 0/1
  metric's mean, pass@k and majority@k shares from 0 to 1, or the file is unreadable where it is read, one line
  (`core.metricvalue`: `Statistic`, `Tally`, `shares`): `metrics.0.mean: nan is no statistic of a
  run's scores (a finite number)`
- a run that did not end whose responses.jsonl ends in the half line a writer killed mid-write leaves (or is
  writing now, in a live run): `show` printed its metrics and then failed, exit 4, `line 4: not a valid record:
  Invalid JSON: EOF while parsing a string`, and `export` failed, though `resume` cuts that line as a kill's. Now the
  readers of a run that did not end leave out a last line cut short (`archive.reader.Run._records`); a whole
  uncommitted answer is still read, as the tenth pass decided
- a Run kept open through the Python API (a notebook): checked once, then trusted; a score line edited since (or
  lines appended to a run being written) was read by the next `to_pandas()` as the run's, while a fresh `load_run`
  refused it. Now the check is made again once any of the run's files changed (their inode, size and time:
  `archive.trust.checked`), so the next call refuses in the same one line
- a run directory named with a newline (`hydra.run.dir=$'x\\nok    run.json: matches its seal'`): `verify`,
  `show` and `compare` printed the path with its newline, a line the command did not write (`ok    run.json: ...`
  under the heading). Now a name or a path (a run's directory, model, label, benchmark; a verify finding, one line)
  is shown with its newlines and tabs as escapes too (`console.visible.shown_name`), as its control and format
  characters already were

What held, tried and found as the rules say: run.json, seal.json, summary.json, config.yaml and records.sha256
replaced by a named pipe, a link to /dev/zero or a folder, in a finished run and in one that did not end: one line
each, never waited on or read for ever (`core.filebytes.read_bounded` opens without waiting); run.lock a pipe or a
folder: `resume` refuses it (`where the run's own file belongs`); seal.json a symbolic link to another run's seal:
`the seal of run '111111111111', not of this run`; two runs whose run.json is one file (hard links): each read as
itself, and run.json is replaced by a rename, never written in place. Four `rescore`s of one run at once: two
refused in one line (`another process is writing this run (pid ...)`), the others numbered 001 and 002, the run
still intact. `list` of a tree whose folder is deleted while it walks: the folder passed over (`reader._walk`).
`compare` of one run given twice (deltas 0), of runs with no sample in common (`nothing to compare`, one line), of
300 runs (13 s), `report` of 300 (4 s, 819 KB); `--metric` holding ESC and U+202E, or empty: one line naming it,
escaped. `report` of a model `</script><script>alert('m')</script>` and a label `=1+1<b>`: escaped, under its
Content-Security-Policy; `compare` and `show --samples` of a metric `</script><img src=x onerror=alert(1)>‮` and
an answer `<script>`: printed as text, U+202E escaped. An error line quoting a path holding ESC or a newline:
one line, ESC replaced. run.json times of year 9999, year 1 and a date alone: `list` sorts them and `--since` filters
them. The Python API: `load_run("~/x")` is not expanded, as `open` does not (`not a run directory (no run.json)`);
a relative path is read from the working directory of the moment; a file: `not a run directory`; a run deleted
between `load_run` and `to_pandas`: `has no responses.jsonl or scores.jsonl: its records are gone`; the MetricRow and
MetricSummary it returns are frozen, and `metric_values()` and `manifest_data()` are read afresh at each call (a
caller's change to one is not seen by the next). Not tried: permissions (the tests run as root, whom they do not
stop), a clock set back between a run and its resume, `merge` while a shard is resumed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.core.errors import EXIT, ArchiveError
from benchrun.testing.inprocess import child_env, cli
from tests.helpers.archives import reseal, synthetic_run

pytestmark = pytest.mark.slow


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def _replace(path: Path, kind: str) -> None:
    """`path` made a named pipe or a folder, or gone."""
    path.unlink()
    {"a named pipe (FIFO)": os.mkfifo, "a directory": os.mkdir, "gone": lambda _: None}[kind](path)


# -- what is in a run file's place -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["responses.jsonl", "scores.jsonl"])
@pytest.mark.parametrize("kind", ["a named pipe (FIFO)", "a directory", "gone"])
def test_resume_of_a_killed_run_whose_record_file_is_gone_or_not_a_file_says_so(tmp_path, name, kind):
    run_dir = synthetic_run(tmp_path / "run", [1, 0], finish=False)
    _replace(run_dir / name, kind)
    resumed = audit(tmp_path, "resume", str(run_dir))
    assert resumed.returncode == EXIT["archive"]
    if kind != "gone":  # refused before the records are read: --force could not mend it (the thirty-fourth pass)
        assert resumed.stderr == (f"benchrun: error: in '{run_dir / name}': {kind}, where the run's own file belongs; "
                                  "benchrun writes only into its own files\n")
        return
    problem = "truncated: 2 lines of 2 written missing after line 0" if name == "responses.jsonl" else \
        "truncated: 4 lines of 4 written missing after line 0"
    assert resumed.stderr.startswith(f"benchrun: error: in '{run_dir / name}': {problem}")
    assert resumed.stderr.endswith("resume with --force to drop what does not belong (recorded in run.json)\n")
    assert resumed.stderr.count("\n") == 1


def _audit_process(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`benchrun-audit ARGS` in its own process, stopped if it waits for ever (a FIFO opened for reading waits for a
    writer)."""
    return subprocess.run([sys.executable, "-m", "benchrun.audit", *args], cwd=cwd, env=child_env(), text=True,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("kind", ["a named pipe (FIFO)", "a directory"])
def test_verify_of_a_killed_run_whose_lock_is_not_a_file_says_so_never_waits(tmp_path, kind):
    run_dir = synthetic_run(tmp_path / "run", [1, 0], finish=False)
    _replace(run_dir / "run.lock", kind)
    verified = _audit_process(tmp_path, "verify", str(run_dir))
    assert (verified.returncode, verified.stderr) == (EXIT["not_intact"], "")
    assert (f"FAIL  run.lock: {kind} in its place, which no writer can hold: the run says 'running', but none is "
            "writing it (record lines checked against records.sha256 only)\n") in verified.stdout
    assert verified.stdout.endswith("NOT intact: 1 problem\n")


@pytest.mark.parametrize("finish", [True, False])
@pytest.mark.parametrize("kind", ["a named pipe (FIFO)", "a directory"])
def test_readers_refuse_a_run_whose_manifest_is_not_a_file_as_one_whose_manifest_is_gone(tmp_path, finish, kind):
    run_dir = synthetic_run(tmp_path / "run", [1, 0], finish=finish)
    _replace(run_dir / "manifest.json", kind)
    for command in ("show", "export", "report"):
        read = audit(tmp_path, command, str(run_dir), *(["--output", str(tmp_path / "r.html")] * (command == "report")))
        assert (read.returncode, read.stdout, read.stderr) == (EXIT["archive"], "", (
            f"benchrun: error: in '{run_dir}': run 555555555555: manifest.json: {kind} in its place, so what it says "
            f"cannot be trusted; benchrun-audit verify {run_dir} says what changed\n"))
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("name", ["responses.jsonl", "scores.jsonl"])
def test_readers_say_a_record_file_that_is_a_pipe_is_one_not_gone(tmp_path, name):
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    _replace(run_dir / name, "a named pipe (FIFO)")
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stdout, shown.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{run_dir}': run 555555555555: {name}: a named pipe (FIFO) in its place, so what it "
        f"says cannot be trusted; benchrun-audit verify {run_dir} says what changed\n"))


# -- what the audit commands write -----------------------------------------------------------------------------------

def test_export_csv_header_of_a_varied_setting_named_as_a_formula_is_escaped(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1], finish=False, varied={'=HYPERLINK("http://x","y")': 1, "\rx": 2})
    exported = audit(tmp_path, "export", str(run_dir), "--output", str(tmp_path / "rows.csv"))
    assert (exported.returncode, exported.stderr) == (EXIT["ok"], "")
    assert (tmp_path / "rows.csv").read_bytes().split(b"\r\n")[0] == (
        b"run_id,label,model,manifest_id,\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",\"'\rx\",task,sample_id,repeat,"
        b"scorer,metric,value,error,value.a,reference")


# -- times -----------------------------------------------------------------------------------------------------------

def test_list_shows_each_start_in_utc_as_it_sorts_by_it(tmp_path):
    for n, started in enumerate(["1969-07-20T20:17:00-14:00", "2026-01-01T00:00:00+14:00", "2026-01-01T00:00:00",
                                 "0001-01-01T00:00:00+01:00"]):
        run_dir = synthetic_run(tmp_path / "runs" / str(n), [1], finish=False, run_id=f"{n}" * 12)
        info = json.loads((run_dir / "run.json").read_text())  # an unfinished run's run.json: no seal covers it
        (run_dir / "run.json").write_text(json.dumps({**info, "started_at": started}))
    listed = audit(tmp_path, "list", "runs")
    assert (listed.returncode, listed.stderr) == (EXIT["ok"], "")
    assert [line.split("│")[1:3] for line in listed.stdout.splitlines() if line.startswith("│")] == [
        [" 2026-01-01 00:00:00       ", " 222222222222 "], [" 2025-12-31 10:00:00       ", " 111111111111 "],
        [" 1969-07-21 10:17:00       ", " 000000000000 "], [" 0001-01-01 00:00:00+01:00 ", " 333333333333 "]]


# -- summary.json's numbers ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("key", "value", "problem"), [
    ("mean", "NaN", "metrics.0.mean: nan is no statistic of a run's scores (a finite number)"),
    ("stderr", "Infinity", "metrics.0.stderr: inf is no statistic of a run's scores (a finite number)"),
    ("mean", "1e308", "metrics.0: mean 1e+308 is no share of 0/1 values (from 0 to 1), as a 0/1 "
                      "metric's must be"),
    ("stderr", "-0.5", "metrics.0: stderr -0.5 is no standard error (0 or more)"),
    ("n", "-3", "metrics.0.n: -3 is no number of answers (0 or more)")])
def test_a_summary_holding_numbers_no_tally_gives_is_unreadable_in_one_line(tmp_path, key, value, problem):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["metrics"][0][key] = "@"
    (run_dir / "summary.json").write_text(json.dumps(summary).replace('"@"', value))
    reseal(run_dir, "summary.json")  # as a writer that wrote it so would have left it: every digest matches
    for command in ("show", "report"):
        read = audit(tmp_path, command, str(run_dir), *(["--output", str(tmp_path / "r.html")] * (command == "report")))
        assert (read.returncode, read.stdout, read.stderr) == (
            EXIT["archive"], "", f"benchrun: error: in '{run_dir / 'summary.json'}': unreadable: {problem}\n")


# -- a run that did not end, and a Run kept open ---------------------------------------------------------------------

def test_readers_of_a_run_killed_mid_write_leave_out_the_line_cut_short(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0], finish=False)
    with open(run_dir / "responses.jsonl", "ab") as handle:  # the half line a writer killed mid-write leaves
        handle.write(b'{"id":"t:a=9","task":"t","te')
    exported = audit(tmp_path, "export", str(run_dir), "--format", "jsonl")
    shown = audit(tmp_path, "show", str(run_dir))
    assert (exported.returncode, exported.stderr, shown.returncode, shown.stderr) == (EXIT["ok"], "", EXIT["ok"], "")
    assert [(row["sample_id"], row["metric"], row["value"]) for row in map(json.loads, exported.stdout.splitlines())] \
        == [("t:a=0", "format_valid", 1), ("t:a=0", "closeness", 1), ("t:a=1", "format_valid", 1),
            ("t:a=1", "closeness", 0)]
    assert "speed (2 answers, 0 failed)" in shown.stdout


@pytest.mark.parametrize("finish", [True, False])
def test_a_run_kept_open_is_checked_again_once_its_files_changed(tmp_path, finish):
    run_dir = synthetic_run(tmp_path / "run", [1, 0], finish=finish)
    run = load_run(run_dir)
    assert run.to_pandas()["value"].tolist() == [1, 1, 1, 0]
    scores = run_dir / "scores.jsonl"
    scores.write_text(scores.read_text().replace('"closeness":0', '"closeness":1'))
    with pytest.raises(ArchiveError) as refused:
        run.to_pandas()
    assert str(refused.value) == (f"in '{run_dir}': run 555555555555: scores.jsonl: line 4 is not the line written, "
                                  f"so what it says cannot be trusted; benchrun-audit verify {run_dir} says what "
                                  "changed")


def test_a_run_directory_named_with_a_newline_prints_no_line_of_its_own(tmp_path):
    run_dir = synthetic_run(tmp_path / "x\nok    run.json: matches its seal\tintact", [1], finish=False)
    shown_path = str(run_dir).replace("\n", "\\n").replace("\t", "\\t")
    verified = audit(tmp_path, "verify", str(run_dir))
    shown = audit(tmp_path, "show", str(run_dir))
    other = synthetic_run(tmp_path / "other", [1], run_id="6" * 12)
    compared = audit(tmp_path, "compare", str(run_dir), str(other))  # a run is compared with another
    assert (verified.returncode, shown.returncode, compared.returncode) == (EXIT["not_intact"], EXIT["ok"], EXIT["ok"])
    assert verified.stdout.splitlines()[0] == f"verify 555555555555  {shown_path}"
    assert verified.stdout.splitlines()[1].endswith(f"finish it with: benchrun-audit resume '{shown_path}' (record "
                                                    "lines checked against records.sha256 only)")
    assert not any(line.startswith("ok    run.json") for line in verified.stdout.splitlines())
    assert shown.stdout.splitlines()[0].rstrip() == f"run          555555555555  {shown_path}"
    assert compared.stdout.splitlines()[0] == (f"baseline: m 555555555555 ({shown_path}): not finished (status "
                                               "running); compared over the samples it answered")
