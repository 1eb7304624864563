"""Hostile input, nineteenth pass, the files-and-processes side (issue 19's fresh pass of the same kinds): hostile
command lines, sweeps and process surroundings, the cases it found bad, each with the rule it now obeys.

- a sweep listing one value twice, once quoted (`-m runner.model=llama3.2,'llama3.2'`, `[a],['a']`): the check of a
  value listed twice compared the values as written, so the sweep ran two jobs of one label (`0_llama3.2`,
  `1_llama3.2`, two columns `llama3.2`) asking the same. Now the values are compared as each job is given them
  (`compose.sweepsize.job_values`, used by `callbacks._check_swept_once`)
- a dry run stopped by a signal (Ctrl-C, SIGTERM) while it compiles: its private directory in $TMPDIR was left
  behind, holding Hydra's multirun.yaml for a sweep, though the line said nothing was recorded and a dry run's
  directory is removed as it ends (the process ends by os._exit, past the exit function that removed it). Now it is
  removed as the process ends so too (`compose.config.remove_dry_run_dirs`, from `__main__._exit_now`)
- a benchmark's custom_*.py that changes the working directory or the umask at import (`os.chdir(...)`,
  `os.umask(0)`), imported in the run's own process: a sweep's next job, in the same process, looked for its
  `task.path=b` there (`'b' is not a directory`), the sweep's summary was written to a relative directory no longer
  there (no sweep.json, exit 4), and a run under umask 077 wrote its files 0o666, open to every user. Now both are put
  back after user code runs in the process, as its signal handling is (`compiler.runstate`)
- a credential given a variable in a Slurm sweep's setup (`hydra.launcher.setup=['export HF_TOKEN=hf_...']`, an
  `additional_parameters.export` of `ALL,HF_TOKEN=hf_...`), or given Hydra's config by a config file (a preset's
  `hydra.job.env_set.HF_TOKEN`, a launcher preset's setup): it was written into multirun.yaml, each job's .hydra
  copies and the Slurm job's script, in the sweep's directory, where `+hydra.job.env_set.HF_TOKEN=...` on the command
  line is refused by its name. Now a value given a credential's name is refused wherever a credential is
  (`core.secrets.assigned`), and what a config file gives Hydra's config that reaches a job is checked as the command
  line's is (`compose.hydragiven._check_secrets`, once `callbacks._check_secrets`)
- a dry run of a Slurm sweep whose directory holds a `%` (`outputs=/data/o%j`): its plans were printed, exit 0, where
  the sweep itself is refused (each job's files written where Slurm's pattern says), for the check was made of the dry
  run's own directory (left by the eighteenth pass). Now the dry run checks the directory its own stands in for
  (`compose.config.stood_for`)
- a benchmark's custom_scorer.py that puts its folder on sys.path at import (`sys.path.insert(0,
  os.path.dirname(__file__))`, a common idiom) before `from helpers import x`: in a sweep over benchmarks, the next
  job's `from helpers import x`, whose benchmark has no helpers.py, imported the first's, so its compile (and its dry
  run) passed, its manifest naming no helpers.py, and every scorer call of its run failed in its own scorer process
  (`ScorerUnavailable: ... No module named 'helpers'`), every sample asked of the model for nothing. Now sys.path is put back after
  user code runs in the process (`compiler.runstate`): that job is refused in one line, as alone
- a benchmark's custom_scorer.py that sets an environment variable at import (`os.environ["OLLAMA_HOST"] = ...`): a
  sweep's next job in the process, whose runner.host is read from $OLLAMA_HOST, asked the server the benchmark named
  (here none: `cannot reach Ollama at http://127.0.0.1:9`), not the user's. Now the environment is put back after
  user code runs in the process, as the scorer process puts it back after each call (`compiler.runstate`)
- a benchmark's custom_scorer.py that replaces a builtin at import (`builtins.print = ...`, to quiet itself): the run's
  one-line errors, printed, went nowhere (a run that could not reach its server exited 3 without a word). Now the
  builtins are put back after user code runs in the process, as the scorer process puts them back after each call
  (`compiler.runstate`)
- a benchmark's custom_scorer.py that bounds its own work at import (`resource.setrlimit(RLIMIT_NOFILE, (14, hard))`):
  it bounded the run, which failed (`too many open files ...; finish it with: benchrun-audit resume ...`, advice that
  met the same limit again); one that sets `sys.setrecursionlimit(60)` made the run a RecursionError's traceback. Now
  the limits are put back after user code runs in the process (`compiler.runstate`)
- a run refused (a config mistake found as its job starts, or a signal before it claimed its directory) in a directory
  made for it beforehand (`mkdir -p results/exp1/run`, then `hydra.run.dir=results/exp1/run`): the directory and its
  emptied parent were taken back as if Hydra had made them; a dry run's, its private directory in $TMPDIR, took an
  empty $TMPDIR with it. Now only the folders Hydra made for the run are (`compose.takeback.note_new_run`)
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.compose import slurmoptions
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

TWICE = ("benchrun: error: in 'config': {key}: the sweep lists {value!r} twice, so two of its jobs would have one label; "
         "list each value once (repeats=k asks every sample k times in one run)\n")


@pytest.mark.parametrize(("swept", "key", "value"), [
    ("runner.model=llama3.2,'llama3.2'", "runner.model", "llama3.2"),
    ('runner.model="gemma3",llama3.2,gemma3', "runner.model", "gemma3"),
    ("runner.options.stop=[a],['a']", "runner.options.stop", "[a]")])
def test_a_sweep_listing_one_value_twice_once_quoted_is_refused(tmp_path, swept, key, value):
    done = call_benchrun("-m", swept, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", TWICE.format(key=key, value=value))
    done = call_benchrun("-m", swept, "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", TWICE.format(key=key, value=value))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("sweep", [[], ["-m", "runner.model=llama3.2,gemma3"]])
def test_a_dry_run_stopped_by_a_signal_leaves_nothing_in_the_temporary_directory(tmp_path, sweep):
    """SIGTERM while the benchmark's custom_scorer.py is imported (the compile's probe of it, which sleeps)."""
    importing, scratch = tmp_path / "importing", tmp_path / "tmp"
    scratch.mkdir()
    (scratch / "theirs").write_text("another program's\n")
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                        "  scorer: s\n",
                           "custom_scorer.py": f"import pathlib, time\npathlib.Path({str(importing)!r}).touch()\n"
                                               "time.sleep(60)\n\n\ndef s(response, reference):\n    return 1\n"})
    dry = subprocess.Popen([sys.executable, "-m", "benchrun", *sweep, "task.path=bench", "dry_run=true"], cwd=tmp_path,
                           env=child_env({"TMPDIR": str(scratch)}), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        wait_for(importing.exists, 60)
        dry.send_signal(signal.SIGTERM)
        _, stderr = dry.communicate(timeout=60)
    finally:
        dry.kill()
    assert (dry.returncode, stderr) == (EXIT["interrupted"], "benchrun: error: interrupted before the run started: "
                                                             "nothing was asked or recorded\n")
    assert sorted(path.name for path in scratch.iterdir()) == ["theirs"]



@pytest.mark.slow
def test_a_benchmark_file_that_changes_directory_or_umask_at_import_moves_no_run_of_a_sweep(tmp_path):
    """A sweep under umask 077 of two benchmarks, the first's custom_scorer.py changing directory and umask at import."""
    task = "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n  scorer: s\n"
    scorer = "def s(response, reference):\n    return 1\n"
    (tmp_path / "elsewhere").mkdir()
    write_bench(tmp_path, {"tasks.yml": task, "custom_scorer.py": f"import os\nos.chdir({str(tmp_path / 'elsewhere')!r})"
                                                                  f"\nos.umask(0)\n\n\n{scorer}"}, name="a")
    write_bench(tmp_path, {"tasks.yml": task, "custom_scorer.py": scorer}, name="b")
    with FakeOllama(models=["llama3.2"]) as server:
        done = subprocess.run([sys.executable, "-m", "benchrun", "-m", "task.path=a,b", f"runner.host={server.url}",
                               "outputs=outputs", "cache=false"], cwd=tmp_path, env=child_env(), capture_output=True,
                              text=True, timeout=120, preexec_fn=lambda: os.umask(0o077))
    assert done.returncode == EXIT["ok"], done.stderr
    [sweep_dir] = (tmp_path / "outputs").glob("*/*_sweep")
    jobs = json.loads((sweep_dir / "sweep.json").read_text())["jobs"]
    assert [(job["dir"], job["status"]) for job in jobs] == [("0_a", "completed"), ("1_b", "completed")]
    assert list((tmp_path / "elsewhere").iterdir()) == []
    modes = {oct(path.stat().st_mode & 0o777) for path in sweep_dir.rglob("*") if path.is_file()}
    assert modes == {"0o600"}


