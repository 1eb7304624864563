"""Hostile input, twelfth pass, the process side (issue 19's fresh pass of the same kinds): benchmark files,
configuration and real `python -m benchrun` processes under abuse, the cases it found bad, each with the rule it now
obeys.

- a template of many fields, each within the limits one by one (`{a:>99999}` 3,000 times, 30 KB of tasks.yml; or
  `{a}` 100,000 times over a value of 100,000 characters): each field's width was held to task.max_prompt_chars, but
  the prompt was rendered whole before its length was counted, so 30 KB rendered 300 MB per sample (a 300 KB
  template 10 GB) before `the prompt ... has 299,997,000 characters` was said; a few-shot example rendered with the
  template likewise. Now a prompt is rendered field by field and stops once past task.max_prompt_chars
  (`compiler.grid.fill`): `has at least 199,998 characters, more than task.max_prompt_chars (100,000)`
- a model's name holding a control character (`model: "ab\\ncd"` in a runner file, `runner.model=$'b\\tc'`,
  `judge.model=...`): taken, sent to the server, and the run's heading printed in two lines (as task.name's was
  before the ninth pass). Now refused where the config is checked (`core.settings.RunnerConfig`), naming the key and
  the character, as task.name is
- a judge's rubric naming a field many times (`{response}` ten thousand times, 100 KB of judges.yml): each judge
  call rendered the answer (up to runner.max_response_bytes, 8 MiB) that many times, 80 GB for one call. Now a rubric
  names each field once at most, refused at compile naming the field (`compiler.judges.check_rubric`)
- a negative seed (`runner.options.seed=-1`, a runner file's `seed: -7`, `judge.options.seed=-2`): recorded as the
  run's seed, though -1 asks Ollama and llama.cpp for a random one (and other negative ones wrap), so the run did not
  repeat. Now refused naming the key (`core.settings.Options`)
- a Python warning, Hydra's for a `hydra.searchpath` that is not there (a typo of the user's config folder) or for
  `-m` with `hydra.mode=RUN`: three lines naming Hydra's own source file (`.../config_loader_impl.py:216:
  UserWarning: ...`, `  warnings.warn(`). Now one line, `benchrun: warning: ...` (`__main__._warning_line`)
- a memory limit (`ulimit -v 300000`, as a cluster's job or a container sets it): every file benchrun reads whole was
  read with `read(limit + 1)`, which takes a buffer of 256 MiB (task.max_file_bytes) before reading a tasks.yml of
  1 KB: a MemoryError's traceback for every run. Now read a chunk at a time (`core.filebytes`)
- out of memory for real (a values.csv of 63 MB under `ulimit -v 200000`): a traceback after Hydra's `Error executing
  job with overrides`, the run recorded `failed`. Now one line, as an OSError is: `out of memory; nothing was asked;
  run ... is recorded as 'failed' in DIR; start it again` (`execute.session.recording`, `core.errors.os_problem`), or
  `out of memory before the run started: nothing was asked or recorded` (`cli.hydra_main`), exit 4
- an override of one of Hydra's typed keys with a value of the wrong type (`hydra.job.chdir=abc`,
  `hydra.run.dir=[1]`, `hydra.launcher.n_jobs=abc`): `Error merging override hydra.job.chdir=abc` and nothing more,
  OmegaConf's reason left in the exception's cause. Now the line gives it: `(Value 'abc' is not a valid bool (type
  str))` (`cli.hydra_error`)
- a working directory whose name is not UTF-8 (a folder made by a tool writing Latin-1 names, `bad\\xffdir`): a
  dry run was a UnicodeEncodeError's traceback (a custom_*.py's path sent to the import check), a run a
  PydanticSerializationError's (run.json's cwd); `outputs='o\\xff'` made the directory, then the same traceback.
  Now refused before anything is made, the name shown with its byte escaped (`__main__._working_directory`,
  `core.layout.unusable_directory`), as a control character in `outputs` is
- an override of the job's logging, which is where the run's log (benchrun.log, what custom_*.py print) is written
  and where every credential logged is masked: `hydra/job_logging=disabled` was a traceback of logging's own
  (`ValueError: Unable to configure handler 'console'`), `hydra/job_logging=none` or
  `hydra.job_logging.root.level=CRITICAL` a run whose log was empty, `~hydra.job_logging.filters` took the masking
  away. Now refused before anything is made (`compose.commandline._refuse_kept_hydra_settings`, once
  `callbacks._check_logging`); `hydra.verbose=true` still logs more
- `hydra.job.name=foo` (the eighth pass refused `../x` only): the job's log went to `foo.log`, a file no audit
  command knows, beside an empty benchrun.log. Now refused, as `../x` is (`callbacks._check_inside`)
- `task.name=" "` or `runner.model=" "` (a name of only spaces): a run made, its directory named `..._model_...`
  (the benchmark's slug falling back), a blank benchmark in run.json and `list`, the model ` ` asked of the server.
  Now refused as an empty name is (`core.settings`)
- a runner file listing 20,000 models (the seed's multiple_models.yml, grown by a script): no limit, where a sweep
  is held to 10,000 jobs and an override to 10,000 values; a dry run compiled them one by one (88 in a minute), a run
  would have made 20,000 run directories one after another. Now a list of more than 10,000 models is refused in one
  line (`core.settings.MAX_MODELS`)

What held: templates: `{a.__class__}`, `{a[0]}`, `{0}`, `{}`, `{a!a}`, an unbalanced `{`, `{a:>1000000000}`, a width
from a value, `{{`/`}}` (the braces), a value holding `{b}` (filled once, sent as written), a field no value gives:
one line each or taken as str.format takes it (the renderer gives str.format's text, tests here). A runner file:
`model:` null, a number, a nested list (one line), 10,000 characters (taken: the directory's name is bounded),
`${oc.decode:...}` (kept as the text written), `_target_:` and `defaults: [itself]` (unknown keys), `temperature:
.nan`, `timeout_s: .inf`, `seed: 2**64`, `max_response_bytes: 10**30` (one line each), `1e308` (YAML 1.1 reads it as
text: `not a valid number, not "1e308"`), an unknown option (named, the allowed ones listed). `runner.timeout_s=1e300`
and `scorer_timeout_s=1e300` against a server answering in 1 s and a scorer taking 1.5 s: completed (asyncio's timers
take them). Values: `0o10` (text, as YAML 1.1 reads it), `1_000`, `on` (refused naming the line), `.nan`/`.inf`
(refused), value names `task`, `sample`, `__proto__` (export prefixes them `value.`), a reference that is a list of a
list, an object or null (one line), `values_file: ../../etc/passwd` or `/etc/passwd` (refused). CSV headers `a,a`,
an empty column name, `reference` twice, a row longer or shorter than the header: one line naming the line.
`task.only` listing a task twice, `shard=1/100`, `repeats=10**6`, `shard=0/0`: taken or one line. The process: $HOME
unset, TMPDIR unwritable, PYTHONWARNINGS=error (a run completes; Hydra's warnings then are one line of their own),
stdin closed: completed. `ulimit -n 20`: one line, the run `failed` and resumable. `hydra.searchpath` to a folder of
the user's with `config.yaml` in it: benchrun's own config stays the primary one. umask 0777: as root (the only user
here) the run completes; its files' modes (000) were not tried as another user. `task.path=/dev/null`, `/proc/self`,
`/`, `runner_file=/dev/stdin`: one line each. `hydra.launcher.n_jobs=0` with joblib: one line.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from tests.helpers import judges
from tests.helpers.benchfiles import tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"]}
LIMIT = "more than task.max_prompt_chars (100,000)"


@pytest.mark.parametrize("template, values, said", [
    ("{a:>99999}" * 3_000, [1, 2], "the prompt of sample 't:a=1' has at least 199,998 characters"),
    ("{a}" * 3_000, ["x" * 60_000, "y"], f"the prompt of sample 't:a={'x' * 62}~ff43a56f1a4c' has at least 120,000 "
                                         "characters"),
])
def test_a_template_of_many_fields_stops_rendering_past_the_limit(tmp_path, template, values, said):
    write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, "template": template, "values": {"a": values}})})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'tasks.yml': task 't': tasks[0].template: {said}, {LIMIT}\n"))


def test_a_few_shot_example_of_many_fields_stops_rendering_past_the_limit(tmp_path):
    shot = {"values": {"a": 7}, "assistant": "7"}
    write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, "template": "{a:>99999}" * 3_000, "fewshot": [shot]})})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks.yml': task 't': tasks[0].fewshot[0].values: the example rendered has at least "
        f"199,998 characters, {LIMIT}\n"))


@pytest.mark.parametrize("template, values, prompt", [
    ("{{c}} {a!r:>6} {a:{w}} {{{a}}}", {"a": ["x", "y"], "w": ["^5", "<3"]}, "{c}    'x'   x   {x}"),
    ("{a:.2f}|{a:+08.3f}|{a:,}", {"a": [1234.5, 2.0]}, "1234.50|+1234.500|1,234.5"),
])
def test_a_template_renders_as_str_format_does(tmp_path, template, values, prompt):
    write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, "template": template, "values": values})})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, prompt in done.stdout) == (EXIT["ok"], True)


@pytest.mark.parametrize("given, key, found", [
    ('runner_file=r.yml', "in 'r.yml': model", "'\\n' at character 3"),
    ("runner.model=[a,\"b\tc\"]", "in 'config': runner.model", "'\\t' at character 2"),
    ("runner.model=\"b\x1bc\"", "in 'config': runner.model", "'\\x1b' at character 2"),
    ("judge.model=\"b\tc\"", "in 'config': judge.model", "'\\t' at character 2"),
])
def test_a_model_name_holding_a_control_character_is_refused(tmp_path, given, key, found):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    (tmp_path / "r.yml").write_text('runner_type: ollama\nmodel: "ab\\ncd"\n')
    done = call_benchrun("task.path=bench", given, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {key}: {found}, a control character, which a model's name printed on the "
        "console (a run's heading, its tables, benchrun-audit list) cannot hold: name the model without one\n"))


@pytest.mark.parametrize("rubric, name", [
    ("{response}" * 10_000, "response"),
    ("Q {prompt} A {response} again {response!r}", "response"),
    ("{chat} {symb} {symb}", "symb"),
])
def test_a_rubric_naming_a_field_twice_is_refused(tmp_path, rubric, name):
    write_bench(tmp_path, {"tasks.yml": judges.TASKS, "custom_response.py": judges.RESPONSE,
                           "judges.yml": judges.JUDGES.replace(json.dumps(judges.RUBRIC), json.dumps(rubric))})
    done = call_benchrun("task.path=bench", "judge.model=qwen2.5", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'judges.yml': judges[0].rubric: field {{{name}}} is named twice: a rubric names each "
        "field once at most (each time is the whole text again, an answer of up to runner.max_response_bytes)\n"))


@pytest.mark.parametrize("given, key, seed", [
    ("runner.options.seed=-1", "in 'config': runner.options.seed", -1),
    ("runner=local runner.options.seed=-1", "in 'config': runner.options.seed", -1),
    ("runner=openai runner.options.seed=-3", "in 'config': runner.options.seed", -3),
    ("judge.options.seed=-2", "in 'config': judge.options.seed", -2),
    ("runner_file=r.yml", "in 'r.yml': options.seed", -7),
])
def test_a_negative_seed_is_refused_naming_its_key(tmp_path, given, key, seed):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    (tmp_path / "r.yml").write_text("runner_type: ollama\nmodel: m\noptions: {seed: -7}\n")
    done = call_benchrun("task.path=bench", *given.split(), "judge.model=q", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {key}: a negative seed ({seed}): -1 asks Ollama and llama.cpp for a random "
        "seed (and other negative ones wrap), so the run would not repeat though its seed is recorded; give 0 or "
        "more\n"))


@pytest.mark.parametrize("given, said", [
    (("hydra.searchpath=[file:///nonexistent/conf]", "runner=mine"),
     "benchrun: warning: provider=hydra.searchpath in command-line, path=/nonexistent/conf is not available.\n"
     "benchrun: error: In 'config': Could not find 'runner/mine' (options: local, ollama, openai)\n"),
    (("-m", "hydra.mode=RUN", "hydra.sweep.dir=sweep"),
     "benchrun: warning: Running Hydra app with --multirun, overriding with `hydra.mode=MULTIRUN`.\n"),
])
def test_a_warning_of_hydra_is_one_line(tmp_path, given, said):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    # a process: in-process, pytest's filterwarnings=error makes Hydra's warning an error (inprocess.cli keeps it)
    done = run_benchrun("task.path=bench", *given, "dry_run=true", cwd=tmp_path)
    assert done.stderr == said


def _memory_limit() -> None:
    """`ulimit -v` of 200 MiB for a child process: a dry run needs about 130."""
    resource.setrlimit(resource.RLIMIT_AS, (200 * 2**20, 200 * 2**20))


def test_a_dry_run_under_a_memory_limit_reads_the_benchmark(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = subprocess.run([sys.executable, "-m", "benchrun", "task.path=bench", "dry_run=true"], cwd=tmp_path,
                          env=child_env(None), capture_output=True, text=True, preexec_fn=_memory_limit, timeout=120)
    assert (done.returncode, done.stderr, "1 task, 2 samples -> 2 model calls" in done.stdout) == (EXIT["ok"], "", True)


def _big_values(tmp_path) -> None:
    """A folder task whose values.csv (63 MB) a run under a memory limit of 200 MiB cannot hold."""
    rows = "".join(f"{i}{'x' * 90_000},1\n" for i in range(700))
    write_bench(tmp_path, {"tasks/big/template.txt": "say {a}\n", "tasks/big/values.csv": "a,reference\n" + rows})


def test_out_of_memory_is_one_line_saying_what_is_recorded(tmp_path):
    _big_values(tmp_path)
    run = [sys.executable, "-m", "benchrun", "task.path=bench", "runner.host=http://127.0.0.1:9", "cache=false"]
    dry = subprocess.run([*run, "dry_run=true"], cwd=tmp_path, env=child_env(None), capture_output=True, text=True,
                         preexec_fn=_memory_limit, timeout=120)
    assert (dry.returncode, dry.stdout, dry.stderr) == (EXIT["archive"], "", (
        "benchrun: error: out of memory before the run started: nothing was asked or recorded\n"))
    done = subprocess.run([*run, "outputs=out"], cwd=tmp_path, env=child_env(None), capture_output=True, text=True,
                          preexec_fn=_memory_limit, timeout=120)
    [run_dir] = (tmp_path / "out").glob("*/*")
    info = json.loads((run_dir / "run.json").read_text())
    assert (done.returncode, done.stderr, info["status"], info["reason"]) == (EXIT["archive"], (
        f"benchrun: error: out of memory; nothing was asked; run {info['run_id']} is recorded as 'failed' in "
        f"{run_dir}; start it again\n"), "failed", "benchrun failed: MemoryError: MemoryError")


@pytest.mark.parametrize("given, why", [
    ("hydra.job.chdir=abc", "Value 'abc' is not a valid bool (type str)"),
    ("hydra.run.dir=[1]", "Cannot convert 'list' to string: '[1]'"),
])
def test_a_hydra_value_of_the_wrong_type_says_why(tmp_path, given, why):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("task.path=bench", given, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: Error merging override {given} ({why})\n"))


def test_a_working_directory_whose_name_is_not_utf8_is_refused_before_anything_is_made(tmp_path):
    where = os.path.join(os.fsencode(tmp_path), b"bad\xffdir")
    os.mkdir(where)
    write_bench(Path(os.fsdecode(where)), {"tasks.yml": tasks_yml(TASK)})
    for dry in ("dry_run=true", "dry_run=false"):
        done = subprocess.run([sys.executable, "-m", "benchrun", "task.path=bench", dry, "runner.host=http://127.0.0.1:9"],
                              cwd=where, env=child_env(None), capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
            f"benchrun: error: the working directory {tmp_path}/bad\\xffdir is not UTF-8 text, and a run records it "
            "as text (run.json's cwd); cd to a directory whose path is\n"))
    assert sorted(os.listdir(where)) == [b"bench"]


@pytest.mark.parametrize("given, key, shown", [("outputs=${oc.env:OUT}", "outputs", "o\\xff"),
                                               ("hydra.run.dir=${oc.env:OUT}/x", "hydra.run.dir", "o\\xff/x")])
def test_a_run_directory_whose_name_is_not_utf8_is_refused_before_anything_is_made(tmp_path, given, key, shown):
    """The name from an environment variable: on the command line, such a word is refused before Hydra reads it
    (tests/test_hostile_fourteenth_runs.py)."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("task.path=bench", given, "runner.host=http://127.0.0.1:9", cwd=tmp_path,
                         env={"OUT": "o\udcff"})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': {key}: '{shown}' is not UTF-8 text, and a run records its directory's path "
        "as text (run.json): name a directory whose name is\n"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bench"]


