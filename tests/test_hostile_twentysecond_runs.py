"""Hostile input, twenty-second pass, the files-and-processes side (issue 19's fresh pass of the same kinds): hostile
command lines, sweeps and process surroundings, the cases it found bad, each with the rule it now obeys.

- a preset of the user's own (`--config-dir my`, `hydra.searchpath=[file://my]`) named as one of benchrun's or
  Hydra's (my/runner/ollama.yaml saying `model: gemma3` and `temperature: 0.7`, my/config.yaml): Hydra searches
  benchrun's conf/ first and reads the first file it finds of a name, so the user's file was never read, and the run
  asked llama3.2 at temperature 0, nothing said. Now refused in one line naming the file, before anything is made
  (`compose.hydragiven`, which also holds the checks of Hydra's settings moved out of callbacks.py)
- `benchrun --version` (or `--vers`, anywhere among the overrides): Hydra's parser answered `Hydra 1.3.8`, which a
  bug report or a script checking what is installed takes for benchrun's version. Now `benchrun 0.3.0 (Hydra 1.3.8)`,
  benchrun's as run.json records it (`benchrun.__main__._asks_version`)
- a flag Hydra's parser refuses (`benchrun --dry-run`) was sent to `benchrun --help lists its flags`, which lists the
  config groups and the config, no flag (Hydra's `--hydra-help` lists them). Now `benchrun --hydra-help lists its
  flags` (`benchrun.__main__._flag_errors_in_one_line`)
- `benchrun --help > /dev/full` (and `--hydra-help`, and the new `--version`): exit 0, nothing said, where every other
  command says its output was cut short (exit 4): Hydra ends its help with `sys.exit(0)`, past that check. Now the
  same line and exit 4 (`benchrun.__main__._said_whole`)
- a dry run whose temporary folder ($TMPDIR) is inside the benchmark's tasks/ folder: refused (the twenty-first
  pass's rule) with `put runs elsewhere (outputs=DIR)`, which a dry run never uses. Now `a dry run's files go to a
  folder of $TMPDIR: set TMPDIR elsewhere` (`callbacks._check_outside_tasks`); and one that names such a directory
  itself (`hydra.run.dir=bench/tasks/mine`), told `put runs elsewhere (outputs=DIR)`, which hydra.run.dir overrides:
  now `give another hydra.run.dir`
- a run whose environment holds BENCHRUN_VERBOSE=1 (inherited: a benchrun started by a verbose one's scorer) without
  --verbose: each job's error was two lines (Hydra's `Error executing job with overrides: [...]`, then benchrun's):
  the process that reads the command line decided one line, the job's handler tracebacks. Now the command line
  alone decides (`benchrun.__main__`)
- a benchmark folder named by a number (`task.path=2024`), or a path given as a list (`task.path=[a,b]`,
  `runner_file=[a,b]`) or a boolean: `in 'config': hydra.run.dir: cannot resolve: AttributeError raised while
  resolving interpolation: 'int' object has no attribute 'startswith'`, naming a key the user never gave and Python's
  insides. Now the key at fault, and for a number or a boolean how to give it as text (`task.path: Input should be a
  valid string, not 2024 (...); quote it as written, e.g. task.path='2024'`; `compose.config.bench_name`, `run_name`
  and `_read_unquoted`)
- `outputs=gone` (or hydra.run.dir, hydra.sweep.dir), `gone` a link to a folder since removed: `file exists: gone`,
  though nothing is there to see. Now `a dangling link (to /.../removed, which is not there), where a folder was to be
  made: gone` (`core.errors.os_problem`)
- a setting the basic launcher does not take (`+hydra.launcher.n_jobs=4`, as Hydra's own refusal of
  `hydra.launcher.n_jobs=4` advises): a dry run passed it, then the sweep's launch was `Error in call to target
  '...BasicLauncher': TypeError(...)`. Now refused in one line saying what to do, a dry run alike; a launcher taking
  any keyword (joblib's, submitit's) is left to its library (`compose.hydragiven._check_launcher_keys`)
- a model preset and a runner file naming another model (`model=gemma3 runner_file=runner.yml`, the seed's file
  saying llama3.2): the run asked llama3.2 with gemma3's options (num_ctx 8192, top_k 64), config.yaml naming the
  preset gemma3, exit 0. Now refused as the command line's `runner.model=` beside such a file is
  (`compose.runnerfile.refuse_replaced`)
- `task.path=demo:` (the shipped benchmarks' prefix naming none): `in 'config': task.name: String should have at least
  1 character`, of a key the user never gave. Now `task.path: no shipped benchmark '' (shipped: ...)`
  (`compose.config.bench_name`)
- a run or a sweep started in a folder whose path holds `${` (`a${x}`): Hydra keeps the run's absolute path in its
  config (its log's file name, its output directory) and read it as an interpolation: `in 'config':
  hydra.job_logging.handlers.file.filename: cannot resolve: Interpolation key 'x' not found`, of a key and a name the
  user never gave (a sweep launched its jobs first). Now refused before Hydra makes anything, saying why and that
  `outputs=` elsewhere runs (`compose.hydranames.refuse_unusable_path`); and one whose path holds a line break, which
  `outputs` may not hold (the run printed `run directory:` over two lines): now refused as such an `outputs` is
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata

import hydra
import pytest

from benchrun.core.errors import EXIT
from benchrun.core.resources import conf_dir
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

UNREAD = ("benchrun: error: in '{file}': a preset named as {shipped}, which Hydra reads in its place, so this file is "
          "never read; {advice}\n")


@pytest.mark.parametrize("name, shipped, advice", [
    ("runner/ollama.yaml", "benchrun's own runner=ollama", "give it a name of its own (runner/my-ollama.yaml, chosen "
     "by runner=my-ollama, may start with `defaults: [ollama, _self_]`)"),
    ("config.yaml", "benchrun's own config.yaml (its primary config)",
     "give it a name of its own in a group (runner/mine.yaml, chosen by runner=mine)"),
    ("hydra/job_logging/default.yaml", "Hydra's own hydra/job_logging=default",
     "remove it: the job's logging is benchrun's (it writes benchrun.log and masks every credential)"),
])
@pytest.mark.parametrize("how", ["config-dir", "searchpath", "sweep"])
def test_a_preset_of_ones_own_named_as_a_shipped_one_is_refused_as_never_read(tmp_path, name, shipped, advice, how):
    preset = tmp_path / "my" / name
    preset.parent.mkdir(parents=True)
    preset.write_text("defaults: [base/ollama, _self_]\nmodel: gemma3\noptions: {temperature: 0.7}\n")
    given = {"config-dir": ["--config-dir", "my"], "searchpath": [f"hydra.searchpath=[file://{tmp_path / 'my'}]"],
             "sweep": ["--config-dir", "my", "-m", "runner.model=llama3.2,gemma3"]}[how]
    done = call_benchrun(*given, "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", UNREAD.format(file=preset, shipped=shipped, advice=advice))
    assert not (tmp_path / "outputs").exists()


def test_a_preset_of_ones_own_named_apart_from_the_shipped_ones_is_read(tmp_path):
    preset = tmp_path / "my" / "runner" / "my-ollama.yaml"
    preset.parent.mkdir(parents=True)
    preset.write_text("defaults: [ollama, _self_]\nmodel: gemma3\noptions: {temperature: 0.7}\n")
    done = call_benchrun("--config-dir", "my", "runner=my-ollama", "--cfg", "job", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert "runner:\n  model: gemma3\n  options:\n    temperature: 0.7\n" in done.stdout


@pytest.mark.parametrize("flags", [["--version"], ["--vers"], ["runner.model=x", "--version"], ["-m", "--version"]])
def test_benchrun_version_says_benchruns_version_not_hydras(tmp_path, flags):
    done = call_benchrun(*flags, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["ok"], f"benchrun {metadata.version('benchrun')} (Hydra {hydra.__version__})\n", "")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("given, said", [
    ("task.path=2024", "task.path: Input should be a valid string, not 2024 (Hydra's overrides and YAML read it unquoted "
     "as a number); quote it as written, e.g. task.path='2024'"),
    ("outputs=2024", "outputs: Input should be a valid string, not 2024 (Hydra's overrides and YAML read it unquoted "
     "as a number); quote it as written, e.g. outputs='2024'"),
    ("runner_file=true", "runner_file: Input should be a valid string, not true (Hydra's overrides and YAML read it "
     "unquoted as a boolean); quote it as written, e.g. runner_file='true'"),
    ("task.path=[a,b]", "task.path: a list, where text is taken"),
    ("runner_file=[a,b]", "runner_file: a list, where text is taken"),
])
@pytest.mark.parametrize("dry", [[], ["dry_run=true"]])
def test_a_path_hydra_reads_as_no_text_is_said_of_its_key(tmp_path, given, said, dry):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task())}, name="2024")
    done = call_benchrun(given, "runner.host=http://127.0.0.1:9", *dry, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'config': {said}\n")
    assert not list((tmp_path / "outputs").rglob("*.json"))


def test_a_benchmark_folder_named_by_a_number_runs_quoted(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task())}, name="2024")
    done = call_benchrun("task.path='2024'", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert "2 samples -> 2 model calls (dry run: no model was called)" in done.stdout


@pytest.mark.parametrize("given", [["outputs=gone"], ["outputs=gone/runs"], ["hydra.run.dir=gone"],
                                   ["-m", "runner.model=llama3.2,gemma3", "hydra.sweep.dir=gone"]])
def test_a_run_directory_under_a_dangling_link_says_the_link_leads_nowhere(tmp_path, given):
    (tmp_path / "gone").symlink_to(tmp_path / "removed")
    done = call_benchrun(*given, "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (EXIT["archive"], "")
    assert re.fullmatch(r"benchrun: error: the (run|sweep) directory gone\S* \(hydra\.(run|sweep)\.dir, made of outputs= "
                        r"unless given\) "
                        f"cannot be made: a dangling link \\(to {re.escape(str(tmp_path / 'removed'))}, which is not there"
                        r"\), where a folder was to be made: gone; nothing was recorded\n", done.stderr)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["gone"]


@pytest.mark.parametrize("dry", [[], ["dry_run=true"]])
def test_a_setting_the_basic_launcher_does_not_take_is_refused(tmp_path, dry):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "+hydra.launcher.n_jobs=4",
                         "runner.host=http://127.0.0.1:9", *dry, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: hydra.launcher.n_jobs: the basic launcher takes no settings (it runs one "
        "job after another); for jobs at once: hydra/launcher=joblib hydra.launcher.n_jobs=N\n")
    assert not (tmp_path / "outputs").exists()


def test_a_launchers_own_settings_are_taken(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                         "+hydra.launcher.idle_worker_timeout=10", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert done.stdout.count("dry run: no model was called") == 2


@pytest.mark.parametrize("dry", [[], ["dry_run=true"]])
def test_a_model_preset_whose_model_the_runner_file_replaces_is_refused(tmp_path, dry):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task()), "runner.yml": "runner_type: ollama\nmodel: 'llama3.2'\n"})
    done = call_benchrun("task.path=bench", "model=gemma3", "runner_file=bench/runner.yml",
                         "runner.host=http://127.0.0.1:9", *dry, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: in 'config': model=gemma3: the preset asks runner.model gemma3, and the "
        "runner file 'bench/runner.yml' gives model llama3.2, whose value takes its place (with the preset's options), "
        "so this one would never be asked; give the model in one place\n")
    assert not list((tmp_path / "outputs").rglob("*.json"))


def test_a_model_preset_of_the_runner_files_own_model_is_taken(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task()), "runner.yml": "runner_type: ollama\nmodel: 'gemma3'\n"})
    done = call_benchrun("task.path=bench", "model=gemma3", "runner_file=bench/runner.yml", "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert "bench · ollama · gemma3" in done.stdout


def test_a_shipped_benchmark_named_by_nothing_is_said_of_task_path(tmp_path):
    done = call_benchrun("task.path=demo:", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: task.path: no shipped benchmark '' (shipped: folderbench, listbench)\n")


def test_benchruns_own_config_folder_given_as_a_config_dir_is_taken(tmp_path):
    done = call_benchrun("--config-dir", str(conf_dir()), "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


@pytest.mark.parametrize("flags, key, made", [([], "hydra.run.dir", "a-x_llama3.2"),
                                              (["-m", "runner.model=llama3.2,gemma3"], "hydra.sweep.dir", "a-x_sweep")])
def test_a_run_in_a_folder_whose_name_holds_an_interpolation_is_refused_before_hydra_reads_it(tmp_path, flags, key,
                                                                                               made):
    folder = tmp_path / "a${x}"
    write_bench(folder, {"tasks.yml": tasks_yml(task())}, name=".")
    done = call_benchrun(*flags, "task.path=.", "runner.host=http://127.0.0.1:9", cwd=folder)
    line = done.stderr.removeprefix(f"benchrun: error: in 'config': {key}: its path {folder}/outputs/")
    assert (done.returncode, done.stdout, re.sub(r"^[0-9-]+/[0-9.-]+_", "", line)) == (
        EXIT["usage"], "", f"{made} holds '${{', which Hydra reads as an interpolation where it keeps the path in its "
        "config (the run's log, its output directory); run benchrun in a folder whose path holds no '${', or give "
        "outputs= a directory whose path holds none\n")
    assert not (folder / "outputs").exists()


def test_a_run_in_a_folder_whose_name_holds_an_interpolation_runs_into_outputs_elsewhere(tmp_path):
    folder = tmp_path / "a${x}"
    write_bench(folder, {"tasks.yml": tasks_yml(task())}, name=".")
    with FakeOllama(models=["llama3.2"]) as server:
        done = call_benchrun("task.path=.", f"runner.host={server.url}", "cache=false", f"outputs={tmp_path / 'runs'}",
                             cwd=folder)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert "completed: 2/2 samples" in done.stdout


def test_a_run_in_a_folder_whose_name_holds_a_line_break_is_refused_as_such_an_outputs_is(tmp_path):
    folder = tmp_path / "a\nb"
    write_bench(folder, {"tasks.yml": tasks_yml(task())}, name=".")
    done = call_benchrun("task.path=.", "runner.host=http://127.0.0.1:9", cwd=folder)
    at = len(str(tmp_path)) + 3
    assert (done.returncode, done.stdout) == (EXIT["usage"], "")
    assert re.fullmatch(
        f"benchrun: error: in 'config': hydra.run.dir: its path {re.escape(str(tmp_path))}/a b/outputs/[^:]+: '\\\\n' "
        f"at character {at}, a control character, which a run directory's path printed on the console and in the "
        r"command that finishes a run \(benchrun-audit resume PATH\) cannot hold: name a directory without one; run "
        "benchrun in another folder, or give outputs= another directory\n", done.stderr), done.stderr
    assert not (folder / "outputs").exists()


def test_a_flag_hydra_refuses_is_sent_where_the_flags_are_listed(tmp_path):
    done = call_benchrun("--dry-run", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: unrecognized arguments: --dry-run; benchrun --hydra-help lists its flags, "
        "and a setting is key=value (dry_run=true)\n")
    listed = call_benchrun("--hydra-help", cwd=tmp_path)
    assert "== Flags ==\n" in listed.stdout and "--multirun,-m" in listed.stdout
    assert "== Flags ==" not in call_benchrun("--help", cwd=tmp_path).stdout


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--version", "--help", "--hydra-help"])
def test_benchruns_version_and_help_into_a_full_disk_say_they_were_cut_short(tmp_path, flag):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "benchrun", flag], cwd=tmp_path, env=child_env(None),
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (EXIT["archive"], "benchrun: error: disk full writing standard output: "
                                              "what was printed was cut short, not what was recorded\n")


@pytest.mark.slow
def test_a_dry_run_whose_temporary_folder_is_in_the_benchmarks_tasks_folder_is_told_to_move_tmpdir(tmp_path):
    bench = write_bench(tmp_path, {"tasks/add/template.txt": "what is {a}?\n",
                                   "tasks/add/values.csv": "a,reference\n2,2\n"})
    done = run_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path, env={"TMPDIR": str(bench / "tasks")})
    assert (done.returncode, done.stdout) == (EXIT["usage"], "")
    assert re.fullmatch(
        f"benchrun: error: hydra.run.dir={re.escape(str(bench))}/tasks/benchrun-dry-run-[^:]+: inside the benchmark's "
        f"tasks/ folder \\({re.escape(str(bench))}/tasks\\), each of whose folders is read as a task, the run's own "
        "among them; a dry run's files go to a folder of \\$TMPDIR: set TMPDIR elsewhere\n", done.stderr), done.stderr
    assert sorted(path.name for path in (bench / "tasks").iterdir()) == ["add"]


@pytest.mark.parametrize("flags, key", [([], "hydra.run.dir"), (["-m", "runner.model=llama3.2,gemma3"], "hydra.sweep.dir")])
def test_a_run_directory_named_inside_the_benchmarks_tasks_folder_is_told_to_name_another(tmp_path, flags, key):
    bench = write_bench(tmp_path, {"tasks/add/template.txt": "what is {a}?\n",
                                   "tasks/add/values.csv": "a,reference\n2,2\n"})
    done = call_benchrun(*flags, "task.path=bench", f"{key}=bench/tasks/mine", "runner.host=http://127.0.0.1:9",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: {key}=bench/tasks/mine: inside the benchmark's tasks/ folder "
        f"({bench / 'tasks'}), each of whose folders is read as a task, the run's own among them; give another {key}\n")
    assert sorted(path.name for path in (bench / "tasks").iterdir()) == ["add"]


def test_a_job_error_under_an_inherited_verbose_switch_is_one_line(tmp_path):
    done = call_benchrun("runner.options.temperature=hot", "runner.host=http://127.0.0.1:9", cwd=tmp_path,
                         env={"BENCHRUN_VERBOSE": "1"})
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: in 'config': runner.options.temperature: Input should be a valid number, "
        "not \"hot\"\n")
