"""Hostile input, eighteenth pass, the seventeenth pass's own code attacked (writer fencing, core.cpus, core.runclock,
compiler.ownsource, the reaper, Slurm's options): the cases found bad, each with the rule it now obeys.

- a run that could start three threads and no more (a pids limit, `ulimit -u`, `ulimit -v` under a thread's stack)
  hung for ever once its scorer process greeted it: the run clock's heartbeat (`core.runclock`), started on its first
  reading in the scorer pipe's callback, could not start; asyncio logged the error as a traceback on standard output
  and the run waited on a greeting it had been given. A clock whose heartbeat did not start also froze one second on,
  so no scorer's time limit could have run out. Now the heartbeat starts as the scorer process does
  (`execute.scorerprocess.ScorerProcess.start`), where the system's refusal fails the run in one line, exit 4, and a
  clock whose heartbeat did not start is left unstarted, to start at its next reading
"""

from __future__ import annotations

import threading

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.runclock import RunClock
from tests.helpers.threadlimit import NO_THREAD, audit_with_threads, failed_for_a_thread, run_with_threads


@pytest.mark.slow
def test_a_run_that_can_start_no_thread_for_its_clock_is_one_line_not_a_hang(tmp_path):
    done = run_with_threads(tmp_path, 3)
    info, said = failed_for_a_thread(tmp_path)
    assert (done.returncode, done.stdout, done.stderr, info["status"]) == (EXIT["archive"], "", said, "failed")


def test_a_run_clock_whose_heartbeat_did_not_start_starts_it_at_its_next_reading(monkeypatch):
    clock, start, asked = RunClock(), threading.Thread.start, []

    def refused_once(thread: threading.Thread) -> None:
        asked.append(thread.name)
        if len(asked) == 1:
            raise RuntimeError("can't start new thread")
        start(thread)
    monkeypatch.setattr(threading.Thread, "start", refused_once)
    with pytest.raises(RuntimeError):
        clock.now()
    clock.now()
    assert asked == ["run clock", "run clock"]


@pytest.mark.slow
@pytest.mark.parametrize("threads", [0, 1])
def test_an_audit_command_that_can_start_no_thread_is_one_line(tmp_path, threads):
    """0: the lease on run.lock; 1: the run clock's heartbeat as the rescore's scorer process starts."""
    assert run_with_threads(tmp_path, 16).returncode == 0
    [run_dir] = (tmp_path / "outputs").glob("*/*")
    done = audit_with_threads(tmp_path, threads, "rescore", str(run_dir))
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["archive"], "", f"benchrun: error: {NO_THREAD}\n")
    assert not (run_dir / "rescores").exists() or list((run_dir / "rescores").iterdir()) == []
