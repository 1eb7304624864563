"""Hostile input, ninth pass, the process side (issue 19's fresh pass of the same kinds): real `python -m benchrun`
processes under abuse, the cases it found bad, each with the rule it now obeys.

- a custom_*.py that writes the API key to file descriptor 1 or 2 at import (`os.write(1, key)`, `sys.__stdout__`,
  as a C library's printf would), imported in the run's own process: Python's redirection of sys.stdout did not
  reach it, so the key went to the console unmasked (and to whatever the console was piped into); now the
  descriptors themselves point at a file while the file is imported, and what was written there goes to the run's log
  through the masking every handler has
- a benchmark's file or folder that is a symbolic link leading nowhere (a loop, `tasks.yml -> tasks.yml`, or a link
  to a file not there, as a copy that left the target behind makes): taken as absent, so a tasks.yml beside task
  folders was skipped and its tasks silently not run (exit 0), a custom_scorer.py's scorers were unknown, a task
  folder left out; a values file's was `missing`. Now refused in one line naming the link and where it leads
  (`compiler.files.present`), before anything is compiled
- a folder task whose folder name is longer than a task name may be (tasks.schema.json's $defs/name: 100 characters,
  which tasks.yml is held to): taken, names of 255 characters in every sample id, table and export; now refused as
  tasks.yml's would be, naming the folder
- a values.csv holding its header again as a row (two CSV files joined with `cat`): the header row was asked as a
  sample (`what is a?`, scored against `reference`); now refused naming the line
- a value named `prompt_id` (a column of a values file, a key of `values:`) in a task whose reference is calculated:
  taken, and each scorer got the sample's id under that name in place of the value (the seed's format adds
  `prompt_id` to the values a calculated reference gives); now refused naming the value
- `outputs` (or `hydra.run.dir`, `hydra.sweep.dir`) holding a line break, a tab or another control character: the run
  was made in `a<newline>b/...`, and every line that prints its path (`run directory:`, `finish it with:
  benchrun-audit resume PATH`) was cut in two; now refused before anything is made, naming the character
- `task.name` (the benchmark's name: run.json's `benchmark`, a run's heading, its row in `benchrun-audit list`)
  holding a line break or an escape (`\x1b[31m`): the heading of a dry run split in two, the escape sent to the
  terminal as it was; now refused as `outputs` is, naming the character
- the response cache's default place, ~/.cache/benchrun, with $HOME set empty: the cache was made at
  /.cache/benchrun, the file system's root; now the run's one line naming cache_dir and what to set
- `~` in an override (`outputs=~`, `task.path=~/b`) with $HOME set but empty (as some service managers and CI
  runners leave it): ~ was taken as the file system's root, so `outputs=~` put run directories in `/` (the very thing
  `outputs=` empty is refused for); now refused naming the override
- `runner_file=` naming a device, a named pipe or a directory (`/dev/zero`): `runner file '/dev/zero' not found`,
  though it is there; now what it is, as for every file benchrun reads
- a sweep over what names the sweep's directory (`-m task.path=bench,other`, `task=listbench,folderbench`): Hydra
  composes each job's config afresh, so each job went to a sweep directory of its own (`bench_sweep/0_llama3.2`,
  `other_sweep/1_llama3.2`), while the sweep's own (`listbench_sweep`) held a sweep.json listing no job; a job that
  failed (a benchmark not there) went unseen, and the sweep exited 0. Now the sweep directory, as resolved when the
  sweep starts, is given to every job (`callbacks._pin_sweep_dir`): one directory, every job listed, exit 1 for a
  failed one
- a hydra setting that Hydra's own sweeper or plugin loader refuses with an error that is not one of Hydra's
  (`hydra.sweeper.max_batch_size=0`: a bare AssertionError; `hydra.launcher._target_=os.system`: a RuntimeError):
  a traceback and exit 1; now one line naming the error (and, for a bare assertion, the assertion), exit 2
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.resources import schemas_dir
from benchrun.testing.lab import SCORER, Lab
from tests.helpers.benchfiles import folder_task, task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

pytestmark = pytest.mark.slow

KEY = "ol-0123456789abcdefghijKLMN"


@pytest.mark.parametrize("write", [
    "os.write(1, ('the key: ' + os.environ['OLLAMA_API_KEY'] + '\\n').encode())",
    "os.write(2, ('the key: ' + os.environ['OLLAMA_API_KEY'] + '\\n').encode())",
    "sys.__stdout__.write('the key: ' + os.environ['OLLAMA_API_KEY'] + '\\n')",
])
def test_a_key_written_to_the_descriptors_at_import_goes_masked_to_the_log(tmp_path, write):
    source = f"import os\nimport sys\n\n{write}\n\n\n{SCORER}"
    with Lab(tmp_path, n=2, latency_s=0, scorer=source) as lab:
        done = call_benchrun(*lab.args(), cwd=tmp_path, env={"OLLAMA_API_KEY": KEY})
        [run_dir] = lab.run_dirs()
    assert (done.returncode, done.stderr, KEY in done.stdout) == (EXIT["ok"], "", False)
    assert "custom_scorer.py printed while it was imported:\nthe key: ***\n" in (run_dir / "benchrun.log").read_text()
    assert [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()] == []


@pytest.mark.parametrize("link, to, why", [
    ("tasks.yml", "tasks.yml", "a loop of symbolic links"),
    ("custom_scorer.py", "gone.py", "to 'gone.py', which is not there"),
    ("tasks/lost", "../elsewhere", "to '../elsewhere', which is not there"),
    ("data/v.jsonl", "v2.jsonl", "to 'v2.jsonl', which is not there"),
])
def test_a_link_that_leads_nowhere_is_refused_not_taken_as_absent(tmp_path, link, to, why):
    listed = task(values_file="data/v.jsonl", values=None, reference=None) if link == "data/v.jsonl" else task()
    listed = {key: value for key, value in listed.items() if value is not None}
    files = {**folder_task("add", "what is {a}?", "a,reference\n2,2\n")}
    if link != "tasks.yml":
        files["tasks.yml"] = tasks_yml(listed)
    bench = write_bench(tmp_path, files)
    (bench / link).parent.mkdir(exist_ok=True)
    (bench / link).symlink_to(to)
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{link}': a symbolic link that leads nowhere ({why}); mend the link, or remove it\n"))


def test_a_folder_task_name_longer_than_a_task_name_is_refused(tmp_path):
    longest = json.loads((schemas_dir() / "tasks.schema.json").read_text())["$defs"]["name"]["maxLength"]
    name = "t" * (longest + 1)
    write_bench(tmp_path, {**folder_task("t" * longest, "what is {a}?", "a,reference\n2,2\n"),
                           **folder_task(name, "what is {a}?", "a,reference\n2,2\n")})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'tasks/{name}': a task name of {longest + 1} characters, more than a task name has "
        f"({longest}, as in tasks.yml): rename the folder\n"))


@pytest.mark.parametrize("values", ["a,reference\n2,2\na,reference\n3,3\n", "a, reference\n2,2\n a ,reference \n"])
def test_a_csv_holding_its_header_again_as_a_row_is_refused(tmp_path, values):
    write_bench(tmp_path, folder_task("add", "what is {a}?", values))
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks/add/values.csv': task 'add': line 3: the header again, as a row of values (two CSV "
        "files joined?): it would be asked as a sample; remove it\n"))


@pytest.mark.parametrize("files, said", [
    ({"tasks.yml": tasks_yml(task(values={"a": [1, 2], "prompt_id": ["p1", "p2"]}, reference="calculated"))},
     "in 'tasks.yml': task 't': tasks[0].values.prompt_id"),
    (folder_task("add", "what is {a}?", "a,prompt_id\n2,p1\n"), "in 'tasks/add/values.csv': task 'add': column "
                                                                  "'prompt_id'"),
    ({"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values_file": "v.jsonl"}),
      "v.jsonl": '{"a": 1, "prompt_id": "p1"}\n'}, "in 'v.jsonl': task 't': column 'prompt_id'"),
])
def test_a_value_named_prompt_id_with_a_calculated_reference_is_refused(tmp_path, files, said):
    write_bench(tmp_path, files)
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {said}: a value named 'prompt_id', which a calculated reference gives its scorers as the "
        "sample's id, in place of the value: rename the value\n"))


def test_a_value_named_prompt_id_with_references_given_is_kept(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(values={"a": [1, 2], "prompt_id": ["p1", "p2"]}))})
    assert call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path).returncode == EXIT["ok"]


@pytest.mark.parametrize("args, key", [
    (("outputs='a\nb'",), "outputs"),
    (("outputs='a\tb'",), "outputs"),
    (("hydra.run.dir='a\nb'",), "hydra.run.dir"),
    (("-m", "hydra.sweep.dir='a\nb'", "runner.model=x,y"), "hydra.sweep.dir"),
])
def test_a_run_directory_holding_a_control_character_is_refused_before_it_is_made(tmp_path, args, key):
    done = call_benchrun(*args, "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    character = "\\t" if "\t" in args[-1] + args[0] else "\\n"
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': {key}: '{character}' at character 2, a control character, which a run "
        "directory's path printed on the console and in the command that finishes a run (benchrun-audit resume PATH) "
        "cannot hold: name a directory without one\n"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("made, what", [
    (lambda path: path.mkdir(), "a directory"),
    (lambda path: os.mkfifo(path), "a named pipe (FIFO)"),
])
def test_a_runner_file_that_is_not_a_file_is_named_as_what_it_is(tmp_path, made, what):
    made(tmp_path / "mine.yml")
    done = call_benchrun("runner_file=mine.yml", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'mine.yml': {what}, where a file belongs: benchrun reads only regular files\n"))


@pytest.mark.parametrize("other, statuses, code", [
    ("bench2", ["completed", "completed"], EXIT["ok"]),
    ("nothere", ["completed", "failed"], EXIT["sweep_failed"]),
])
def test_a_sweep_over_benchmarks_keeps_every_job_in_its_one_directory(tmp_path, other, statuses, code):
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        if other == "bench2":
            shutil.copytree(tmp_path / "bench", tmp_path / "bench2")
        args = [arg for arg in lab.args() if not arg.startswith("task.path=")]
        done = lab.call("-m", f"task.path=bench,{other}", *args)
    [sweep_dir] = (tmp_path / "outputs").glob("*/*")
    jobs = json.loads((sweep_dir / "sweep.json").read_text())["jobs"]
    assert (done.returncode, sweep_dir.name.endswith("_listbench_sweep")) == (code, True), done.stderr
    assert sorted(p.name for p in sweep_dir.iterdir()) == ["0_bench", f"1_{other}", "multirun.yaml", "sweep.json"]
    assert [(job["dir"], job["status"]) for job in jobs] == list(zip(["0_bench", f"1_{other}"], statuses))


@pytest.mark.parametrize("override, said", [
    ("hydra.sweeper.max_batch_size=0", "AssertionError: assert max_batch_size is None or max_batch_size > 0"),
    ("hydra.launcher._target_=os.system", "RuntimeError: Invalid plugin 'os.system': not the hydra_plugins package"),
])
def test_an_error_raised_in_hydras_own_code_is_one_line(tmp_path, override, said):
    done = call_benchrun("-m", override, "runner.model=a,b", "runner.host=http://127.0.0.1:9", "outputs=out",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: Hydra could not go on: {said}\n"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, shown", [("a\nb", "\\n"), ("x\x1b[31mred", "\\x1b")])
def test_a_benchmark_name_holding_a_control_character_is_refused(tmp_path, name, shown):
    done = call_benchrun(f"task.name='{name}'", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': task.name: '{shown}' at character 2, a control character, which a benchmark's "
        "name printed on the console (a run's heading, its row in benchrun-audit list) cannot hold: name the "
        "benchmark without one\n"))


@pytest.mark.parametrize("override", ["outputs=~", "task.path=~/bench"])
def test_a_tilde_with_home_set_empty_is_refused(tmp_path, override):
    done = run_benchrun(override, "--cfg", "job", cwd=tmp_path, env={"HOME": ""})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: the override '{override}': ~ is the home directory, and $HOME is empty (~ would be the file "
        "system's root); set HOME, or give the path itself\n"))


def test_the_response_caches_default_place_with_home_set_empty_is_refused(tmp_path):
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        args = [a for a in lab.args() if a != "cache=false"]
        ran = run_benchrun(*args, cwd=tmp_path, env={"HOME": "", "XDG_CACHE_HOME": ""})
    assert (ran.returncode, ran.stderr) == (EXIT["usage"], (
        "benchrun: error: cache_dir: the response cache's place, ~/.cache/benchrun: ~ is the home directory, and "
        "$HOME is empty (~ would be the file system's root); set HOME, or XDG_CACHE_HOME, cache_dir= or cache=false\n"))
    assert not (tmp_path / "outputs").exists()  # refused with the config, before the run claims a directory
