"""Hostile input, twenty-fourth pass, the runs-as-processes side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- benchrun's own code failing to load (a broken `rich.py` or `omegaconf.py` on PYTHONPATH shadowing the library, or
  one benchrun loads only as a run starts): `python -m benchrun` ended in an UnboundLocalError of its own, its error
  reporter being what had failed to load; a harmless `yaml.py` or `rich.py` of the working directory, which `python -m
  benchrun` imports in place of the library, the same, or `benchrun is not installed in this Python ...; install it as
  the README says`. Now one line naming the file that failed and why, and the file that hides the library, exit 2
  (`benchrun.core.loading`); benchrun-audit the same (`verify`/`resume` beside a `yaml.py`: a traceback, exit 1)
- a run refused as its job starts (a config value out of range) in a folder without `outputs/`: the run's folder and
  its date folder were taken back, `outputs/` (and every folder above it made for the run, `outputs=new/deep/dir`)
  left behind empty. Now each folder Hydra made for the run is taken back if that empties it
  (`compose.takeback.forget_hydra_copies`); and a dry run refused so with `hydra.run.dir=q/r/s` left all three
  folders: they are noted as made for it, as a run's are (`callbacks.RunDirCheck.on_run_start`)
- a sweep's job directory planted as a symbolic link (to a folder elsewhere) while an earlier job runs: Hydra made and
  wrote its copies through it, and the job's whole run was written there, the sweep `completed`, exit 0. Now the job
  refuses, at its claim, a directory that is not a folder of its own inside the sweep's (`archive.claims.stray_job_dir`,
  `RunWriter.create`), nothing of its run written; Hydra's copies written through it are taken back
  (`compose.takeback.forget_copies_through`); the sweep lists the job `missing` and exits 1. A file planted there
  instead stopped the sweep (Hydra's basic launcher: `file exists`) with no sweep.json, the completed job listed
  nowhere: now the sweep is settled and its line says so, as for a signal (`cli.stopped_sweep`, from `__main__`)
- $HOME relative (`HOME=rel`, a script's or a container's): `~` was a folder of the working directory, the response
  cache made in ./rel/.cache/benchrun, `outputs=~/runs` put under it. Now refused as an empty $HOME is, wherever `~`
  is needed (`core.home.home`)
- a limit of open files so low (`ulimit -n 12`) that a benchmark's own file could not be imported: said as that file's
  fault, `in 'custom_response.py': cannot import: OSError: [Errno 24] Too many open files: '.'`, exit 2. Now this
  process's limit (`core.errors.OWN_LIMITS`) is the system's error wherever user code meets it
  (`compiler.usercode.contained`): `too many open files: .; nothing was asked; run ... is recorded as 'failed'`, exit 4
- one a little higher (`ulimit -n 14`), at which the event loop cannot be made: the run's line, then `coroutine
  'Interrupts.run.<locals>.cancellable' was never awaited` and a traceback of ten lines (`Exception ignored in
  BaseEventLoop.__del__ ... AttributeError: ... no attribute '_ssock'`). Now the loop is made before the coroutine, and
  the half-made loop's error as it is collected is dropped (`core.interrupts.Interrupts.run`, `_unraisable`)
- a run refused by the system as its job started (`ulimit -v 60000`: out of memory loading the ollama client) whose
  taking back was refused too (listing its folder: `OSError: [Errno 12] Cannot allocate memory`): three tracebacks
  chained, exit 1. Taking back is done as far as the system lets, and the run's own error is said
  (`compose.takeback.forget_hydra_copies`)
- a run directory (hydra.run.dir) holding a named pipe where Hydra writes the run's log (`benchrun.log`) or a copy of
  the config (`.hydra/config.yaml`): the run hung at its start for good, waiting for a reader; a symbolic link there
  (`benchrun.log -> ../victim`) had Hydra's log appended to the file it names. Now refused before Hydra writes, as a
  run's own files are (`callbacks._unowned_hydra_file`, with `archive.dirlock.own_file`)
"""

from __future__ import annotations

import errno
import glob
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.compose import takeback
from benchrun.core.errors import EXIT
from benchrun.testing.holding import Hold
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.commands import call_benchrun, make_run, run_benchrun

WORKTREE = str(Path(__file__).resolve().parents[1])


HIDES = ("(as '{module}'), of the working directory or $PYTHONPATH, hides the library of that name that benchrun "
         "imports: rename it, or run benchrun from another directory")


