"""Hostile input, eighteenth pass, the seventeenth pass's own code attacked (writer fencing, core.cpus, core.runclock,
compiler.ownsource, the reaper, Slurm's options): the cases found bad, each with the rule it now obeys.

- a run that could start three threads and no more (a pids limit, `ulimit -u`, `ulimit -v` under a thread's stack)
  hung for ever once its scorer process greeted it: the run clock's heartbeat (`core.runclock`), started on its first
  reading in the scorer pipe's callback, could not start; asyncio logged the error as a traceback on standard output
  and the run waited on a greeting it had been given. A clock whose heartbeat did not start also froze one second on,
  so no scorer's time limit could have run out. Now the heartbeat starts as the scorer process does
  (`execute.scorerprocess.ScorerProcess.start`), where the system's refusal fails the run in one line, exit 4, and a
  clock whose heartbeat did not start is left unstarted, to start at its next reading
- `benchrun-audit` (rescore, resume, retry, merge) where no thread can be started or memory is out: a traceback,
  exit 1; its last resort took OSError alone. Now the system's refusal is one line there too, exit 4
  (`audit.__main__`, `core.errors.refused_by_system`)
- a benchmark's helpers.py that is a symbolic link to a file outside the benchmark (a shared helper linked in): it
  scored every sample, but a benchmark's own modules are told by where they resolve, so the manifest did not name
  it, its bytecode cache was taken, and an edit there changed the scores under the same manifest, verify intact.
  Now refused before anything is asked, as a benchmark file linking out is (`compiler.ownsource.refuse_linked_out`);
  one imported only inside a scorer function is refused as the benchmark's own module imported so
- a benchmark's helper package reading its own data file (`pkgutil.get_data("pkg", "answers.txt")`,
  `importlib.resources.files("pkg")`): since the seventeenth pass loads a benchmark's own modules from the source
  it read (`compiler.ownsource.Held`), the first got the package's source for any file it asked for (a wrong score,
  silently) and the second `FileNotFoundError: Can't open orphan path`. Now any file but the module's own is read as
  Python's loader reads it (`Held` is a SourceFileLoader given the module's bytes)
- a Slurm sweep's `additional_parameters` naming an option by a beginning of its name (`chd=/elsewhere`,
  `pars=true`, `test_on=true`), which sbatch takes as the option (getopt_long's abbreviations): every check the
  seventeenth pass made of sbatch's options by their whole names was passed; with `chd` the jobs asked the benchmark
  of that name elsewhere and wrote their runs there, the sweep's table empty, exit 0. Each key is now read as the
  option sbatch takes it for, the last in the job's script where two name one option (`compose.slurmoptions._extra`);
  a beginning of an option submitit writes itself (`ar=`, `sig=`: its own --array, --signal follow and are taken)
  is no refusal
- `$SBATCH_ARRAY_INX=0-0` (sbatch's variable for --array, taken over the script's): the second job of the sweep was
  never submitted, and said to have `left the queue without a result (cancelled before it ran, killed, or its setup
  failed)`, exit 1, as the seventeenth pass's `additional_parameters.array=0-0` was. Now refused as that is
  (`compose.slurmoptions.submitits_own`)
- the seventeenth pass's fence left a window (its note's left item): a writer stopped past its lease between its
  check that run.lock still holds its note and its append (Ctrl-Z, SIGSTOP, a Slurm suspend, where locks stay on
  each machine), its run taken over from another machine meanwhile, made that append once continued, among the new
  writer's records (its digests then disagreeing with the files). Now a writer that takes a run over from another
  machine's writer makes the record files anew (`archive.detach`, from `DirLock.acquire`): the files the old writer
  holds open are no longer the run's, and its last append lands in none of them (on NFS it fails); and such a
  holder that does not end the run (a rescore) leaves its own note, not that writer's back, so that writer, if only
  stopped, is fenced once continued rather than appending to files no longer the run's
- a live run's run.lock replaced by a named pipe (`rm run.lock; mkfifo run.lock`): the lease's check, which locks
  anew a file saved in the lock's place by an editor, read the pipe and died with a traceback (`OSError: [Errno 29]
  Illegal seek`, `Exception in thread run.lock lease`) in the run's output, its lease renewed no more. Now only a
  file is locked anew (`archive.dirlock.DirLock._lock_anew`)
- a run at its limit of threads whose scorer calls overran (a pids limit; four threads, scorer_timeout_s=0.2 here,
  3 runs in 4): the process replacing the scorers' process could not start its child watcher's thread (`can't start
  new thread`), which the replacement's task took silently, and every call behind waited for ever: the run hung, 12
  of 12 samples asked and 10 never graded. Now such a refusal fails the calls behind as an OSError there does
  (`ScorerUnavailable: cannot start the scorer process: ...`, `execute.scorerprocess.ScorerProcess._respawn`)

Held (see the pass's note): own modules with a coding cookie, a BOM, `from __future__`, packages, inspect.getsource
under -O; the reaper as PID 1; runs at 3 to 6 threads; SBATCH_EXPORT and SBATCH_CHDIR set empty; false takeovers
(touch, rsync's identical note, junk appended, NFS's silly rename); SLURM_CPUS_* junk; --output into rescores/.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from benchrun.archive.dirlock import DirLock
from benchrun.archive.writer import RecordFile
from benchrun.compiler.scoring import scorers_in
from benchrun.compose.slurmoptions import all_warning, moved_away, no_environment, submitits_own
from benchrun.core.errors import EXIT
from benchrun.core.runclock import RunClock
from benchrun.execute.scorerprocess import ScorerProcess
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import run_benchrun, run_dir_of
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


def run_in(bench: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    """A run of the benchmark `bench` from its folder (whose modules it imports), against a fresh loopback Ollama;
    the chats it asked."""
    with FakeOllama(models=["llama3.2"]) as server:
        done = run_benchrun("task.path=.", f"runner.host={server.url}", "cache=false", "outputs=outputs", cwd=bench)
    return done, [request["path"] for request in server.requests if request["path"].endswith("/chat")]


@pytest.mark.slow
@pytest.mark.parametrize(("scorer", "said"), [
    ("from helpers import same\n\n\ndef s(response, reference):\n    return same(response, reference)\n",
     "imports helpers.py, which links outside the benchmark directory (to {}): the run records only modules inside "
     "it as the benchmark's own; copy the module into the benchmark"),
    ("def s(response, reference):\n    from helpers import same\n    return same(response, reference)\n",
     "'helpers', a module of the benchmark, is imported inside a function (line 2), and by no file as it is "
     "imported: the run records a benchmark's own modules as its files import them; import it at the top of the file"),
], ids=["at the top", "in a function"])
def test_a_helper_module_linked_in_from_outside_the_benchmark_is_refused(tmp_path, scorer, said):
    shared = tmp_path / "shared" / "helpers.py"
    shared.parent.mkdir()
    shared.write_text("def same(a, b):\n    return int(a == b)\n")
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorer="s")), "custom_scorer.py": scorer})
    (bench / "helpers.py").symlink_to(shared)
    done, asked = run_in(bench)
    assert (done.returncode, done.stdout, done.stderr, asked) == (
        EXIT["usage"], "", f"benchrun: error: in 'custom_scorer.py': {said.format(shared)}\n", [])


@pytest.mark.slow
def test_a_helper_package_reads_its_own_data_files_as_they_are(tmp_path):
    read = "pkgutil.get_data('pkg', 'answers.txt'), (importlib.resources.files('pkg') / 'answers.txt').read_bytes()"
    bench = write_bench(tmp_path, {
        "tasks.yml": tasks_yml(task(scorer="s")), "pkg/__init__.py": "P = 1\n", "pkg/answers.txt": "42\n",
        "custom_scorer.py": f"import importlib.resources\nimport pkgutil\n\nimport pkg\n\n\ndef s(response, reference):\n"
                            f"    return {{'data': int(({read}) == (b'42\\n', b'42\\n'))}}\n"})
    done, _ = run_in(bench)
    scores = [json.loads(line) for line in (run_dir_of(done.stdout) / "scores.jsonl").read_text().splitlines()]
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert [(score["metrics"], score["error"]) for score in scores if score["scorer"] == "s"] == [
        ({"s.data": 1}, None), ({"s.data": 1}, None)]


SLURM_NODE = ["hydra.launcher.partition=debug", "hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1",
              "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10", "hydra.launcher.setup=[]"]


ARRAY = ("submitit makes the sweep's jobs one array itself, a task per job, and this would leave some out, each then "
         "taken for lost (hydra.launcher.array_parallelism sets how many run at once); leave it out")
EXTRA = "+hydra.launcher.additional_parameters."


@pytest.mark.slow
@pytest.mark.parametrize(("given", "env", "line"), [
    (EXTRA + "chd={}", {}, "hydra.launcher.additional_parameters.chd={}: a job of the sweep would start in that "
     "directory, where its relative paths (task.path, outputs, runner_file) name other files than where the sweep "
     "was started, and its run would be written there, outside the sweep; leave it out (jobs start where the sweep "
     "is started)"),
    (EXTRA + "pars=true", {}, "hydra.launcher.additional_parameters.pars=true: submitit reads each job's id from what "
     "sbatch says as it submits it ('Submitted batch job N'), which this changes, so the sweep could not follow its "
     "jobs (submitted, or not at all); leave it out"),
    (EXTRA + "test_on=true", {}, "hydra.launcher.additional_parameters.test_on=true: submitit reads each job's id "
     "from what sbatch says as it submits it ('Submitted batch job N'), which this changes, so the sweep could not "
     "follow its jobs (submitted, or not at all); leave it out"),
    ("hydra.launcher.timeout_min=10", {"SBATCH_ARRAY_INX": "0-0"}, "$SBATCH_ARRAY_INX=0-0: " + ARRAY)],
    ids=["chd", "pars", "test_on", "SBATCH_ARRAY_INX"])
def test_a_slurm_option_given_by_a_beginning_of_its_name_or_its_variable_is_checked_as_sbatch_takes_it(
        tmp_path, given, env, line):
    elsewhere = tmp_path / "elsewhere"
    done = run_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", *SLURM_NODE,
                        given.format(elsewhere), "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path,
                        env=env)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: {line.format(elsewhere)}\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("extra", "refused"), [
    ({"chdir": ".", "chd": "{}"}, None),  # submitit writes them sorted: sbatch takes the last, chdir
    ({"chd": ".", "chdir": "{}"}, "hydra.launcher.additional_parameters.chdir={}"),
    ({"ar": "0-0"}, None), ({"sig": "USR2@3600"}, None),  # submitit's own --array, --signal come after: sbatch's
    ({"tim": "1"}, None), ({"expo": "NONE"}, None)])  # sbatch refuses these itself: no advice of benchrun's
def test_slurm_options_given_twice_or_overridden_by_submitits_own_are_read_as_sbatch_takes_them(tmp_path, extra,
                                                                                                refused):
    launcher = {"timeout_min": 10, "signal_delay_s": 120,
                "additional_parameters": {key: value.format(tmp_path) for key, value in extra.items()}}
    said = moved_away(launcher) or submitits_own(launcher) or no_environment(launcher) or all_warning(launcher)
    assert (said and said.split(": ")[0]) == (refused and refused.format(tmp_path))


STOPPED_ELSEWHERE = {"pid": 4242, "host": "gpu9", "since": "2026-12-04T08:00:00+00:00"}
"""The note of a writer on another machine stopped past its lease (its lock unseen here)."""


def _stopped_elsewhere(run_dir: Path, kept: dict[str, bytes]) -> dict[str, RecordFile]:
    """`run_dir` holding the record files `kept`, which STOPPED_ELSEWHERE holds open, its lease lapsed long ago."""
    for name, data in kept.items():
        (run_dir / name).write_bytes(data)
    (run_dir / "run.lock").write_text(json.dumps(STOPPED_ELSEWHERE))
    os.utime(run_dir / "run.lock", (0, 0))
    return {name: RecordFile(run_dir / name) for name in kept}


KEPT = {"responses.jsonl": b'{"id": "t:a=1"}\n', "records.sha256": b"responses.jsonl 1 ab12\n"}


def test_a_writers_append_checked_before_another_machines_writer_took_its_run_over_lands_in_none_of_its_files(
        tmp_path):
    stopped = _stopped_elsewhere(tmp_path, KEPT)  # its check made, its append not yet
    taker = DirLock(tmp_path).acquire()
    for sink in stopped.values():
        sink.append(b'{"id": "t:a=2"}\n')
        sink.close()
    assert {name: (tmp_path / name).read_bytes() for name in KEPT} == KEPT
    assert (taker.stale, json.loads((tmp_path / "run.lock").read_text())["pid"]) == (STOPPED_ELSEWHERE, os.getpid())
    taker.release(ended=True)


def test_a_holder_that_took_a_run_over_from_another_machine_does_not_give_its_note_back_to_that_writer(tmp_path):
    """A rescore (which puts back a dead holder's note) over a writer of another machine only stopped: given its note
    back, that writer, continued, would find the run its own and append to files no longer the run's."""
    for sink in _stopped_elsewhere(tmp_path, KEPT).values():
        sink.close()
    taker = DirLock(tmp_path).acquire()
    taker.release()
    assert json.loads((tmp_path / "run.lock").read_text())["pid"] == os.getpid()


def test_a_live_runs_lock_replaced_by_a_named_pipe_is_not_locked_anew_and_the_lease_goes_on(tmp_path):
    lock = DirLock(tmp_path).acquire()
    held = os.fstat(lock._fd)
    lock.path.unlink()
    os.mkfifo(lock.path)
    renewed = lock._still_renewed()  # the lease's check, each renewal
    found = os.fstat(lock._fd)
    lock.release(ended=True)
    assert (renewed, (found.st_dev, found.st_ino)) == (True, (held.st_dev, held.st_ino))


@pytest.mark.slow
def test_calls_behind_one_that_overran_fail_when_no_thread_can_be_started_for_the_next_scorer_process(
        tmp_path, monkeypatch):
    bench = write_bench(tmp_path, {"custom_scorer.py": "import time\n\n\ndef s(response, reference):\n"
                                                       "    time.sleep(30)\n    return 1\n"})
    scorers = scorers_in(bench / "custom_scorer.py", "custom_scorer.py", probe=False)

    async def graded() -> list:
        process = ScorerProcess(scorers, tmp_path / "benchrun.log", 0.2)
        await process.start()

        async def refused(self: ScorerProcess) -> None:  # a pids limit reached: no thread to watch a new process
            raise RuntimeError("can't start new thread")
        monkeypatch.setattr(ScorerProcess, "_spawn", refused)
        calls = [process.call("s", "1", "1"), process.call("s", "2", "2")]
        process.send()
        try:
            return await asyncio.wait_for(asyncio.gather(*calls), 60)
        finally:
            await process.close()
    first, behind = asyncio.run(graded())
    assert ((first.type, first.message), (behind.type, behind.message)) == (
        ("TimeoutError", "timed out after 0.2 s"),
        ("ScorerUnavailable", "cannot start the scorer process: can't start new thread"))
