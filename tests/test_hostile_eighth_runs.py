"""Hostile input, eighth pass, the process side (issue 19's fresh pass of the same kinds): real `python -m benchrun`
processes under abuse, the cases it found bad, each with the rule it now obeys.

- an override reading a credential through OmegaConf's resolver (`task.name=${oc.env:MY_SECRET}`): refused for a
  single run, but a sweep's directory was named with the secret (its jobs' run.json keeping the path), and
  `--cfg job --resolve` printed it; now refused before Hydra writes or prints anything, as the key pasted is, and a
  sweep directory whose name would hold a credential however it got there (an interpolation of an interpolation) is
  refused before it is made
- an override whose interpolation cannot be resolved (`task.system=${oc.env:NOPE}`, `${nope.x}`, a resolver given
  too few arguments, `${hydra:job.override_dirname}`, which recurses): two lines, Hydra's `Error executing job with
  overrides: [...]` and OmegaConf's message naming no key (or `full_key: hydra.run.dir`, the name it was resolved
  into); run.json's `overrides` held the override resolved (`task.system=sys llama3.2` for `sys ${runner.model}`),
  not as given. Now one line naming the key (and, for the run directory's name, the override), and run.json keeps
  the overrides as given, as .hydra/overrides.yaml does
- a custom_*.py that starts a thread at import that never ends: the import check waited IMPORT_TIMEOUT_S (60 s) and
  said `still running after 60 s` though the import had ended (the thread kept its process alive); one that starts
  a process (`subprocess.Popen(["sleep", "300"])`): the same, the process holding the check's pipes. Now the check
  ends at once and names what was left running, the process killed
- a custom_*.py that ignores SIGTERM or Ctrl-C at import (`signal.signal(signal.SIGTERM, signal.SIG_IGN)`), imported in
  the run's own process: the run could no longer be stopped but by SIGKILL (left `running`); one that sets
  `signal.alarm(1)`: the run killed by SIGALRM a second on, `running` with nothing said. Now every signal's handling
  is put back as it was after the import, and an alarm set in it cancelled
- a response class whose JSON schema refers outside itself (`json_schema_extra={"$ref": "http://..."}`, a
  `$dynamicRef`): compiled, then the format check's validator fetched the URL as the run began (a file:// one it
  read), and failed in a traceback, the run `failed`; now refused at compile, naming the format and the reference
- a limit of open files under 100 (`ulimit -n 30`): the scorer process, which keeps its pipes at 100 and above,
  could not start; a traceback on the console, every user scorer's score `ScorerUnavailable`, and exit 0. Now the
  pipes are kept at the highest numbers such a limit allows
- a system's error met in a run where nothing nearer names it (`ulimit -n 16`: too many open files): the run was
  recorded as `failed`, but the console said `Error executing job with overrides: [...]` and `too many open files
  writing Hydra's files in DIR (its copies of the config); nothing was recorded`. Now one line saying what the run
  directory records, and the command that finishes it
- a sweep listing one value twice (`-m runner.model=llama3.2,llama3.2`): two jobs of one label, two columns named
  `llama3.2` in the sweep's table that nothing told apart (`runner.model=[a,a]` is refused); now refused before the
  sweep directory is made
- `hydra.output_subdir=../../escape` or `hydra.job.name=../../jn`: Hydra's copies of the config (`.hydra`) or its
  log (`<job name>.log`) put outside the run's directory, in outputs/, where the next run's replaced them (the run
  verified intact without them); now refused before anything is made, as hydra.sweep.subdir is
"""

from __future__ import annotations

import json
import re
import resource
import signal
import subprocess
import sys
import time

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun

pytestmark = pytest.mark.slow

SECRET = "supersecretvalue1234567890abcdef"
REFUSED = ("put an API key in an environment variable and name it with runner.api_key_env, and give URLs without "
           "user names or passwords")


@pytest.mark.parametrize("args", [
    ("-m", "task.name=${oc.env:MY_SECRET}", "runner.model=a,b"),
    ("--cfg", "job", "--resolve", "task.name=${oc.env: 'MY_SECRET',x}"),
    ("--cfg", "job", "--resolve", "task.name=${oc.env:ALIAS}"),
])
def test_an_override_reading_a_credential_through_oc_env_is_refused_before_hydra(tmp_path, args):
    env = {"MY_SECRET": SECRET, "ALIAS": SECRET}
    done = call_benchrun(*args, f"outputs={tmp_path / 'out'}", cwd=tmp_path, env=env)
    name = "ALIAS" if "ALIAS" in args[-1] else "MY_SECRET"
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': task.name: secrets are never taken from the config, where they would be "
        f"archived (${{oc.env:{name}}}, which reads the credential in ${name}); {REFUSED}\n"))
    assert not (tmp_path / "out").exists()


