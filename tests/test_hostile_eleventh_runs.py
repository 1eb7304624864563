"""Hostile input, eleventh pass, the process side (issue 19's fresh pass of the same kinds): real `python -m benchrun`
processes under abuse, the cases it found bad, each with the rule it now obeys.

- a sweep whose values are many (`-m runner.options.seed=range(0,100000)`, a typo for `range(0,10)`): the check that
  no value is listed twice compared each value with every one before it, so the sweep hung for hours before anything
  was said (a SIGTERM then printed `benchrun: error: ConfigCompositionException`); with the check made linear, it
  would have run 100,000 jobs one after another (about three seconds each), a run directory each, and a `range` of
  10**12 or `range(0,inf)` was listed by Hydra without end. Now the jobs are counted before Hydra lists them, a
  range's without listing it, and a sweep of more than 10,000 jobs is refused in one line naming each swept key's
  count (`callbacks._check_sweep_size`), a dry run's too
- a sweep of no jobs (`-m runner.options.seed=range(5,0)`, or a step of 0): exit 0, a sweep directory made holding an
  empty sweep.json, nothing said; now refused naming the override that lists no value
- an id column (`values.csv`'s, a JSONL file's, `values: {id: [...]}`) giving a sample an id that holds a line break
  or an escape (`show --samples` printed the sample's heading in two lines), of 100,000 characters (kept in every
  record, printed whole in every table), or empty (`add:`): taken as given. Now refused where the id is made
  (`compiler.grid`), naming the file, the task, the column and the sample: an id is 1 to 200 characters, none of them
  a control character (`/`, `..` and other characters stay: an id is never a path)
- a task name of 10,000 characters in tasks.yml: the error line, cut to its 2,000 characters, lost its middle, so it
  said `in 'tasks.yml': task [...] is too long`, naming neither the key nor what was too long (jsonschema's message
  quotes the value whole, after the task's name, also whole). Now a task's name shown in an error is its head and its
  length (`core.errors`), and a value a schema's message quotes likewise (`compiler.schemas`):
  `task 'aaa...' (10,000 characters): tasks[0].name: 'aaa... (10,000 characters) is too long`
- a YAML tag for what JSON has no value of, in a runner file: `base_url: !!binary aHR0c...` (base64 of
  `http://user:hunter2@host/v1`) was made bytes, passed the check for a credential in a URL (which reads text), and
  became the URL, password and all, once pydantic made text of it (`model: !!binary ...` named the model `hello`); an
  unquoted date (`model: 2001-12-14`) was `"2001-12-14" is not valid here`. In tasks.yml the schema refused such values
  as not text, naming no line. Now the YAML reader (`core.yamlfile`) refuses `!!binary`, `!!set`, `!!omap`, `!!pairs`
  and a date where it reads them, naming the line and column, as `yes` and `010` are
- a second Ctrl-C (or a SIGTERM) while the first is being recorded (run.json written as `interrupted`, 20 to 30 ms
  after the first): raised as a new KeyboardInterrupt at the end of the held write, it took the place of the run's
  RunInterrupted, so the console said `interrupted before the run started: nothing was asked or recorded` of a run
  recorded `interrupted` with its answers (and a second signal at exit killed the process by SIGINT). Now the first
  signal is the one the process ends for (`core.interrupts`): one after it is not raised again, and the line says
  what the run directory records
- a SIGTERM (or Ctrl-C) as a run that completed is sealed: the run was recorded `completed` and sealed, then the
  line said `interrupted by SIGTERM: run ... is recorded as 'completed' ...; finish it with: benchrun-audit resume
  DIR`, which says there is nothing to resume. Now the line says the run is sealed and nothing is left to finish
  (`execute.session.resume_hint`), exit 130 for the signal
- an override whose key holds a character Hydra's grammar takes only in quotes (`runner.mödel=x`, `+ключ=1`): told
  to quote the value (`quote it: runner.mödel='x'`), which, done, gave the same line again, `''x''` suggested next.
  Now the line says the character is in the key, which no key of the config holds (`cli._unquoted_character`)

What held: task names with `/`, `..`, a NUL, a line break, only dots, `-`: one line naming tasks[0].name. A values
grid of 10**12 samples (12 values of 10, `combinations`): refused by task.max_samples before anything is expanded
(1.5 s, 59 MB). An alias bomb in a runner file: refused at its first alias; `!!python/object/apply:os.system` in
tasks.yml or a runner file: an unknown tag, never constructed. A named pipe as a values file, an examples file,
tasks.yml or custom_scorer.py, a directory as a values file, an examples file linked to /dev/zero: one line each, no
read. A YAML `"\0"` or a JSON `\u0000` in a value or a reference: taken as written, sent as `\u0000`, shown as `\x00`
by `show`. A CSV cell of the bytes ED A0 80, a JSONL file with a byte-order mark on line 2: one line naming the file
(and the line); a CSV with mixed line ends (CRLF, LF, a lone CR) and a JSONL file whose last line has no line end:
read as written. Ids given twice: refused (as before). `python -m benchrun | head -1`: the run completed, exit 0,
intact (a reader that stops early fails nothing, by design). `hydra.output_subdir=null`: a run without `.hydra/`
that verifies and that resume finds complete. `hydra.verbose=true` with $OPENAI_API_KEY set: the key printed nowhere.
`hydra.run.dir` onto a run through a symbolic link, or inside one through a linked parent: refused. `+new.foo=1`:
an unknown key, the allowed ones listed. Two SIGINTs 0 to 10 ms apart, both while samples are asked: one line, the run
`interrupted`, intact.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.interrupts import SIGNALS, Interrupts
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab
from tests.helpers.benchfiles import tasks_yml, write_bench
from tests.helpers.commands import call_benchrun

pytestmark = pytest.mark.slow

TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"]}


@pytest.mark.parametrize("swept, said", [
    (("runner.options.seed=range(0,100000)", "runner.model=a,b"),
     "the sweep makes 200,000 jobs (runner.options.seed: 100,000, runner.model: 2)"),
    (("runner.options.seed=range(0,1000000000000)",),
     "the sweep makes 1,000,000,000,000 jobs (runner.options.seed: 1,000,000,000,000)"),
    (("runner.options.seed=range(0.0,1e300,0.5)",), "the sweep makes about 2e300 jobs (runner.options.seed: about 2e300)"),
    (("runner.options.seed=range(0,inf)",),
     "the sweep makes endlessly many jobs (runner.options.seed: endlessly many)"),
    (("runner.model=" + ",".join(f"m{i}" for i in range(101)), "runner.options.seed=" + ",".join(map(str, range(100)))),
     "the sweep makes 10,100 jobs (runner.model: 101, runner.options.seed: 100)"),
])
@pytest.mark.parametrize("dry", [(), ("dry_run=true",)])
def test_a_sweep_of_more_jobs_than_a_sweep_runs_is_refused_before_they_are_listed(tmp_path, swept, said, dry):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("-m", "task.path=bench", *swept, *dry, f"outputs={tmp_path / 'out'}", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': {said}, more than a sweep runs (10,000, one after another, a run directory "
        "each); sweep fewer values, or split the sweep\n"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("swept", ["runner.options.seed=range(5,0)", "runner.options.seed=range(0,1,0)"])
@pytest.mark.parametrize("dry", [(), ("dry_run=true",)])
def test_a_sweep_of_no_jobs_is_refused_before_it_is_made(tmp_path, swept, dry):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("-m", "task.path=bench", swept, "runner.model=a,b", *dry, f"outputs={tmp_path / 'out'}",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': the sweep makes no jobs: {swept} lists no value; give it one or more\n"))
    assert not (tmp_path / "out").exists()


def test_a_sweep_of_as_many_jobs_as_a_sweep_runs_is_checked_for_twice_listed_values_at_once(tmp_path):
    models = [f"m{i}" for i in range(9_999)] + ["m5"]
    done = call_benchrun("-m", "runner.model=" + ",".join(models), f"outputs={tmp_path / 'out'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'config': runner.model: the sweep lists 'm5' twice, so two of its jobs would have one "
        "label; list each value once (repeats=k asks every sample k times in one run)\n"))


def test_a_float_range_sweep_is_counted_as_hydra_lists_it(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    done = call_benchrun("-m", "task.path=bench", "runner.options.temperature=range(0,1.0,0.3)", "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout.count("1 task, 2 samples -> 2 model calls")) == (EXIT["ok"], 4)


CSV = "tasks/add/values.csv"


@pytest.mark.parametrize("given, why", [
    ('"x\ny"', "holds '\\n' at character 2, a control character, which an id cannot hold; write the id without it (an "
               "id is printed on one line)"),
    ("L" * 100_000, "has 100,000 characters, more than a sample's id has (200); give a shorter one"),
    ("", "is empty; give every sample an id, or leave the id column out"),
])
def test_an_id_column_giving_an_id_unfit_to_name_a_sample_is_refused_naming_it(tmp_path, given, why):
    write_bench(tmp_path, {"tasks/add/template.txt": "say {a}\n",
                           "tasks/add/values.csv": f"id,a,reference\nq1,0,0\n{given},1,1\n"})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{CSV}': task 'add': column 'id': the id of sample 2 {why}\n"))


def test_an_id_of_c1s_csi_is_refused_as_any_text_of_a_file_holding_it(tmp_path):
    """C1's CSI (a terminal's ESC [) in a file is refused wherever it stands, as C0's ESC is (filebytes.UNASKED)."""
    write_bench(tmp_path, {"tasks/add/template.txt": "say {a}\n",
                           "tasks/add/values.csv": "id,a,reference\nq1,0,0\n\x9b31mred,1,1\n"})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{CSV}': task 'add': line 3, column 1: '\\x9b', a control character, which no text "
        "asks: Windows-1252 text read as Latin-1 holds it for '\u203a'; write '\u203a' (or save the file again from "
        "its original, as UTF-8)\n"))


