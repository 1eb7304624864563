"""Hostile input, twenty-third pass, the runs-as-processes side (issue 19's fresh pass of the same kinds): signals,
sweeps whose jobs die, and what a stopped run or sweep tells its user, the cases it found bad, each with the rule it
now obeys.

- a sweep stopped by a signal while a job compiled (its scorer file slow to import), or whose launcher lost its jobs
  while they compiled (a joblib worker killed by the out-of-memory killer as its benchmark loads): the job is
  recorded `interrupted` with no manifest, and its own line says `nothing was asked ...; start it again`, but the
  sweep's last line said `finish each interrupted one with: benchrun-audit resume RUN`, and resume refuses each such
  job (`ended before it compiled ... and asked nothing; start a new run`, exit 4). Now the sweep's line names the
  jobs that asked nothing, to be started again, and sends only the others to resume (`benchrun.cli._finishing`)
- such a job whose process died before it compiled (the out-of-memory killer as its benchmark loads), which the
  sweep's end records `interrupted` (`settle_dead_jobs`): left unsealed for a resume that refuses it, so verify said
  `NOT intact: seal.json: missing: the run ended (interrupted) but nothing covers run.json` for good and `list` showed
  it `unreadable ... cannot be trusted`. Now one that asked nothing is sealed as its own writer seals a run stopped
  before it compiled, config.yaml's digest in run.json (`archive.sweep._settle`, `archive.writer.final_config`)
- a submitit_local sweep whose job's process is SIGKILLed (the out-of-memory killer): the sweep's line, and the job's
  reason in run.json and sweep.json, said `hydra/launcher: Job 7 (task: 0) with path .../7_0_result.pkl`, cut off in
  the middle of submitit's sentence, whose second line says what happened (`has not produced any output (state:
  FINISHED)`). Now the launcher's first sentence, and its exit codes (`benchrun.cli._launcher_words`)
- a sweep stopped (SIGTERM) or whose launcher lost its jobs while its directory takes no more writes (made read-only,
  a full disk): writing sweep.json raised `WriteFailed` while the stop was being said, a traceback of 30 lines. Now one
  line saying the sweep could not be recorded, and why (`benchrun.cli._settle_sweep`)
- a run SIGKILLed (the out-of-memory killer, a joblib worker ended by joblib) while a benchmark file's import hangs:
  the child process that imports it to check it (in a session of its own) lived on, its import running for good
  (a minute's sleep here; a busy loop or a network wait for ever). Now it is killed with its parent however that
  ends (`compiler.usercode.PROBE`, PR_SET_PDEATHSIG)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.procfs import PARENT, stat_fields
from benchrun.testing.holding import holding_answers
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.small_disk import can_mount, read_only
from tests.helpers.benchfiles import scorer, task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun

HANGING = ("import glob, os, time\n"
           "if glob.glob(os.environ['HANG_WHEN']):\n"
           "    open(os.path.join(os.environ['MARKS'], str(os.getpid())), 'w').close()\n"
           "    time.sleep(60)\n\n")
"""A scorer file whose import hangs once a path matching $HANG_WHEN is there, leaving a file named by its process id
in $MARKS."""


@contextmanager
def _sweep(root: Path, launcher: str, hang_when: str) -> Iterator[tuple[subprocess.Popen, Path]]:
    """A sweep of two models with `launcher`, its scorer file's import hanging once `hang_when` matches: its process
    and the folder its hanging imports are marked in; killed at the end of the block, with its server."""
    write_bench(root, {"tasks.yml": tasks_yml(task(scorer="s")), "custom_scorer.py": HANGING + scorer("return 1")})
    marks = root / "marks"
    marks.mkdir()
    with FakeOllama(models=["llama3.2", "gemma3"]) as server:
        sweep = subprocess.Popen([sys.executable, "-m", "benchrun", "-m", "runner.model=llama3.2,gemma3",
                                  f"hydra/launcher={launcher}", "task.path=bench", f"runner.host={server.url}",
                                  "cache=false", f"outputs={root / 'outputs'}"], cwd=root, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 env=child_env({"HANG_WHEN": str(root / hang_when), "MARKS": str(marks)}))
        try:
            yield sweep, marks
        finally:
            sweep.kill()


def _resumed(root: Path, job: Path) -> tuple[int, str]:
    done = call_benchrun("resume", str(job), cwd=root, module="benchrun.audit")
    return done.returncode, done.stderr


def test_a_sweep_stopped_while_a_job_compiles_sends_that_job_to_be_started_again_not_resumed(tmp_path):
    """SIGTERM while the second job's scorer file is imported: that job asked nothing. Before, the sweep's line ended
    `finish each interrupted one with: benchrun-audit resume RUN`, which refuses it."""
    with _sweep(tmp_path, "basic", "outputs/*/*_sweep/1_gemma3") as (sweep, marks):
        wait_for(lambda: any(marks.iterdir()), 120)
        sweep.send_signal(signal.SIGTERM)
        _, err = sweep.communicate(timeout=120)
    [sweep_dir] = (tmp_path / "outputs").glob("*/*_sweep")
    job = sweep_dir / "1_gemma3"
    run_id = json.loads((job / "run.json").read_text())["run_id"]
    assert (sweep.returncode, err) == (EXIT["interrupted"], (
        f"benchrun: error: interrupted by SIGTERM: nothing was asked; run {run_id} is recorded as 'interrupted' in "
        f"{job}; start it again; the sweep in {sweep_dir} is recorded in its sweep.json, 2 jobs started (1 completed, "
        "1 interrupted); a job it does not list never started; 1_gemma3 stopped before it compiled and asked nothing: "
        "start it again\n"))
    assert _resumed(tmp_path, job) == (EXIT["archive"], (
        f"benchrun: error: in '{job}': run {run_id} ended before it compiled (interrupted by SIGTERM) and asked "
        "nothing; start a new run\n"))


def test_a_sweep_whose_launcher_lost_its_jobs_as_they_compiled_sends_them_to_be_started_again(tmp_path):
    """A joblib worker SIGKILLed (the out-of-memory killer) while both jobs import their scorer file: joblib ends
    both. Before, the line said `2 recorded as 'interrupted' ...; finish each with: benchrun-audit resume RUN`; and
    each job, settled unsealed, was `NOT intact` (`seal.json: missing`) with no way forward, `unreadable` in list."""
    with _sweep(tmp_path, "joblib", "outputs") as (sweep, marks):
        wait_for(lambda: len(list(marks.iterdir())) == 2, 120)
        importer = min(int(mark.name) for mark in marks.iterdir())  # the import check's process, below its worker
        os.kill(int(stat_fields(importer)[PARENT]), signal.SIGKILL)
        _, err = sweep.communicate(timeout=120)
    [sweep_dir] = (tmp_path / "outputs").glob("*/*_sweep")
    assert sweep.returncode == EXIT["sweep_failed"]
    assert err.startswith("benchrun: error: hydra/launcher lost the sweep's jobs: A worker process managed by the "
                          "executor was unexpectedly terminated."), err
    assert err.endswith(f"The exit codes of the workers are {{SIGKILL(-9)}}; 2 recorded as 'interrupted' in "
                        f"{sweep_dir}; 0_llama3.2, 1_gemma3 stopped before they compiled and asked nothing: start "
                        "them again\n"), err
    jobs = [sweep_dir / job for job in ("0_llama3.2", "1_gemma3")]
    assert [_resumed(tmp_path, job)[0] for job in jobs] == [EXIT["archive"]] * 2
    verified = [call_benchrun("verify", str(job), cwd=tmp_path, module="benchrun.audit") for job in jobs]
    assert [(done.returncode, done.stdout.splitlines()[1], done.stdout.splitlines()[-1]) for done in verified] == [
        (EXIT["ok"], f"ok    run.json: matches its seal; keep the seal's sha256 elsewhere to prove this run later: "
                     f"{hashlib.sha256((job / 'seal.json').read_bytes()).hexdigest()}", "intact") for job in jobs]


def test_a_submitit_job_killed_is_said_in_submitits_whole_sentence(tmp_path):
    """Before: `... lost the sweep's jobs: Job 7 (task: 0) with path .../7_0_result.pkl; 1 recorded as ...`."""
    outputs = tmp_path / "outputs"
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task())})
    with FakeOllama(models=["llama3.2", "gemma3"]) as server, holding_answers(server, after=1, each_model=True) as hold:
        sweep = subprocess.Popen([sys.executable, "-m", "benchrun", "-m", "runner.model=llama3.2,gemma3",
                                  "hydra/launcher=submitit_local", "task.path=bench", f"runner.host={server.url}",
                                  "cache=false", f"outputs={outputs}", "runner.concurrency=1"], cwd=tmp_path,
                                 env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            locks = lambda: sorted(outputs.glob("*/*/1_gemma3/run.lock"))  # noqa: E731
            wait_for(lambda: hold.held_models == 2 and locks() and locks()[0].read_text().strip(), 120)
            os.kill(json.loads(locks()[0].read_text())["pid"], signal.SIGKILL)
            hold.release()
            _, err = sweep.communicate(timeout=120)
        finally:
            sweep.kill()
    [sweep_dir] = outputs.glob("*/*_sweep")
    [job] = [path.name for path in (sweep_dir / ".submitit").iterdir() if path.name.isdigit() and
             not (path / f"{path.name}_0_result.pkl").exists()]
    said = (f"Job {job} (task: 0) with path {sweep_dir}/.submitit/{job}/{job}_0_result.pkl has not produced any "
            "output (state: FINISHED)")
    assert (sweep.returncode, err) == (EXIT["sweep_failed"], (
        f"benchrun: error: hydra/launcher lost the sweep's jobs: {said}; 1 recorded as 'interrupted' in {sweep_dir}; "
        "finish each with: benchrun-audit resume RUN\n"))
    info = json.loads((sweep_dir / "1_gemma3" / "run.json").read_text())
    assert (info["status"], info["reason"]) == ("interrupted", f"its process died while the sweep ran (hydra/launcher: "
                                                               f"{said})")


@pytest.mark.skipif(not can_mount(), reason="a read-only bind mount needs root")
def test_a_sweep_stopped_where_nothing_more_can_be_written_says_so_in_one_line(tmp_path):
    """SIGTERM while both joblib jobs import their scorer file, the sweep's outputs made read-only first. Before: a
    traceback ending `benchrun.core.errors.WriteFailed: read-only file system writing .../sweep.json`."""
    with _sweep(tmp_path, "joblib", "outputs") as (sweep, marks):
        wait_for(lambda: len(list(marks.iterdir())) == 2, 120)
        with read_only(tmp_path / "outputs"):
            sweep.send_signal(signal.SIGTERM)
            _, err = sweep.communicate(timeout=120)
    [sweep_dir] = (tmp_path / "outputs").glob("*/*_sweep")
    assert (sweep.returncode, err.splitlines()[-1]) == (EXIT["interrupted"], (
        f"benchrun: error: interrupted by SIGTERM: the sweep in {sweep_dir} could not be recorded in its sweep.json "
        f"(read-only file system writing {sweep_dir}/sweep.json); each job's run.json says how far it got "
        "(benchrun-audit list)"))
    assert "Traceback" not in err


def test_a_run_killed_while_a_files_import_hangs_leaves_no_import_running(tmp_path):
    """Before: the importing child lived on, its parent gone, until its import ended (60 s here)."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorer="s")), "custom_scorer.py": HANGING + scorer("return 1")})
    marks = tmp_path / "marks"
    marks.mkdir()
    run = subprocess.Popen([sys.executable, "-m", "benchrun", "task.path=bench", "runner.host=http://127.0.0.1:9",
                            "cache=false", f"outputs={tmp_path / 'outputs'}"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=child_env({"HANG_WHEN": str(tmp_path), "MARKS": str(marks)}))
    wait_for(lambda: any(marks.iterdir()), 120)
    [importer] = [int(mark.name) for mark in marks.iterdir()]
    run.kill()
    run.wait()
    try:
        with contextlib.suppress(TimeoutError):
            wait_for(lambda: _state(importer) in (None, "Z"), 30)
        assert (run.returncode, _state(importer)) in ((-signal.SIGKILL, None), (-signal.SIGKILL, "Z"))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(importer, signal.SIGKILL)


def _state(pid: int) -> str | None:
    """The state /proc gives of process `pid` (`S` asleep, `Z` ended but not yet waited for); None when it is gone."""
    return (stat_fields(pid) or [None])[0]
