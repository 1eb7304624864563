"""Hostile input, twelfth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

CASES

What held: HELD"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
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
    problem = f"{kind} in its place" if kind != "gone" else (
        "truncated: 2 lines of 2 written missing after line 0" if name == "responses.jsonl" else
        "truncated: 4 lines of 4 written missing after line 0")
    assert resumed.returncode == EXIT["archive"]
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
    ("mean", "NaN", "metrics.0.mean: Value error, nan is no statistic of a run's scores (a finite number)"),
    ("stderr", "Infinity", "metrics.0.stderr: Value error, inf is no statistic of a run's scores (a finite number)"),
    ("mean", "1e308", "metrics.0: Value error, mean 1e+308 is no share of 0/1 values (from 0 to 1), as a 0/1 "
                      "metric's must be"),
    ("stderr", "-0.5", "metrics.0: Value error, stderr -0.5 is no standard error (0 or more)"),
    ("n", "-3", "metrics.0.n: Value error, -3 is no number of answers (0 or more)")])
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