@pytest.mark.parametrize(("module", "body", "why"), [
    ("omegaconf", "raise RuntimeError('broken on purpose')\n", "RuntimeError: broken on purpose"),
    ("rich", "raise RuntimeError('broken on purpose')\n", "RuntimeError: broken on purpose"),
    ("httpx", "def (\n", "SyntaxError: invalid syntax (httpx.py, line 1)"),
])
def test_a_library_that_fails_to_load_is_one_line(tmp_path: Path, module: str, body: str, why: str) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / f"{module}.py").write_text(body)
    path = os.pathsep.join([str(shadow), WORKTREE])
    result = run_benchrun("task=listbench", "dry_run=true", cwd=tmp_path, env={"PYTHONPATH": path})
    assert (result.returncode, result.stdout) == (EXIT["usage"], "")
    assert result.stderr == (f"benchrun: error: Python could not load {shadow / module}.py, which benchrun needs: {why}; "
                             f"{shadow / module}.py {HIDES.format(module=module)}\n")
    assert sorted(os.listdir(tmp_path)) == ["shadow"]


@pytest.mark.parametrize(("module", "said"), [
    ("yaml", "Python could not load {omegaconf}/_utils.py, which benchrun needs: AttributeError: module 'yaml' has no "
             "attribute 'Dumper'"),
    ("rich", "No module named 'rich.console'; 'rich' is not a package"),
])
def test_a_file_of_the_working_directory_named_as_a_library_is_named(tmp_path: Path, module: str, said: str) -> None:
    """`python -m benchrun` imports a user's own `yaml.py` or `rich.py` of the working directory in place of the
    library: an UnboundLocalError, or `benchrun is not installed in this Python ...; install it as the README says`."""
    import omegaconf

    (tmp_path / f"{module}.py").write_text("x = 1\n")
    result = run_benchrun("task=listbench", "dry_run=true", cwd=tmp_path)
    where = tmp_path / f"{module}.py"
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: {said.format(omegaconf=Path(omegaconf.__file__).parent)}; {where} "
        f"{HIDES.format(module=module)}\n"))


@pytest.mark.parametrize("outputs", [None, "new/deep/outputs"])
def test_a_run_refused_as_its_job_starts_leaves_no_folder_it_made(tmp_path: Path, outputs: str | None) -> None:
    """Hydra made outputs/DATE/TIME_... for the run; a config refused as the job starts took back the run's folder and
    its date folder but left `outputs/` (and any folder above it made for the run) behind, empty."""
    (tmp_path / "kept").mkdir()
    given = [] if outputs is None else [f"outputs={outputs}"]
    result = call_benchrun("task=listbench", "runner.concurrency=-1", *given, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        EXIT["usage"], "benchrun: error: in 'config': runner.concurrency: -1 is out of bounds: give at least 1\n")
    assert sorted(os.listdir(tmp_path)) == ["kept"]
    result = call_benchrun("task=listbench", "runner.concurrency=-1", "outputs=kept/a/b", cwd=tmp_path)
    assert result.returncode == EXIT["usage"]
    assert [sorted(os.listdir(tmp_path)), os.listdir(tmp_path / "kept")] == [["kept"], []]


def _planted_sweep(tmp_path: Path, plant) -> tuple[subprocess.Popen, str, str, Path]:
    """A basic sweep of two models, `plant(job_dir)` done to its second job's directory while the first is held."""
    hold = Hold(listbench_answer, after=1)
    with FakeOllama(models=["llama3.2", "gemma3"], responder=hold) as server:
        sweep = subprocess.Popen([sys.executable, "-m", "benchrun", "-m", "runner.model=llama3.2,gemma3",
                                  "task=listbench", f"runner.host={server.url}", "cache=false",
                                  f"outputs={tmp_path / 'outputs'}"], cwd=tmp_path, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=child_env())
        try:
            wait_for(lambda: hold.holding, 60)
            [sweep_dir] = map(Path, glob.glob(str(tmp_path / "outputs/*/*_sweep")))
            plant(sweep_dir / "1_gemma3")
            hold.release()
            out, err = sweep.communicate(timeout=120)
        finally:
            sweep.kill()
    return sweep, out, err, sweep_dir


