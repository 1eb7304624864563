"""Hostile input, seventh pass, the process side (issue 19's fresh pass of the same kinds): real `python -m benchrun`
processes under abuse, the cases it found bad, each with the rule it now obeys.

- standard output that goes away (`| head -1`) or cannot be written (`> /dev/full`): a sweep piped into `head` ran
  its first job only and exited 0 with no sweep.json (with joblib, a job left `running` and tracebacks of Hydra's
  logging); into /dev/full the run said `Error executing job with overrides: [...]` and `disk full`, naming nothing.
  Now standard output is a display (benchrun.core.stdfds.Display): a write that fails never stops the work, what is
  printed after it goes to /dev/null, and a failure other than a reader that stopped is one line naming standard
  output (exit 4) once everything is recorded
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab
from tests.test_launchers import needs

pytestmark = pytest.mark.slow

SWEEP = ("-m", "runner.options.temperature=0,0.5")
JOBS = [("0_temperature-0", "completed"), ("1_temperature-0.5", "completed")]


def first_line_only(lab: Lab, *args: str) -> tuple[int, str]:
    """`python -m benchrun args | head -1`: the exit code and stderr of a process whose reader left after a line."""
    with subprocess.Popen([sys.executable, "-m", "benchrun", *args], cwd=lab.root, env=child_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
    return proc.wait(timeout=120), err


def statuses(lab: Lab) -> list[tuple[str, str]]:
    [sweep] = lab.root.glob("outputs/*/*_sweep/sweep.json")
    return [(job["dir"], job["status"]) for job in json.loads(sweep.read_text())["jobs"]]


@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_a_sweep_whose_reader_stops_early_runs_every_job(tmp_path, launcher):
    if launcher == "joblib":
        needs("hydra_joblib_launcher")
    with Lab(tmp_path, n=3, latency_s=0) as lab:
        code, err = first_line_only(lab, *SWEEP, *lab.args(f"hydra/launcher={launcher}"))
        assert (code, err.count("\n"), "Traceback" in err) == (EXIT["ok"], 0, False), err
        assert statuses(lab) == JOBS


@pytest.mark.parametrize("sweep", [False, True])
def test_output_to_a_full_disk_is_one_line_naming_it_after_the_work_is_done(tmp_path, sweep):
    with Lab(tmp_path, n=3, latency_s=0) as lab, open("/dev/full", "w") as full:
        args = [*(SWEEP if sweep else ()), *lab.args()]
        done = subprocess.run([sys.executable, "-m", "benchrun", *args], cwd=lab.root, env=child_env(),
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (EXIT["archive"], (
            "benchrun: error: disk full writing standard output: what benchrun printed was cut short, not what it "
            "recorded\n"))
        assert statuses(lab) == JOBS if sweep else [
            json.loads((run / "run.json").read_text())["status"] for run in lab.run_dirs()] == ["completed"]