SECRET = ("benchrun: error: in 'config': {key}: secrets are never taken from the config, where they would be archived "
          "({why}); put an API key in an environment variable and name it with runner.api_key_env, and give URLs "
          "without user names or passwords\n")
TOKEN = "hf_" + "abcdef" * 4


@pytest.mark.parametrize(("given", "key", "why"), [
    (f"hydra.launcher.setup=['export HF_TOKEN={TOKEN}']", "hydra.launcher.setup", "a value given to HF_TOKEN"),
    (f"+hydra.launcher.additional_parameters.export='ALL,HF_TOKEN=\"{TOKEN}\"'",
     "hydra.launcher.additional_parameters.export", "a value given to HF_TOKEN")])
def test_a_credential_given_a_variable_in_a_slurm_sweeps_setup_is_refused(tmp_path, given, key, why):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", given, "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", SECRET.format(
        key=key, why=f"{why}, a credential's name"))
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         "hydra.launcher.setup=['export HF_TOKEN=$HF_TOKEN', 'export HF_HOME=/scratch/hf/cache/x']",
                         "dry_run=true", cwd=tmp_path)
    assert done.returncode == EXIT["ok"], done.stderr


@pytest.mark.parametrize(("preset", "choice", "key", "why"), [
    ("hydra/launcher/mine.yaml", "hydra/launcher=mine", "hydra.launcher.setup[0]", "a value given to HF_TOKEN, a "
     "credential's name"),
    ("runner/mine.yaml", "runner=mine", "hydra.job.env_set.HF_TOKEN", "a credential's name")])
