"""Hostile input, tenth pass, the process side (issue 19's fresh pass of the same kinds): real `python -m benchrun`
processes under abuse, the cases it found bad, each with the rule it now obeys.

- a JSONL values or examples file holding half of a UTF-16 surrogate pair as an escape (`"a": "x\\ud800"`, as a
  writer that splits an emoji's pair writes it): taken as a value, then a UnicodeEncodeError's traceback when the
  manifest was written (exit 1), though tasks.yml refuses the same escape naming its line. Now refused where the line
  is read (`compiler.files`), naming the file, the task and the line; a pair of escapes (`\\ud83d\\ude00`) is the
  character it spells
- SIGQUIT, a terminal's Ctrl-\\ (what an impatient user presses when Ctrl-C seems slow), sent to the run's process
  group: the run and its scorer process dumped core, the run left `running` with nothing said. Now it is an
  interrupt like Ctrl-C and a hang-up (`core.interrupts`: the run recorded `interrupted`, one line, exit 130, children
  ignoring it), unless the run was started ignoring it, as a shell's background job is, which then goes on
- a run directory whose path is longer than the console is wide (160 characters when the output is a pipe or a file:
  `outputs=` a deep folder): `run directory: PATH`, `sweep directory: PATH` and `verify`'s heading were folded by rich
  into two or three lines (`run directory: ` alone, then the path cut in two), so a script reading the line got half a
  path, and a terminal user could not copy it whole. Now every line naming a path or a reason is printed unfolded
  (`console.output.say`), the terminal folding it as it folds any long line
- `hydra.job.chdir=true` (Hydra 1.1's default, which habit brings back): the job changed into its run directory and
  read task.path there, so a run was made, recorded `failed` with `'bench' is not a directory (looked in
  outputs/.../bench)` of a benchmark that is there (a dry run looked in its scratch directory); a scorer's own files
  would have been written among the run's. Now refused before anything is made (`compose.hydragiven._check_stays`, once `callbacks._check_stays`), one line
- `outputs` (or `hydra.run.dir`, `hydra.sweep.dir`) holding a name longer than a file system takes (255 bytes), or so
  long a path that a run's files would not fit under it: `outputs=x/<300 characters>/y` was a traceback of twelve
  chained OSErrors (ENAMETOOLONG, exit 1) with `x/` left behind, `outputs=<300 characters>` Hydra's four-line
  UserWarning before the error. Now refused as an empty `outputs` is (`core.layout.unusable_directory`), naming the
  length, before anything is made
- a check of benchrun's Hydra callbacks that meets an error (a runner file's name too long, read to name the run
  directory; a run directory benchrun may not look into): Hydra turns a callback's error into a UserWarning of four
  lines and goes on past the check (after a sweep, without its summary). Now the runner file's error is what it is
  (`runner_file: runner file '...': file name too long`, `compose.config.read_runner_file`), and any error in a
  callback ends benchrun in one line with its exit code (`callbacks._one_line`), an OSError naming its path (exit 4)
- standard output closed when the command started (`benchrun-audit export RUN >&-`): Python's sys.stdout is None, and
  export was a TypeError's traceback (exit 1); a run or `verify` printed into nothing and exited 0. Now a standard
  output closed at start is a display whose first write fails (`core.stdfds`), as a full one does: the command does its
  work, then says so in one line, exit 4; one that prints nothing there (`export --output FILE`) exits 0
- a credential read through an environment variable whose name another interpolation makes
  (`task.system='${oc.env:${oc.env:P}}'` with P=HF_TOKEN), or through text resolved in turn
  (`${oc.decode:${oc.env:Q}}` with Q holding `${oc.env:HF_TOKEN}`): the eighth pass's check reads the name as written,
  so `--cfg job --resolve` printed the token (exit 0; a run refused it only once resolved). Now refused before Hydra
  prints or writes anything (`core.secrets.environment_read`), as `${oc.env:HF_TOKEN}` is
- Ctrl-C while a `benchrun-audit` command's code is still loading (the first second of `rescore`, `resume`,
  `export`): a KeyboardInterrupt traceback of forty lines through importlib and pydantic; now `interrupted by SIGINT`,
  exit 130, as an interrupt later in the command is (`audit.__main__.main`)
- Ctrl-C while `benchrun-audit rescore` grades: its one line, then `Task exception was never retrieved` and a
  traceback of eighty lines (rescore ran its grading with asyncio.run, so the interrupt was raised inside a task); now
  through `core.interrupts`' loop, as a run, `resume` and `retry` are: one line, exit 130, no rescores/ folder left

What held: a tasks.yml's `${...}` is kept as the text written (a template's `${oc.env:X}` is refused as a field that
names no value), and a runner file's `${oc.env:OPENAI_API_KEY}` or an override's (`runner.options.stop=[...]`,
`task.system=...`, `hydra.job.env_set.X=...`) is refused before `--info`, `--cfg job|hydra|all --resolve` or a dry run
prints anything; an interpolation that loops or names no key is one line. Values and examples files: an object or a
list as a value, a field missing from some rows, a reference that is null, NaN, Infinity or an object, an examples
turn with roles (`role: tool`), a number or a list as content, an empty turn, a turn's value missing or an object,
UTF-16 files and NUL bytes (a template, a CSV, a description), a byte-order mark (tasks.yml, values.csv,
template.txt, a JSONL) are each one line naming the file, task and line, or taken as written. A run sent SIGHUP or
SIGTERM is `interrupted` and finished by `resume` (so, since the fifteenth pass, is one sent SIGUSR1 or SIGUSR2, a
batch scheduler's); a background job's SIGQUIT stays ignored. `ulimit -f` of 8 to 40 KiB: one line naming the file (`.reserve` or
responses.jsonl), `failed`, and `resume` finishes it once the limit is lifted (or says the run ended before it
compiled). COLUMNS=5, 10**9, -3 or `abc`, LINES=0, TERM=dumb, NO_COLOR, FORCE_COLOR (and both): exit 0, the same
records. PYTHONIOENCODING=ascii with LC_ALL=C and a non-ASCII `outputs` and `task.name`: the run, `show`, `list` and
`export` (which writes UTF-8 whatever the console's encoding) all exit 0. A run with 0, 1 and 2 all closed finishes
`completed` (then says, exit 4, that its output was closed). Overrides: a key given twice (the last is taken, both recorded), `+runner.modle=x` (did you mean
'model'?), `++runner.extra=1`, `~runner.model`, `~task`, `runner.options=null` or `=[1,2]`, `task=null`, a model or a
system prompt of 120 KB (the prompt refused by task.max_prompt_chars), 10,000 overrides: one line each, exit 2, or
taken. `outputs` through a symbolic link loop: one line. Secrets: `${oc.env:HF_TOKEN}` in `task.description`, in a
sweep, in `hydra.job.env_set`: refused before anything is printed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab, Outcome
from tests.helpers.benchfiles import tasks_yml, write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.killed import from_the_terminal

pytestmark = pytest.mark.slow

TASK = {"name": "t", "template": "say {a}", "values_file": "v.jsonl"}


@pytest.mark.parametrize("files, file", [
    ({"tasks.yml": tasks_yml(TASK), "v.jsonl": '{"a": "x\\ud800", "reference": "1"}\n'}, "v.jsonl"),
    ({"tasks.yml": tasks_yml({**TASK, "fewshot": {"file": "ex.jsonl"}}), "v.jsonl": '{"a": 1, "reference": "1"}\n',
      "ex.jsonl": '{"user": "hi", "assistant": "ok"}\n{"user": "x", "assistant": ["\\ud800"]}\n'}, "ex.jsonl"),
])
def test_a_lone_surrogate_escape_in_a_jsonl_file_is_refused_naming_its_line(tmp_path, files, file):
    write_bench(tmp_path, files)
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    line = 1 if file == "v.jsonl" else 2
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{file}': task 't': line {line}: \\ud800 is half of a UTF-16 surrogate pair, not a "
        "character; write the character itself (or both halves of its pair, \\ud83d\\ude00)\n"))


def test_a_pair_of_surrogate_escapes_in_a_jsonl_file_is_the_character_it_spells(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK), "v.jsonl": '{"a": "\\ud83d\\ude00", "reference": "1"}\n'})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, "say \U0001F600" in done.stdout) == (EXIT["ok"], True)


def test_ctrl_backslash_is_an_interrupt_and_the_run_is_finished_by_resume(tmp_path):
    with Lab(tmp_path, n=4, latency_s=0) as lab:
        done = from_the_terminal(lab, signal.SIGQUIT, *lab.args())
        [run_dir] = lab.run_dirs()
        assert (done.returncode, done.stderr.count("\n")) == (EXIT["interrupted"], 1)
        assert done.stderr.startswith(f"benchrun: error: interrupted by SIGQUIT: run {run_id(run_dir)} is recorded as "
                                      "'interrupted' with 2 of 4 samples")
        assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
        assert lab.call("resume", str(run_dir), module="benchrun.audit").returncode == EXIT["ok"]
        assert lab.judge(Outcome("ctrl-backslash"), run_dir).lost == 0 and lab.verified(run_dir)
        assert [json.loads(line)["error"] for line in (run_dir / "scores.jsonl").read_text().splitlines()] == [None] * 8


def test_a_run_started_ignoring_sigquit_goes_on_through_it(tmp_path):
    with Lab(tmp_path, n=4, latency_s=0) as lab:
        done = from_the_terminal(lab, signal.SIGQUIT, *lab.args(), ignored=True)
        [run_dir] = lab.run_dirs()
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


def test_a_run_directory_longer_than_the_console_is_wide_is_printed_on_one_line(tmp_path):
    outputs = tmp_path / ("x" * 80) / ("y" * 80)
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        done = lab.call(*lab.args(outputs=outputs))
        [run_dir] = lab.run_dirs(outputs)
        verified = lab.call("verify", str(run_dir), module="benchrun.audit")
        swept = lab.call("-m", *lab.args("runner.model=llama3.2,gone", outputs=outputs))
    [sweep_dir] = [path for path in outputs.glob("*/*_sweep")]
    assert (done.returncode, done.stdout.splitlines()[-1]) == (EXIT["ok"], f"run directory: {run_dir}")
    assert verified.stdout.splitlines()[0] == f"verify {run_id(run_dir)}  {run_dir}"
    assert (swept.returncode, swept.stdout.splitlines()[-2:]) == (EXIT["sweep_failed"], [
        f"job 1_gone (gone) failed: model 'gone' is not pulled on {lab.server.url} (it has: llama3.2:latest); run "
        "`ollama pull gone` or pick another runner.model", f"sweep directory: {sweep_dir}"])


def run_id(run_dir: Path) -> str:
    return json.loads((run_dir / "run.json").read_text())["run_id"][:12]


@pytest.mark.parametrize("flags", [(), ("dry_run=true",), ("-m",)])
def test_hydra_job_chdir_is_refused_before_anything_is_made(tmp_path, flags):
    write_bench(tmp_path, {"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values": {"a": [1]},
                                                   "reference": ["1"]})})
    done = call_benchrun(*flags, "task.path=bench", "outputs=outputs", "hydra.job.chdir=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: hydra.job.chdir=true: benchrun stays in the directory it was started in, where relative "
        "paths (task.path, runner_file) are found and a scorer's own files are written, never among the run's; leave "
        "hydra.job.chdir out\n"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bench"]


@pytest.mark.parametrize("outputs, why", [
    ("x/" + "a" * 256 + "/y", "a name of 256 bytes, more than a file system takes (255)"),
    ("'" + "é" * 128 + "'", "a name of 256 bytes, more than a file system takes (255)"),
    ("/".join(["b" * 200] * 18), "a path of 3,617 bytes, too long for a run's files under it (a file system takes "
                                 "4,096 in all, and a run's own names need 512)"),
])
@pytest.mark.parametrize("flags", [(), ("-m",)])
def test_an_outputs_no_file_system_takes_is_refused_before_anything_is_made(tmp_path, outputs, why, flags):
    write_bench(tmp_path, {"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values": {"a": [1]},
                                                   "reference": ["1"]})})
    done = call_benchrun(*flags, "task.path=bench", f"outputs={outputs}", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': outputs: {why}: name a shorter directory\n"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bench"]


def test_an_outputs_of_a_name_a_file_system_takes_is_taken(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values": {"a": [1]},
                                                   "reference": ["1"]})})
    done = call_benchrun("task.path=bench", "dry_run=true", f"outputs={'a' * 255}", cwd=tmp_path)
    assert done.returncode == EXIT["ok"]


def test_a_runner_file_name_too_long_is_one_line(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values": {"a": [1]},
                                                   "reference": ["1"]})})
    name = "r" * 300
    done = call_benchrun("task.path=bench", f"runner_file={name}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: runner_file: runner file '{name}': file name too long\n"))


def test_an_error_in_a_check_of_the_run_directory_is_one_line_and_stops_the_run(tmp_path, monkeypatch):
    def cannot_look(run_dir: Path, *args: object) -> None:
        raise PermissionError(13, "Permission denied", str(run_dir.parent))

    monkeypatch.setattr("benchrun.callbacks.refusal", cannot_look)
    write_bench(tmp_path, {"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values": {"a": [1]},
                                                   "reference": ["1"]})})
    done = call_benchrun("task.path=bench", "outputs=outputs", "hydra.run.dir=outputs/run", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["archive"], "", (
        "benchrun: error: permission denied: outputs\n"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bench"]


def closed_stdout(lab: Lab, *args: str) -> subprocess.CompletedProcess:
    """`benchrun-audit args` in the lab with file descriptor 1 closed, as `>&-` starts it."""
    return subprocess.run([sys.executable, "-m", "benchrun.audit", *args], cwd=lab.root, env=child_env(),
                          stderr=subprocess.PIPE, text=True, timeout=60, preexec_fn=lambda: os.close(1))


def test_an_export_to_a_closed_standard_output_says_so_in_one_line(tmp_path):
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
        lost = closed_stdout(lab, "export", str(run_dir))
        written = closed_stdout(lab, "export", str(run_dir), "--output", "x.csv")
    assert (lost.returncode, lost.stderr) == (EXIT["archive"], (
        "benchrun: error: standard output was closed (>&-): what was printed went nowhere, not what was recorded\n"))
    assert (written.returncode, written.stderr, (tmp_path / "x.csv").read_text().count("\n")) == (EXIT["ok"], "", 5)


TOKEN = "hf_0123456789abcdefghijKLMNOP"


@pytest.mark.parametrize("value", ["${oc.env:${oc.env:P}}", "${oc.decode:${oc.env:Q}}"])
def test_a_credential_read_through_an_interpolation_made_at_run_time_is_refused(tmp_path, monkeypatch, value):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("P", "HF_TOKEN")
    monkeypatch.setenv("Q", "${oc.env:HF_TOKEN}")
    write_bench(tmp_path, {"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values": {"a": [1]},
                                                   "reference": ["1"]})})
    done = call_benchrun("--cfg", "job", "--resolve", "task.path=bench", f"task.system='{value}'", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': task.system: secrets are never taken from the config, where they would be "
        "archived (an environment variable read by a name, or text resolved, that another interpolation makes "
        "(${oc.env:${...}}, ${oc.decode:${...}}), which no check sees before Hydra resolves it); put an API key in an "
        "environment variable and name it with runner.api_key_env, and give URLs without user names or passwords\n"))


def test_an_environment_variable_read_by_its_name_is_still_taken(tmp_path, monkeypatch):
    monkeypatch.setenv("GREETING", "Be brief.")
    write_bench(tmp_path, {"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values": {"a": [1]},
                                                   "reference": ["1"]})})
    done = call_benchrun("--cfg", "job", "--resolve", "task.path=bench", "task.system=${oc.env:GREETING}", cwd=tmp_path)
    assert (done.returncode, "system: Be brief." in done.stdout) == (EXIT["ok"], True)


def test_ctrl_c_while_an_audit_command_loads_is_one_line(tmp_path, monkeypatch):
    import importlib

    loading = importlib.import_module

    def interrupted(name: str, *args: object):
        if name == "benchrun.audit.rescore":
            raise KeyboardInterrupt("SIGINT")
        return loading(name, *args)

    monkeypatch.setattr("benchrun.audit.__main__.importlib.import_module", interrupted)
    done = call_benchrun("rescore", str(tmp_path), cwd=tmp_path, module="benchrun.audit")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["interrupted"], "", (
        "benchrun: error: interrupted by SIGINT\n"))


INTERRUPTING_SCORER = """import os
import signal
import time


def times7(response, values):
    reaper = open(f'/proc/{os.getppid()}/stat').read().rsplit(')', 1)[1].split()
    os.kill(int(reaper[1]), signal.SIGINT)  # the rescore: the scorers' process's parent is the reaper it started
    time.sleep(1)
    return 1
"""


def test_ctrl_c_while_rescore_grades_is_one_line_and_leaves_no_rescore(tmp_path):
    (tmp_path / "interrupting.py").write_text(INTERRUPTING_SCORER)
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
        # a process: the scorer sends SIGINT to the rescore's own process
        done = lab.audit("rescore", str(run_dir), "--scorers", str(tmp_path / "interrupting.py"), "--only")
        assert (done.returncode, done.stderr) == (EXIT["interrupted"], "benchrun: error: interrupted by SIGINT\n")
        rescores = run_dir / "rescores"
        assert (list(rescores.iterdir()) if rescores.exists() else [], lab.verified(run_dir)) == ([], True)
