"""Hostile input, tenth pass, what the lead session tried between the three sides' passes (the configuration, the
error line, Ollama's model list): the cases it found bad, each with the rule it now obeys.

- an error line holding a character that prints nothing yet changes what is seen (a task named `ab\u202ecd` in
  tasks.yml, which the schema refuses by name): the line was printed with the right-to-left override as it was, so
  the terminal showed the task's name, and the rest of the line, backwards; now every error and warning line shows
  such a character as its escape (`'ab\\u202ecd'`), as `list` and `show` do (`console.visible`)
- `python -m benchrun` in a Python where a dependency of benchrun's cannot be imported (hydra, say: a venv half
  made, or benchrun on PYTHONPATH of another Python): an UnboundLocalError traceback from the error handler itself;
  now one line naming the module and the Python, exit 2
- a path given in a config file (a runner file's `model_path: ~/m.gguf`, `cache_dir`, `task.path` or a runner file's
  own name) holding `~` with $HOME set empty: the ninth pass refused `~` only in a command-line override, so these
  were read at the file system's root (`/m.gguf`); now `~` in every path benchrun is given means the home directory
  the one way (`core.home`), refused naming the key when $HOME is empty
- a runner file in the seed's format whose `runner_type` is not the composed runner's (`runner_type: local` without
  `runner=local`): `runner.host: unknown key 'host'` (the default Ollama preset's key, which the file never named);
  now the file's type is the runner's, and the composed runner's keys that type does not take are left out
- an Ollama model list whose entry for the model gives its `size` as `true` (or `"7"`, 7.0): the official client's
  lax model took them as 1 and 7, and run.json said the model's file held 1 byte; now a size that is not a JSON
  integer is left out of the entry before the client reads it (`identity.size` null), as a chat answer's counts are
- an override deleting a key the run directory's name is made of (`~runner.model`, `~task.name`): the line named
  `hydra.run.dir` (`in 'config': hydra.run.dir: cannot resolve: Interpolation key 'runner.model' not found`), a key
  the user never gave; now it names the key deleted and the override that deleted it, as for an interpolation

What held: a runner file of the composed runner's type merges its keys over the preset's (the seed's runner.yml and
multiple_models.yml, tests/test_config.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT, ConfigError
from benchrun.core.home import expanded
from benchrun.testing.lab import Lab
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun
from tests.helpers.wire import answering

HOME_EMPTY = "~ is the home directory, and $HOME is empty (~ would be the file system's root)"


def test_an_error_line_shows_a_right_to_left_override_as_its_escape(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task("ab\u202ecd"))})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks.yml': task 'ab\\u202ecd': tasks[0].name: 'ab\\u202ecd' does not match "
        "'^[A-Za-z0-9_][A-Za-z0-9_.-]*$'\n"))


def test_a_dependency_that_cannot_be_imported_is_one_line(tmp_path):
    (tmp_path / "hydra").mkdir()
    (tmp_path / "hydra" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'hydra'\", name='hydra')\n")
    done = run_benchrun("dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: No module named 'hydra': benchrun is not installed in this Python ({sys.executable}) "
        "with what it needs; install it as the README says\n"))


def test_a_runner_files_model_path_under_an_empty_home_is_refused(tmp_path):
    (tmp_path / "r.yml").write_text("runner_type: local\nmodel: smol\nmodel_path: ~/m.gguf\n")
    done = run_benchrun("runner_file=r.yml", "runner=local", "cache=false", cwd=tmp_path, env={"HOME": ""})
    assert (done.returncode, done.stderr.splitlines()[-1]) == (EXIT["usage"], (
        f"benchrun: error: runner.model_path: '~/m.gguf': {HOME_EMPTY}; set HOME, or give the path itself"))


@pytest.mark.parametrize("path", ["~", "~/m.gguf"])
def test_a_tilde_path_under_an_empty_home_is_refused_naming_the_key(monkeypatch, path):
    monkeypatch.setenv("HOME", "")
    with pytest.raises(ConfigError) as refused:
        expanded(path, "cache_dir")
    assert str(refused.value) == f"cache_dir: {path!r}: {HOME_EMPTY}; set HOME, or give the path itself"


@pytest.mark.parametrize("path, home", [("~", "/h"), ("~/a/b", "/h/a/b"), ("a/~", "a/~"), ("/x", "/x")])
def test_a_tilde_path_is_the_home_directory(monkeypatch, path, home):
    monkeypatch.setenv("HOME", "/h")
    assert expanded(path, "cache_dir") == Path(home)


def test_a_runner_file_of_another_runner_type_is_that_runner(tmp_path):
    (tmp_path / "r.yml").write_text("runner_type: local\nmodel: smol\n")
    done = call_benchrun("runner_file=r.yml", "dry_run=true", "task.only=[product]", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert done.stdout.splitlines()[0].split() == ["listbench", "·", "local", "·", "smol"]


@pytest.mark.parametrize("size, kept", [(True, None), ("7", None), (7.0, None), (1234, 1234)])
def test_an_ollama_model_size_that_is_not_a_json_integer_is_not_kept(tmp_path, size, kept):
    listed = {"models": [{"model": "llama3.2:latest", "digest": "d" * 64, "size": size}]}
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        answering(lab.server, "/api/tags", listed)
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
    identity = json.loads((run_dir / "run.json").read_text())["identity"]
    assert (identity["digest"], identity["size"]) == ("d" * 64, kept)


@pytest.mark.parametrize("key", ["runner.model", "task.name"])
def test_an_override_deleting_a_key_the_run_directory_needs_is_named(tmp_path, key):
    done = call_benchrun(f"~{key}", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': {key}: cannot resolve: Interpolation key '{key}' not found (resolving "
        f"hydra.run.dir, from the override '~{key}')\n"))
