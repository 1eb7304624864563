"""The nineteenth hostile pass, the lead's side: a local sweep stopped by a signal said a job was still `running`
when submitit's controller had ended before the job it killed was gone; a run of a smaller
`runner.max_response_bytes` deleted from a shared response cache every answer longer than its bound, which the runs
that wrote them would have taken; `list` called a run its live writer was sealing unreadable (show and verify had been
taught that instant by the archive side); a judge's credential in the config was refused with advice to name the
runner's variable (runner.api_key_env), where the judge's key is named by judge.api_key_env."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import textwrap

import pytest

from benchrun.archive.dirlock import DirLock
from benchrun.compose import takeback
from benchrun.core.errors import EXIT
from benchrun.core.layout import LOCK
from benchrun.core.procfs import stat_fields
from benchrun.testing.inprocess import cli
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl, synthetic_run
from tests.helpers.commands import call_benchrun, run_dir_of

pytestmark = pytest.mark.slow

CONTROLLER = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    job = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(job.pid, flush=True)
    time.sleep(60)
""")
"""A submitit controller that ends at once when it is stopped (SIGTERM, which the takeback sends), its job left below
it, still alive."""
JOB = textwrap.dedent("""
    import fcntl, signal, sys, time
    lock = open(sys.argv[1], "a")
    fcntl.flock(lock, fcntl.LOCK_EX)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("locked", flush=True)
    time.sleep(1.5)
""")
"""A job that holds its run's lock and takes 1.5 s to stop."""


def test_a_stopped_local_sweep_waits_for_the_jobs_below_its_launchers_not_only_for_the_launchers(tmp_path,
                                                                                               monkeypatch):
    sweep_dir, job_dir = tmp_path / "sweep", tmp_path / "sweep" / "0"
    job_dir.mkdir(parents=True)
    with subprocess.Popen([sys.executable, "-c", CONTROLLER, JOB, str(job_dir / LOCK)], stdout=subprocess.PIPE,
                          text=True) as controller:
        job = int(controller.stdout.readline())
        (sweep_dir / takeback.LAUNCHER_FILES / str(controller.pid)).mkdir(parents=True)
        while not _locked(job_dir / LOCK):
            pass
        monkeypatch.setattr(takeback, "MADE", takeback.Made(local_sweeps=[sweep_dir]))
        takeback.stop_launched_jobs()
        assert (controller.wait(), _locked(job_dir / LOCK), _running(job)) == (0, False, False)


def _locked(path) -> bool:
    """Whether another process holds an exclusive flock on `path`."""
    if not path.exists():
        return False
    with open(path) as file:
        try:
            fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


def _running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie no longer holds anything)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


LONG = json.dumps({"answer": "x" * 1500})
"""An answer of 1,516 bytes: within the default bound, past runner.max_response_bytes=1024."""


def test_a_run_of_a_smaller_answer_bound_leaves_the_longer_answers_of_a_shared_cache_to_the_runs_that_take_them(
        tmp_path):
    asked = ["task=folderbench", f"cache_dir={tmp_path / 'cache'}", f"outputs={tmp_path / 'o'}"]
    with FakeOllama(responder=lambda req: LONG) as server:
        runs = [call_benchrun(f"runner.host={server.url}", *asked, *more, cwd=tmp_path)
                for more in ((), ("runner.max_response_bytes=1024", "runner.retries=0"), ())]
    records = [read_jsonl(run_dir_of(done.stdout) / "responses.jsonl") for done in runs]
    assert [done.returncode for done in runs] == [EXIT["ok"]] * 3
    assert [[(r["cached_from"] is not None, r["error"] and r["error"]["type"]) for r in rows] for rows in records] == [
        [(False, None)] * 3, [(False, "TooLarge")] * 3, [(True, None)] * 3]


def test_a_run_listed_as_its_writer_seals_it_is_listed_with_its_numbers(tmp_path):
    """Between a writer's final run.json and its seal, `list` said `seal.json: missing ... cannot be trusted`."""
    run_dir = synthetic_run(tmp_path / "runs" / "run", [1.0, 0.0])
    (run_dir / "seal.json").unlink()
    lock = DirLock(run_dir).acquire()
    try:
        sealing = cli("list", str(tmp_path / "runs"), "--json", cwd=tmp_path, module="benchrun.audit")
    finally:
        lock.release(ended=True)
    unsealed = cli("list", str(tmp_path / "runs"), "--json", cwd=tmp_path, module="benchrun.audit")
    assert [row["status"] for row in json.loads(sealing.stdout)] == ["completed"]
    assert [row["reason"] for row in json.loads(unsealed.stdout)] == [
        f"in '{run_dir}': run 555555555555: seal.json: missing: the run ended (completed) but nothing covers run.json, so "
        f"what it says cannot be trusted; benchrun-audit verify {run_dir} says what changed"]


@pytest.mark.parametrize(("given", "why"), [("+judge.api_key=sk-abcdefghijklmnopqrstuvwxyz123456", "a credential's name"),
                                            ("judge.host=http://me:pw@judge:8080", "a URL with a user name or password in it")])
def test_a_judges_credential_in_the_config_is_refused_with_the_judges_variable_named(tmp_path, given, why):
    done = call_benchrun("dry_run=true", given, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {given.lstrip('+').split('=')[0]}: secrets are never taken from the config, "
        f"where they would be archived ({why}); put an API key in an environment variable and name it with "
        "judge.api_key_env, and give URLs without user names or passwords\n"))
