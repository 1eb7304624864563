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
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.runclock import RunClock
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