def test_a_sweep_directory_whose_name_would_hold_a_credential_is_never_made(tmp_path):
    done = call_benchrun("-m", "task.name='${oc.env:${task.description}}'", "+task.description=MY_SECRET",
                         "runner.model=a,b", f"outputs={tmp_path / 'out'}", cwd=tmp_path, env={"MY_SECRET": SECRET})
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'config': task.name: secrets are never taken from the config, where they would be "
        "archived (an environment variable read by a name, or text resolved, that another interpolation makes "
        "(${oc.env:${...}}, ${oc.decode:${...}}), which no check sees before Hydra resolves it); " + REFUSED + "\n"))
    assert not (tmp_path / "out").exists()


RECURSED_WHERE = "<where>"
"""Python ends its RecursionError's message with where the stack ran out (` in comparison`, ` while calling a Python
object`), which depends on the depth the process started at: any tail stands there."""


@pytest.mark.parametrize("override, said", [
    ("task.system=${oc.env:NOPE}",
     "task.system: cannot resolve: KeyError raised while resolving interpolation: \"Environment variable 'NOPE' not "
     "found\""),
    ("task.system=${nope.x}", "task.system: cannot resolve: Interpolation key 'nope.x' not found"),
    ("task.system=${slug:}", "task.system: cannot resolve: TypeError raised while resolving interpolation: slug() "
                             "missing 1 required positional argument: 'value'"),
    ("task.system=${hydra:job.override_dirname}",
     "hydra.job.override_dirname: cannot resolve: RecursionError raised while resolving interpolation: maximum "
     "recursion depth exceeded" + RECURSED_WHERE),
    ("task.name=${oc.env:NOPE}",
     "task.name: cannot resolve: KeyError raised while resolving interpolation: \"Environment variable 'NOPE' not "
     "found\" (resolving hydra.run.dir, from the override 'task.name=${oc.env:NOPE}')"),
    ("runner.model=${runner.model}",
     "runner.model: cannot resolve: Recursive interpolation detected (resolving hydra.run.dir, from the override "
     "'runner.model=${runner.model}')"),
])
def test_an_interpolation_that_cannot_be_resolved_is_one_line_naming_the_key(tmp_path, override, said):
    done = call_benchrun("dry_run=true", override, cwd=tmp_path)
    assert done.returncode == EXIT["usage"]
    assert re.fullmatch(re.escape(f"benchrun: error: in 'config': {said}\n").replace(re.escape(RECURSED_WHERE), ".*"),
                        done.stderr), done.stderr


def test_run_json_keeps_the_overrides_as_given_not_resolved(tmp_path):
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        done = lab.call(*lab.args("task.system=sys ${runner.model}"))
        [run_dir] = lab.run_dirs()
    assert done.returncode == EXIT["ok"]
    assert json.loads((run_dir / "run.json").read_text())["overrides"][-1] == "task.system=sys ${runner.model}"


@pytest.mark.parametrize("work, what", [
    ("threading.Thread(target=lambda: time.sleep(600)).start()", "a thread ('Thread-1 (<lambda>)')"),
    ("subprocess.Popen(['sleep', '600'])", "a process"),
])
def test_a_file_that_leaves_work_running_at_import_is_one_line_at_once(tmp_path, work, what):
    source = f"import subprocess, threading, time\n{work}\n\ndef s(response, values):\n    return 1\n"
    with Lab(tmp_path, n=1, latency_s=0, scorer=source) as lab:
        began = time.monotonic()
        done = lab.call(*lab.args("dry_run=true"))
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'custom_scorer.py': cannot import: it starts {what} that is still running once it is "
        "imported, which would keep the run from ending; a benchmark's file must define its functions and classes, "
        "not work at import\n"))
    assert time.monotonic() - began < 20