@pytest.mark.parametrize("given", ["hydra/job_logging=disabled", "hydra/job_logging=none",
                                   "hydra.job_logging.root.level=CRITICAL", "~hydra.job_logging.filters"])
@pytest.mark.parametrize("sweep", [(), ("-m", "runner.model=a,b")])
def test_an_override_of_the_job_logging_is_refused_before_anything_is_made(tmp_path, given, sweep):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun(*sweep, "task.path=bench", given, "runner.host=http://127.0.0.1:9", "outputs=out",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {given}: the job's logging is benchrun's: it writes the run's log (benchrun.log) and masks "
        "every credential in what is logged; leave hydra/job_logging out (hydra.verbose=true logs more)\n"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("sweep", [(), ("-m", "runner.model=a,b")])
def test_a_job_name_of_the_users_is_refused_before_anything_is_made(tmp_path, sweep):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun(*sweep, "task.path=bench", "hydra.job.name=foo", "runner.host=http://127.0.0.1:9",
                         "outputs=out", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: hydra.job.name=foo: the job's name is benchrun's, and names the run's log (benchrun.log); "
        "leave hydra.job.name out\n"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("given, said", [
    ('task.name=" "', "task.name: only spaces: name the benchmark (its name is in the run directory's name and in "
                      "benchrun-audit list)"),
    ('runner.model=" "', "runner.model: ' ', where a model's name is taken: give the model's name"),
    ('runner.model=[a,"  "]', "runner.model: a model name, or a list of different model names"),
])
def test_a_name_of_only_spaces_is_refused(tmp_path, given, said):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("task.path=bench", given, "runner.host=http://127.0.0.1:9", "outputs=out", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'config': {said}\n")
    assert not any((tmp_path / "out").rglob("*"))


def test_a_runner_file_listing_more_models_than_a_sweep_runs_jobs_is_refused(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    (tmp_path / "r.yml").write_text("runner_type: ollama\nmodel:\n" + "".join(f"  - m{i}\n" for i in range(10_001)))
    done = call_benchrun("task.path=bench", "runner_file=r.yml", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'r.yml': model: 10,001 models, more than one command runs (10,000, one after "
        "another, a run directory each, as a sweep's jobs); list fewer, or split the list\n"))