def test_a_credential_a_config_file_gives_hydras_config_is_refused(tmp_path, preset, choice, key, why):
    (tmp_path / "my" / preset).parent.mkdir(parents=True)
    (tmp_path / "my" / preset).write_text(
        f"defaults:\n  - slurm\nsetup:\n  - export HF_TOKEN={TOKEN}\n" if preset.startswith("hydra") else
        f"# @package _global_\ndefaults:\n  - ollama@runner\nhydra:\n  job:\n    env_set:\n      HF_TOKEN: {TOKEN}\n")
    for sweep in ([], ["-m", "runner.model=llama3.2,gemma3"]):
        done = call_benchrun("--config-dir", "my", *sweep, choice, "dry_run=true", cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", SECRET.format(key=key, why=why))


def test_a_dry_run_of_a_slurm_sweep_into_a_directory_holding_a_percent_sign_is_refused_as_its_launch_is(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", f"outputs={tmp_path}/o%j",
                         "dry_run=true", cwd=tmp_path)
    would_be = re.match(f"benchrun: error: hydra.sweep.dir=({re.escape(str(tmp_path))}/o%j/[0-9-]+/[0-9.-]+_listbench_"
                        "sweep): ", done.stderr)
    assert would_be is not None, done.stderr
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: {slurmoptions.patterned(Path(would_be[1]))}\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_benchmark_file_putting_its_folder_on_sys_path_lends_no_module_to_the_next_job_of_a_sweep(tmp_path):
    task = "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n  scorer: s\n"
    scorer = "from helpers import x\n\n\ndef s(response, reference):\n    return x()\n"
    write_bench(tmp_path, {"tasks.yml": task, "helpers.py": "def x():\n    return 0.25\n", "custom_scorer.py":
                           f"import os\nimport sys\n\nsys.path.insert(0, os.path.dirname(__file__))\n{scorer}"}, name="a")
    write_bench(tmp_path, {"tasks.yml": task, "custom_scorer.py": scorer}, name="b")
    done = call_benchrun("-m", "task.path=a,b", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["sweep_failed"], "benchrun: error: in 'custom_scorer.py': cannot "
                                              "import: ModuleNotFoundError: No module named 'helpers' (line 1)\n")
    assert len(re.findall("manifest id: ", done.stdout)) == 1


@pytest.mark.slow
def test_a_benchmark_file_setting_a_variable_at_import_chooses_no_server_for_the_next_job_of_a_sweep(tmp_path):
    task = "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n  scorer: s\n"
    scorer = "def s(response, reference):\n    return 1\n"
    write_bench(tmp_path, {"tasks.yml": task, "custom_scorer.py": "import os\n\nos.environ['OLLAMA_HOST'] = "
                                                                  f"'http://127.0.0.1:9'\n\n\n{scorer}"}, name="a")
    write_bench(tmp_path, {"tasks.yml": task, "custom_scorer.py": scorer}, name="b")
    with FakeOllama(models=["llama3.2"]) as server:
        done = call_benchrun("-m", "task.path=a,b", "outputs=outputs", "cache=false", cwd=tmp_path,
                             env={"OLLAMA_HOST": server.url})
    assert done.returncode == EXIT["ok"], done.stderr
    [sweep_dir] = (tmp_path / "outputs").glob("*/*_sweep")
    assert [json.loads((sweep_dir / job / "run.json").read_text())["status"] for job in ("0_a", "1_b")] == [
        "completed", "completed"]


@pytest.mark.slow
def test_a_benchmark_file_replacing_print_at_import_silences_no_error_of_the_run(tmp_path):
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                        "  scorer: s\n",
                           "custom_scorer.py": "import builtins\n\nbuiltins.print = lambda *args, **kwargs: None\n\n\n"
                                               "def s(response, reference):\n    return 1\n"})
    done = call_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["runner"], "benchrun: error: cannot reach Ollama at "
                                              "http://127.0.0.1:9 (ConnectionError); start it with `ollama serve`, or "
                                              "point runner.host at a running server\n")


