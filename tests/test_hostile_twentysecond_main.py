"""The twenty-second hostile pass, the lead's cases: a signal Python drops where its handler cannot raise; a sweep a
script runs in the background, stopped."""

import signal
import subprocess
import sys
import textwrap

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun
from tests.helpers.localsweeps import job_logs, stopped_bypassing_job, stopped_local_sweep

DROPPED = textwrap.dedent("""
    import asyncio, os, signal, weakref
    from benchrun.core.interrupts import INTERRUPTS
    INTERRUPTS.install()

    class Held:
        pass

    def collected(_):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs here, inside the callback, which cannot raise
            pass

    held = Held()
    kept = weakref.ref(held, collected)
    del held

    async def ask():
        await asyncio.sleep(5)
        return "asked on"

    try:
        print(INTERRUPTS.run(ask))
    except KeyboardInterrupt as err:
        print("interrupted by", err)
""")


@pytest.mark.slow
def test_a_signal_raised_in_a_weakref_callback_interrupts_the_asking():
    """A sweep's submitit_local job sent SIGINT while the garbage collector ran a weakref callback lost it (Python
    printed "Exception ignored ... KeyboardInterrupt: SIGINT"): it asked on until its launcher killed it, `running`."""
    done = subprocess.run([sys.executable, "-c", DROPPED], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "interrupted by SIGTERM\n", "")


@pytest.mark.slow
def test_another_exception_python_drops_is_still_reported():
    script = textwrap.dedent("""
        import weakref
        from benchrun.core.interrupts import INTERRUPTS
        INTERRUPTS.install()

        class Held:
            pass

        def collected(_):
            raise ValueError("from a callback")

        held = Held()
        kept = weakref.ref(held, collected)
        del held
        print("went on")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "went on\n")
    assert done.stderr.startswith("Exception ignored in: <function collected at ")
    assert done.stderr.endswith("ValueError: from a callback\n")


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.slow
def test_a_local_sweep_run_in_a_scripts_background_stopped_by_sigterm_stops_its_jobs(tmp_path):
    """A shell starts a background job ignoring SIGINT, and so its sweep's submitit controllers: the SIGINT the sweep
    stopped them with (as submitit cancels a job) was ignored, and both jobs asked on, `running`, after the sweep
    said they were stopped. The controllers are sent SIGTERM, which they forward to their jobs. Each job stops
    itself: one that asked on (a copy of the sweep's INTERRUPTS handling its signals, see the twenty-sixth pass) was
    killed 60 s later, recorded by the sweep."""
    code, said, sweep_dir, runs = stopped_local_sweep(tmp_path, _ignoring_sigint)
    assert "(2 interrupted)" in said, job_logs(tmp_path / "outputs")
    assert (code, said) == (EXIT["interrupted"], (
        f"benchrun: error: interrupted by SIGTERM: the sweep in {sweep_dir} is recorded in its sweep.json, 2 jobs "
        "started (2 interrupted); a job it does not list never started; finish each interrupted one with: "
        "benchrun-audit resume RUN"))
    assert [(run["status"], run["reason"]) for run in runs] == [("interrupted", "interrupted by SIGTERM")] * 2, \
        job_logs(tmp_path / "outputs")


@pytest.mark.slow
def test_a_stopped_local_sweep_stops_a_job_that_passes_sigterm_over(tmp_path, monkeypatch):
    """The takeback sent only SIGTERM to the controllers: a job that had not yet set benchrun's handlers passed it
    over (submitit's `bypass`), ran its whole run after the sweep said it stopped, and the sweep waited 60 s."""
    assert stopped_bypassing_job(tmp_path, monkeypatch) == 0


def _judge_failing_fast_at(limit: int):
    """A Judge's fail-fast count alone (no runner, no specs): FailFast once `limit` answers in a row failed alike."""
    from benchrun.execute.judging import Judge

    judge = Judge.__new__(Judge)
    judge._limit, judge._key, judge.runner = limit, "judge.max_consecutive_failures", None
    judge._failing, judge._pending, judge._broken = None, set(), False
    return judge


def test_a_judge_failing_fast_says_so_once_and_holds_what_fails_after():
    """After the judge failed fast (three 503s), each call still failing (a timeout, in flight as the run stopped)
    raised FailFast again, of its own kind: the run said `TimeoutError` and `judge.timeout_s` advice where the judge's
    503s had stopped it, and the gradings being committed as it stopped were dropped."""
    from benchrun.core.errors import FailFast
    from benchrun.core.records import ErrorInfo

    judge = _judge_failing_fast_at(3)
    busy, slow = ErrorInfo(type="APIError", message="HTTP 503: busy"), ErrorInfo(type="TimeoutError", message="late")
    call = {"repeat": 0, "judge": "j", "judge_repeat": 0}
    for sample in "abc":
        try:
            judge._tally({"id": sample, **call}, busy)
        except FailFast as err:
            said = str(err)
    judge._tally({"id": "d", **call}, None)
    for sample in "efg":
        judge._tally({"id": sample, **call}, slow)
    assert said.startswith("the judge's requests failed the same way for answer after answer (3 in a row), so the "
                           "judge's setup is broken, not the benchmark: APIError: HTTP 503: busy")
    assert sorted(key[0] for key in judge._pending) == ["a", "b", "c", "e", "f", "g"]


@pytest.mark.parametrize("value", [".Xk3sPq9", "~Pa55word", "Xk3s/Pq9.Abc"])
def test_a_credential_that_only_begins_like_a_path_is_refused(tmp_path, value):
    """This pass let a credential-named key given a file's path be taken, and read any value beginning with `.` or `~`,
    or holding `/` and a `.`, as one: `+hydra.job.env_set.DB_PASSWORD=.Xk3sPq9` was archived in Hydra's copies."""
    done = call_benchrun("task=listbench", f"+hydra.job.env_set.DB_PASSWORD={value}", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': hydra.job.env_set.DB_PASSWORD: secrets are never taken from the config, where "
        "they would be archived (a credential's name); put an API key in an environment variable and name it with "
        "runner.api_key_env, and give URLs without user names or passwords\n"))
    assert list(tmp_path.iterdir()) == []


def test_a_file_path_given_to_a_credential_named_variable_is_taken(tmp_path):
    done = call_benchrun("task=listbench", "+hydra.job.env_set.GOOGLE_APPLICATION_CREDENTIALS=~/sa.json",
                         "dry_run=true", cwd=tmp_path)
    assert done.returncode == EXIT["ok"], done.stderr