def test_an_id_given_in_tasks_yml_is_held_to_the_same_rule(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, "values": {"id": ["q1", "a\tb"], "a": [1, 2]}})})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'tasks.yml': task 't': tasks[0].values.id: the id of sample 2 holds '\\t' at character 2, "
        "a control character, which an id cannot hold; write the id without it (an id is printed on one line)\n"))


@pytest.mark.parametrize("given", ["../../etc", "a/b", "L" * 200, "q\u00e9"])
def test_an_id_of_any_printable_characters_up_to_200_is_taken(tmp_path, given):
    write_bench(tmp_path, {"tasks/add/template.txt": "say {a}\n",
                           "tasks/add/values.csv": f"id,a,reference\nq1,0,0\n{given},1,1\n"})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, "1 task, 2 samples" in done.stdout) == (EXIT["ok"], True)


@pytest.mark.parametrize("name, said", [
    ("a" * 10_000, "a text of 10,000 characters, where one of at most 100 characters is taken"),
    ("a/" * 100, "'a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/... (200 characters) does not match "
                 "'^[A-Za-z0-9_][A-Za-z0-9_.-]*$'"),
])
def test_a_task_name_of_thousands_of_characters_is_an_error_naming_its_key(tmp_path, name, said):
    write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, "name": name})})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'tasks.yml': task '{name[:60]}...' ({len(name):,} characters): tasks[0].name: {said}\n"))