def test_a_file_that_ignores_sigterm_at_import_leaves_the_run_stoppable(tmp_path):
    source = ("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "signal.signal(signal.SIGINT, signal.SIG_IGN)\n\ndef s(response, values):\n    return 1\n")
    with Lab(tmp_path, n=4, latency_s=0, scorer=source) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        assert (proc.returncode, err.count("\n")) == (EXIT["interrupted"], 1), err
        assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"


def test_an_alarm_set_at_import_does_not_kill_the_run(tmp_path):
    source = "import signal\nsignal.alarm(1)\n\ndef s(response, values):\n    return 1\n"
    with Lab(tmp_path, n=4, latency_s=0, scorer=source) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            time.sleep(2)
        _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (EXIT["ok"], "")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


@pytest.mark.parametrize("where", ["{'$ref': URL}", "{'properties': {'answer': {'$dynamicRef': URL}}}"])
def test_a_response_schema_referring_outside_itself_is_refused_at_compile(tmp_path, where):
    url = "http://127.0.0.1:9/evil.json"
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(format="F")), "custom_response.py": (
        f"from pydantic import BaseModel, ConfigDict\n\nURL = {url!r}\n\n\nclass F(BaseModel):\n"
        f"    model_config = ConfigDict(json_schema_extra={where})\n    answer: str\n")})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    key = "$ref" if "$ref" in where else "$dynamicRef"
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'custom_response.py': format 'F': its JSON schema refers to '{url}' ({key}), outside "
        "the schema, and benchrun fetches nothing for a format (no URL, no file); define what it refers to in "
        "custom_response.py\n"))


def test_a_low_open_files_limit_leaves_the_scorer_process_working(tmp_path):
    """`ulimit -n 30`: the scorer process kept its pipes at 100, which it could not; every user scorer's score was
    `ScorerUnavailable: the scorer process did not start`, a traceback on the console, and the run exited 0."""
    with Lab(tmp_path, n=3, latency_s=0) as lab:
        done = subprocess.run([sys.executable, "-m", "benchrun", *lab.args()], cwd=tmp_path, env=child_env(),
                              capture_output=True, text=True, timeout=120,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (30, 30)))
        [run_dir] = lab.run_dirs()
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert [json.loads(line)["error"] for line in (run_dir / "scores.jsonl").read_text().splitlines()] == [None] * 6


def test_a_system_error_met_in_a_run_says_what_is_recorded_and_resume_finishes_it(tmp_path):
    """`ulimit -n 16`: the run was recorded as `failed`, but the console said `Error executing job with overrides:
    [...]` and `too many open files writing Hydra's files in DIR (its copies of the config); nothing was recorded`."""
    with Lab(tmp_path, n=3, latency_s=0) as lab:
        done = subprocess.run([sys.executable, "-m", "benchrun", *lab.args()], cwd=tmp_path, env=child_env(),
                              capture_output=True, text=True, timeout=120,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16)))
        [run_dir] = lab.run_dirs()
        where = run_dir.absolute()
        assert (done.returncode, done.stderr) == (EXIT["archive"], (
            f"benchrun: error: too many open files; run {run_id(run_dir)} is recorded as 'failed' with 0 of 3 samples "
            f"in {where}; finish it with: benchrun-audit resume {where}\n"))
        resumed = lab.call("resume", str(run_dir), module="benchrun.audit")
        assert resumed.returncode == EXIT["ok"] and lab.verified(run_dir)


def run_id(run_dir) -> str:
    return json.loads((run_dir / "run.json").read_text())["run_id"][:12]


@pytest.mark.parametrize("swept", ["runner.model=llama3.2,llama3.2", "runner.options.temperature=choice(0,0.5,0)"])
def test_a_sweep_listing_one_value_twice_is_refused_before_it_is_made(tmp_path, swept):
    done = call_benchrun("-m", swept, f"outputs={tmp_path / 'out'}", cwd=tmp_path)
    key, twice = swept.partition("=")[0], swept.rpartition(",")[2].rstrip(")")
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}: the sweep lists '{twice}' twice, so two of its jobs would have one "
        "label; list each value once (repeats=k asks every sample k times in one run)\n"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("override, fix", [
    ("hydra.output_subdir=../../escape", "leave it out (.hydra)"),
    ("hydra.job.name=../../jn", "leave it out"),
])
@pytest.mark.parametrize("sweep", [False, True])
def test_hydras_files_of_a_run_are_never_put_outside_its_directory(tmp_path, override, fix, sweep):
    done = call_benchrun(*(("-m", "runner.model=a,b") if sweep else ()), override, f"outputs={tmp_path / 'out'}",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: {override}: a name in the run's directory (no '/', not '.' or '..'), where its files are "
        f"kept; {fix}\n"))
    assert not (tmp_path / "out").exists()