def test_a_sweep_job_directory_planted_as_a_link_is_refused_at_its_claim(tmp_path: Path) -> None:
    away = tmp_path / "away"
    away.mkdir()
    sweep, out, err, sweep_dir = _planted_sweep(tmp_path, lambda job: job.symlink_to(away))
    job = sweep_dir / "1_gemma3"
    assert (sweep.returncode, err) == (EXIT["sweep_failed"], (
        f"benchrun: error: {job} is a symbolic link (to {away}) where the job's own folder in the sweep {sweep_dir} "
        "belongs; a job writes only into a folder of its own: nothing was recorded through it (Hydra's copies of the "
        "config were taken back); remove it and start the job again in a new sweep\n"))
    assert "job 1_gemma3 (unknown model) missing: the job left no run.json; see its log" in out
    assert (os.listdir(away), os.readlink(job)) == ([], str(away))


@pytest.mark.parametrize(("given", "key", "what", "instead"), [
    ("cache=true", "cache_dir", "the response cache's place, ~/.cache/benchrun", "XDG_CACHE_HOME, cache_dir= or cache=false"),
    ("outputs=~/runs", None, "the override 'outputs=~/runs'", "give the path itself"),
])
def test_a_relative_home_is_refused_where_tilde_is_needed(tmp_path: Path, given: str, key: str | None, what: str,
                                                          instead: str) -> None:
    with FakeOllama(models=["llama3.2"]) as server:
        result = run_benchrun("task=listbench", "cache=false", given, f"runner.host={server.url}", cwd=tmp_path,
                              env={"HOME": "rel", "XDG_CACHE_HOME": ""})
    at = f"{key}: " if key else ""
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: {at}{what}: ~ is the home directory, and $HOME is 'rel', not an absolute path (~ would be a "
        f"folder of the working directory); set HOME to an absolute path, or {instead}\n"))
    assert not (tmp_path / "rel").exists()