PASSWORD_URL = "aHR0cDovL3VzZXI6aHVudGVyMkAxMjcuMC4wLjE6OS92MQ=="
"""base64 of http://user:hunter2@127.0.0.1:9/v1, a URL with a password, which a runner file may not give."""


@pytest.mark.parametrize("lines, said", [
    (f"model: m\nbase_url: !!binary {PASSWORD_URL}", "line 3, column 11: a value tagged !!binary is read by YAML as bytes, "
                                          "which a benchmark's or a runner's value cannot be: write it as text, a "
                                          "number, a list or a mapping"),
    ("base_url: http://127.0.0.1:9/v1\nmodel: 2001-12-14", "line 3, column 8: 2001-12-14 is read by YAML as a date, not as written; quote it "
                          "('2001-12-14') to keep it as text"),
])
def test_a_runner_file_value_json_cannot_hold_is_refused_naming_its_line(tmp_path, lines, said):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK)})
    (tmp_path / "r.yml").write_text(f"runner_type: openai\n{lines}\n")
    done = call_benchrun("task.path=bench", "runner=openai", "runner_file=r.yml", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'r.yml': {said}\n")


@pytest.mark.parametrize("values, said", [
    ("!!set {1, 2}", "line 5, column 8: a value tagged !!set is read by YAML as a set, which a benchmark's or a "
                     "runner's value cannot be: write it as text, a number, a list or a mapping"),
    ("[2024-01-01]", "line 5, column 9: 2024-01-01 is read by YAML as a date, not as written; quote it ('2024-01-01') "
                     "to keep it as text"),
])
def test_a_tasks_yml_value_json_cannot_hold_is_refused_naming_its_line(tmp_path, values, said):
    write_bench(tmp_path, {"tasks.yml": f"- name: t\n  template: 'say {{a}}'\n  reference: ['1']\n  values:\n    a: {values}\n"})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'tasks.yml': {said}\n")


@pytest.fixture
def interrupts():
    """A fresh `Interrupts` handling this process's signals, the handlers before it put back after the test."""
    before = {sig: signal.getsignal(sig) for sig in SIGNALS}
    handling = Interrupts()
    handling.install()
    yield handling
    for sig, handler in before.items():
        signal.signal(sig, handler)


def test_a_second_signal_while_the_first_is_handled_is_not_raised_again(interrupts):
    with pytest.raises(KeyboardInterrupt, match="^SIGINT$"):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            signal.raise_signal(signal.SIGTERM)  # the user's second Ctrl-C, or a supervisor's SIGTERM, meanwhile
            raise
    assert interrupts.signal_name() == "SIGINT"


def test_a_second_signal_while_the_run_is_recorded_as_interrupted_is_not_raised(interrupts):
    with pytest.raises(KeyboardInterrupt, match="^SIGINT$"):
        with interrupts.held():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGTERM)
    with interrupts.held():  # run.json written as `interrupted`, the seal after it
        signal.raise_signal(signal.SIGINT)
    assert interrupts.signal_name() == "SIGINT"