@pytest.mark.slow
@pytest.mark.parametrize("bounded", [
    "import resource\n\n_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
    "resource.setrlimit(resource.RLIMIT_NOFILE, (14, hard))\n",
    "import sys\n\nsys.setrecursionlimit(60)\n"])
def test_a_benchmark_file_bounding_its_own_work_at_import_bounds_no_run(tmp_path, bounded):
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1, 2, 3]}\n"
                                        "  reference: ['1', '2', '3']\n  scorer: s\n",
                           "custom_scorer.py": f"{bounded}\n\ndef s(response, reference):\n    return 1\n"})
    with FakeOllama(models=["llama3.2"]) as server:  # a real process: its limits, and the stack depth it starts at
        done = run_benchrun("task.path=bench", f"runner.host={server.url}", "outputs=outputs", "cache=false",
                            cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    [run_dir] = (tmp_path / "outputs").glob("*/*")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


NAN = ("benchrun: error: in 'config': runner.options.temperature: nan is not a finite number, and JSON (config.yaml, "
       "run.json, the manifest) has none for it: give a number\n")


def test_a_run_refused_in_a_directory_made_for_it_beforehand_leaves_that_directory(tmp_path):
    """`mkdir -p results/exp1/run` by a script, then a run there whose config is refused: the directory, and its
    parent once emptied, were taken back as if Hydra had made them."""
    (tmp_path / "results" / "exp1" / "run").mkdir(parents=True)
    done = call_benchrun("hydra.run.dir=results/exp1/run", "runner.options.temperature=nan", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", NAN)
    assert [path.relative_to(tmp_path).as_posix() for path in sorted(tmp_path.rglob("*"))] == [
        "results", "results/exp1", "results/exp1/run"]
    done = call_benchrun("hydra.run.dir=results/exp2/run", "runner.options.temperature=nan", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], NAN)
    assert [path.relative_to(tmp_path).as_posix() for path in sorted(tmp_path.rglob("*"))] == [
        "results", "results/exp1", "results/exp1/run"]


@pytest.mark.slow
def test_a_dry_run_whose_config_is_refused_leaves_an_empty_temporary_directory(tmp_path):
    """A dry run's run directory is its private one in $TMPDIR: taking it back took $TMPDIR too when that was empty (a
    Slurm job's own, a TMPDIR=~/tmp), and every later program's temporary file failed there."""
    (tmp_path / "tmp").mkdir()
    # a real process: TMPDIR is read once, at the interpreter's first temporary file (tempfile.gettempdir)
    done = run_benchrun("dry_run=true", "runner.options.temperature=nan", cwd=tmp_path,
                        env={"TMPDIR": str(tmp_path / "tmp")})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", NAN)
    assert [path.name for path in tmp_path.iterdir()] == ["tmp"] and list((tmp_path / "tmp").iterdir()) == []