def test_a_low_open_files_limit_is_the_systems_error_in_one_line(tmp_path: Path) -> None:
    """Each limit from 10 to 16 open files, which stop a run at different places (a benchmark file's import, the
    scratch folder, the event loop, the runner's import): one line each, the system's error, exit 4."""
    said = []
    with FakeOllama(models=["llama3.2"]) as server:
        for limit in range(10, 17):
            done = subprocess.run([sys.executable, "-m", "benchrun", "task=listbench", f"runner.host={server.url}",
                                   "cache=false", f"hydra.run.dir=outputs/{limit}"], cwd=tmp_path, env=child_env(),
                                  capture_output=True, text=True, timeout=120,
                                  preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
            said.append((done.returncode, _unnamed(done.stderr, tmp_path / "outputs" / str(limit))))
    assert said == [(EXIT["archive"], "benchrun: error: too many open files; run RUN is recorded as 'failed' in DIR; "
                     "...\n")] * 7


def _unnamed(stderr: str, run_dir: Path) -> str:
    """`stderr` with the file a system error names, the run's id and directory and what to do next left out."""
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"][:12] if (run_dir / "run.json").exists() else "?"
    stderr = stderr.replace(run_id, "RUN").replace(str(run_dir.absolute()), "DIR")
    stderr = re.sub(r"^(benchrun: error: too many open files)(: [^;]*)?(; nothing was asked)?", r"\1", stderr)
    return re.sub(r"( with 0 of \d+ samples)? in DIR; (start it again|finish it with: benchrun-audit resume DIR)\n$",
                  " in DIR; ...\n", stderr)


def test_taking_back_a_run_goes_as_far_as_the_system_lets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of memory, the system refused to list the run's folder as it was taken back: that OSError replaced the
    run's own error (three tracebacks, exit 1)."""
    run_dir = tmp_path / "outputs" / "day" / "run"
    (run_dir / ".hydra").mkdir(parents=True)
    for name in ("config.yaml", "hydra.yaml", "overrides.yaml", "../benchrun.log"):
        (run_dir / ".hydra" / name).write_text("x\n")
    monkeypatch.setattr(takeback, "MADE", takeback.Made(made_for_runs={str(run_dir): tmp_path / "outputs"}))

    def refused(folder: Path):
        raise OSError(errno.ENOMEM, "Cannot allocate memory", str(folder))

    monkeypatch.setattr(Path, "iterdir", refused)
    takeback.forget_hydra_copies(run_dir)
    assert os.listdir(run_dir) == []


def test_out_of_memory_as_a_library_loads_is_said_as_the_systems(tmp_path: Path) -> None:
    """Not as a library that failed to load (`load_failure` leaves the system's refusals to their own line)."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "omegaconf.py").write_text("raise MemoryError\n")
    result = run_benchrun("task=listbench", "dry_run=true", cwd=tmp_path,
                          env={"PYTHONPATH": os.pathsep.join([str(shadow), WORKTREE])})
    assert (result.returncode, result.stderr) == (EXIT["archive"], "benchrun: error: out of memory\n")


@pytest.mark.parametrize(("name", "planted", "said"), [
    ("benchrun.log", "fifo", "a named pipe (FIFO), where the run's own file belongs; benchrun writes only into its own "
                             "files"),
    (".hydra/config.yaml", "fifo", "a named pipe (FIFO), where the run's own file belongs; benchrun writes only into "
                                   "its own files"),
    ("benchrun.log", "link", "a symbolic link (to ../victim), where the run's own file belongs; benchrun never "
                             "writes through one: put the file itself there"),
])
@pytest.mark.parametrize("dry", [False, True])
def test_a_run_directory_with_a_pipe_or_link_where_hydra_writes_is_refused(tmp_path: Path, name: str, planted: str,
                                                                          said: str, dry: bool) -> None:
    path = tmp_path / "d" / name
    path.parent.mkdir(parents=True)
    (tmp_path / "victim").write_text("precious\n")
    os.mkfifo(path) if planted == "fifo" else path.symlink_to("../victim")
    command = ("task=listbench", "hydra.run.dir=d", "runner.host=http://127.0.0.1:9", f"dry_run={dry}")
    # a pipe in a process of its own, in a time limit: a run that opened it would wait for a reader for ever
    result = run_benchrun(*command, cwd=tmp_path, timeout=30) if planted == "fifo" else call_benchrun(*command,
                                                                                                     cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'd/{name}': {said}; nothing was changed; pick a new directory (hydra.run.dir=...)\n"))
    assert (tmp_path / "victim").read_text() == "precious\n"


def test_a_file_of_the_working_directory_hiding_rich_is_named_by_benchrun_audit(tmp_path: Path) -> None:
    """benchrun-audit loads rich as it starts: a traceback ending `ModuleNotFoundError: No module named 'rich.console';
    'rich' is not a package`, exit 1."""
    (tmp_path / "rich.py").write_text("x = 1\n")
    result = run_benchrun("list", cwd=tmp_path, module="benchrun.audit")
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: No module named 'rich.console'; 'rich' is not a package; {tmp_path / 'rich.py'} "
        f"{HIDES.format(module='rich')}\n"))


def test_a_dry_run_refused_as_it_starts_leaves_no_folder_it_made(tmp_path: Path) -> None:
    result = call_benchrun("task=listbench", "hydra.run.dir=q/r/s", "dry_run=true", "runner.concurrency=-1",
                           cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        EXIT["usage"], "benchrun: error: in 'config': runner.concurrency: -1 is out of bounds: give at least 1\n")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("command", ["verify", "resume"])
def test_a_yaml_py_of_the_working_directory_is_named_by_audit_commands(tmp_path: Path, command: str) -> None:
    """verify and resume met the user's `yaml.py` in place of the library: a traceback, exit 1. Both read config.yaml
    as they read the manifest (its size bound, `archive.manifestbound`), so both meet it as they load yamlfile."""
    said = ("Python could not load {yamlfile}, which benchrun needs: AttributeError: module 'yaml' has no attribute "
            "'SafeLoader'")
    from benchrun.core import yamlfile

    run_dir = make_run(tmp_path, "task=listbench", models=("llama3.2",))
    (tmp_path / "yaml.py").write_text("x = 1\n")
    result = run_benchrun(command, str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: {said.format(yamlfile=yamlfile.__file__)}; {tmp_path / 'yaml.py'} "
        f"{HIDES.format(module='yaml')}\n"))


def test_a_sweep_stopped_by_a_file_planted_as_a_job_directory_records_what_ran(tmp_path: Path) -> None:
    """Hydra's basic launcher could not make the job's directory (`file exists`) and the sweep stopped there: one line,
    but no sweep.json, the completed job listed nowhere."""
    sweep, _, err, sweep_dir = _planted_sweep(tmp_path, lambda job: job.write_text("mine\n"))
    assert (sweep.returncode, err) == (EXIT["archive"], (
        f"benchrun: error: file exists: {sweep_dir / '1_gemma3'}; the sweep in {sweep_dir} is recorded in its "
        "sweep.json, 1 job started (1 completed); a job it does not list never started\n"))
    jobs = json.loads((sweep_dir / "sweep.json").read_text())["jobs"]
    assert [(job["dir"], job["status"]) for job in jobs] == [("0_llama3.2", "completed")]
    assert (sweep_dir / "1_gemma3").read_text() == "mine\n"