def signalled_as_finished(status: str, signum: signal.Signals) -> str:
    """`python -c` code running benchrun, which sends itself `signum` as its run is finished as `status` (a second
    Ctrl-C while the first is recorded, a SIGTERM as a completed run is sealed)."""
    return f"""
import runpy, signal, sys
from benchrun.archive.writer import RunWriter
finish = RunWriter.finish
def finish_signalled(self, status, reason=None):
    if status == {status!r}:
        signal.raise_signal(signal.{signum.name})
    return finish(self, status, reason)
RunWriter.finish = finish_signalled
sys.argv[0] = "benchrun"
runpy.run_module("benchrun", run_name="__main__")
"""


def test_a_second_ctrl_c_while_the_first_is_recorded_leaves_the_first_ones_line_and_record(tmp_path):
    with Lab(tmp_path, n=4, latency_s=0) as lab:
        with lab.holding_answers(after=2) as hold:
            proc = subprocess.Popen([sys.executable, "-c", signalled_as_finished("interrupted", signal.SIGINT),
                                     *lab.args()], cwd=lab.root,
                                    env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            run_dir = lab.first_run_dir()
            lab.wait_for(lambda: hold.holding and lab.lines(run_dir) == 2)
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        run = json.loads((run_dir / "run.json").read_text())
        head = f"benchrun: error: interrupted by SIGINT: run {run['run_id'][:12]} is recorded as 'interrupted' with 2 of 4"
        assert (proc.returncode, err.count("\n"), err.startswith(head)) == (EXIT["interrupted"], 1, True)
        assert err.endswith(f" in {run_dir}; finish it with: benchrun-audit resume {run_dir}\n")
        assert (run["status"], run["reason"]) == ("interrupted", "interrupted by SIGINT") and lab.verified(run_dir)


@pytest.mark.parametrize("override, at", [("runner.mödel='x'", 9), ("+ключ=1", 2), ("ö", 1)])
def test_an_override_whose_key_holds_what_hydra_reads_only_in_quotes_is_not_told_to_quote_its_value(tmp_path, override,
                                                                                                     at):
    done = call_benchrun(override, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: the override {override!r}: Hydra's override grammar takes {override[at - 1]!r} "
        f"({ascii(override[at - 1])[1:-1]}) (character {at}) in no key, and no key of the config holds it: keys are written in ASCII (runner.model, task.path)\n"))


def test_a_sigterm_while_a_completed_run_is_sealed_says_nothing_is_left_to_finish(tmp_path):
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        done = subprocess.run([sys.executable, "-c", signalled_as_finished("completed", signal.SIGTERM), *lab.args()],
                              cwd=lab.root, env=child_env(), capture_output=True, text=True, timeout=120)
        [run_dir] = lab.run_dirs()
        run = json.loads((run_dir / "run.json").read_text())
        assert (done.returncode, done.stderr) == (EXIT["interrupted"], (
            f"benchrun: error: interrupted by SIGTERM: run {run['run_id'][:12]} is recorded as 'completed' with 2 of 2 "
            f"samples in {run_dir}, and sealed: nothing is left to finish\n"))
        assert run["status"] == "completed" and lab.verified(run_dir)
