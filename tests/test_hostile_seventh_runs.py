"""Hostile input, seventh pass, the process side (issue 19's fresh pass of the same kinds): real `python -m benchrun`
processes under abuse, the cases it found bad, each with the rule it now obeys.

- standard output (or standard error) that goes away (`| head -1`, `2>&1 | head -1`) or cannot be written
  (`> /dev/full`): a sweep piped into `head` ran its first job only and exited 0 with no sweep.json (with joblib, a
  job left `running` and tracebacks of Hydra's logging); into /dev/full the run said `Error executing job with
  overrides: [...]` and `disk full`, naming nothing. Now both are displays (benchrun.core.stdfds.Display): a write
  that fails never stops the work, what is printed after it goes to /dev/null, and a failure of standard output
  other than a reader that stopped is one line naming it (exit 4) once everything is recorded
- SIGHUP (a terminal or an ssh session that closes) killed a run as SIGKILL would, `running` with nothing said (and
  the scorer process, in the same process group, is sent it too). Now a hang-up is an interrupt like SIGTERM
  (children ignore it as they ignore Ctrl-C), unless the run was started ignoring it (`nohup`), which then goes on
- an override holding a character Hydra's grammar takes only in quotes (`outputs=/data/ö`, `runner.model=a,gémma`)
  was `LexerNoViableAltException: outputs=/data/ö`; now one line naming the character and the override as quoted
- an output encoding that cannot hold every character (PYTHONIOENCODING=ascii): a dry run of a prompt holding `é`
  was a UnicodeEncodeError's traceback; now what the encoding cannot hold is printed as its escape (`\\xe9`)
- a working directory deleted under the shell: `no such file or directory`, naming nothing (Hydra records the working
  directory); now one line naming it, before anything is made
- a file-size limit (`ulimit -f 1`) or a full disk met while Hydra writes its copies of the config: `file too large`,
  naming nothing; now one line naming the directory Hydra was writing (taken back as before)
- a sweep stopped by SIGTERM or Ctrl-C: no sweep.json; the basic launcher's line named the job it stopped but not the
  jobs never started; with joblib (or a Slurm sweep waiting on its jobs) it said `interrupted before the run started:
  nothing was asked or recorded` while its jobs had answers, and left them `running`. Now every job that began is
  recorded (a dead one as `interrupted`), sweep.json written, and the line says so
- a file system made read-only under a run: `Error executing job with overrides: [...]` and a bare OSError's line
  (the writer's reserve could not be given back); now one line naming the file, and `resume` finishes the run
- `hydra.sweep.dir=` naming a run's directory: the sweep was made inside it (its multirun.yaml, sweep.json and jobs
  among the run's files); naming a file: `file exists`. Now both are refused as a run's directory is
- `-m` after an override (`python -m benchrun outputs=x -m runner.model=a,b`): Hydra's usage message of nine lines,
  `__main__.py: error: unrecognized arguments`; now `-m` is taken wherever it stands
"""

from __future__ import annotations

import json
import re
import resource
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from typing import IO

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab, Outcome
from benchrun.testing.small_disk import can_mount, read_only
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.killed import from_the_terminal

pytestmark = pytest.mark.slow

SWEEP = ("-m", "runner.options.temperature=0,0.5")
JOBS = [("0_temperature-0", "completed"), ("1_temperature-0.5", "completed")]


def first_line_only(lab: Lab, *args: str) -> tuple[int, str]:
    """`python -m benchrun args | head -1`: the exit code and stderr of a process whose reader left after a line."""
    with subprocess.Popen([sys.executable, "-m", "benchrun", *args], cwd=lab.root, env=child_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
    return proc.wait(timeout=120), err


def statuses(lab: Lab) -> list[tuple[str, str]]:
    [sweep] = lab.root.glob("outputs/*/*_sweep/sweep.json")
    return [(job["dir"], job["status"]) for job in json.loads(sweep.read_text())["jobs"]]


@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_a_sweep_whose_reader_stops_early_runs_every_job(tmp_path, launcher):
    if launcher == "joblib":
        pytest.importorskip("hydra_plugins.hydra_joblib_launcher", reason="the sweeps extra is not installed")
    with Lab(tmp_path, n=3, latency_s=0) as lab:
        code, err = first_line_only(lab, *SWEEP, *lab.args(f"hydra/launcher={launcher}"))
        assert (code, err.count("\n"), "Traceback" in err) == (EXIT["ok"], 0, False), err
        assert statuses(lab) == JOBS


@pytest.mark.parametrize("sweep", [False, True])
def test_output_to_a_full_disk_is_one_line_naming_it_after_the_work_is_done(tmp_path, sweep):
    with Lab(tmp_path, n=3, latency_s=0) as lab, open("/dev/full", "w") as full:
        args = [*(SWEEP if sweep else ()), *lab.args()]
        done = subprocess.run([sys.executable, "-m", "benchrun", *args], cwd=lab.root, env=child_env(),
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (EXIT["archive"], (
            "benchrun: error: disk full writing standard output: what was printed was cut short, not what was "
            "recorded\n"))
        assert statuses(lab) == JOBS if sweep else [
            json.loads((run / "run.json").read_text())["status"] for run in lab.run_dirs()] == ["completed"]


def test_a_hang_up_is_an_interrupt_and_the_run_is_finished_by_resume(tmp_path):
    with Lab(tmp_path, n=4, latency_s=0) as lab:
        done = from_the_terminal(lab, signal.SIGHUP, *lab.args())
        [run_dir] = lab.run_dirs()
        assert (done.returncode, done.stderr.count("\n")) == (EXIT["interrupted"], 1)
        assert done.stderr.startswith(f"benchrun: error: interrupted by SIGHUP: run {run_id(run_dir)} is recorded as "
                                      "'interrupted' with 2 of 4 samples")
        assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
        assert lab.call("resume", str(run_dir), module="benchrun.audit").returncode == EXIT["ok"]
        assert lab.judge(Outcome("hang-up"), run_dir).lost == 0 and lab.verified(run_dir)
        assert [json.loads(line)["error"] for line in (run_dir / "scores.jsonl").read_text().splitlines()] == [None] * 8


def test_a_run_started_with_nohup_goes_on_through_a_hang_up(tmp_path):
    with Lab(tmp_path, n=4, latency_s=0) as lab:
        done = from_the_terminal(lab, signal.SIGHUP, *lab.args(), ignored=True)
        [run_dir] = lab.run_dirs()
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


def run_id(run_dir) -> str:
    return json.loads((run_dir / "run.json").read_text())["run_id"][:12]


@pytest.mark.parametrize("override, fix", [
    ("outputs=/data/ö", "outputs='/data/ö'"),
    ("task.system=héllo", "task.system='héllo'"),
    ("runner.model=llama3.2,gémma😀,x", "runner.model=llama3.2,'gémma😀',x"),
    ("task.only=[a,é]", "task.only=[a,'é']"),
])
def test_an_override_holding_what_hydra_reads_only_in_quotes_says_how_to_quote_it(tmp_path, override, fix):
    done = call_benchrun(*(["-m"] if "," in override else []), override, "dry_run=true", cwd=tmp_path)
    at, char = next((i, c) for i, c in enumerate(override) if not c.isascii())
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: the override '{override}': Hydra's override grammar takes '{char}' ({ascii(char)[1:-1]}) "
        f"(character {at + 1}) only inside quotes; quote it: {fix}\n"))
    assert "override grammar" not in call_benchrun(*(["-m"] if "," in override else []), fix, "dry_run=true",
                                                   cwd=tmp_path).stderr


def unicode_task(template: str) -> str:
    """A task of one sample whose prompt and reference hold an é."""
    return f"- name: t\n  template: '{template}'\n  values: {{a: ['é']}}\n  reference: ['é']\n  scorer: contains\n"


def test_an_ascii_only_output_encoding_prints_escapes_not_a_traceback(tmp_path):
    write_bench(tmp_path, {"tasks.yml": unicode_task("say {a} ☃")}, name="ub")
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        ascii_only = {"PYTHONIOENCODING": "ascii"}
        dry = subprocess.run([sys.executable, "-m", "benchrun", "task.path=ub", "dry_run=true"], cwd=tmp_path,
                             env=child_env(ascii_only), capture_output=True, text=True, timeout=60)
        ran = subprocess.run([sys.executable, "-m", "benchrun", *lab.args("task.path=ub", "runner.model='gémma'")],
                             cwd=tmp_path, env=child_env(ascii_only), capture_output=True, text=True, timeout=60)
    assert (dry.returncode, dry.stderr, "say \\xe9 \\u2603" in dry.stdout) == (EXIT["ok"], "", True)
    assert (ran.returncode, ran.stderr.splitlines()[0]) == (
        EXIT["usage"], "benchrun: error: in 'config': runner.model: 'g\\xe9mma' (g\\xe9mma) holds a character beyond "
        "ASCII, which no name of an Ollama model holds (Ollama takes ASCII letters, digits, '_', '-', '.', ':' and '/' "
        "only): write the model's name as `ollama list` shows it")


def test_a_working_directory_deleted_under_the_shell_is_one_line_naming_it(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run([sys.executable, "-m", "benchrun", f"outputs={tmp_path / 'outputs'}"], cwd=gone,
                          env=child_env({"PWD": str(gone)}), capture_output=True, text=True, timeout=60,
                          preexec_fn=gone.rmdir)
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        f"benchrun: error: the working directory {gone}: no such file or directory (deleted since the shell entered "
        "it?); cd to a directory that exists\n"))
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("sweep", [False, True])
def test_a_file_size_limit_hydra_meets_writing_its_copies_is_one_line_naming_where(tmp_path, sweep):
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        done = subprocess.run([sys.executable, "-m", "benchrun", *(SWEEP if sweep else ()), *lab.args()],
                              cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=60,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024)))
    assert (done.returncode, done.stderr.count("\n")) == (EXIT["archive"], 1), done.stderr
    assert re.fullmatch(rf"benchrun: error: file too large for this process's file-size limit \(ulimit -f: 1024 "
                        rf"bytes\) writing Hydra's files in {tmp_path}/outputs/[-0-9]+/"
                        rf"[-.0-9]+_bench_{'sweep' if sweep else 'llama3.2'} \(its copies of the config\); nothing "
                        r"was recorded\n", done.stderr)
    assert not any((tmp_path / "outputs").rglob("*"))


@pytest.mark.parametrize("launcher", ["basic", "joblib"])
def test_a_sweep_stopped_by_a_signal_records_every_job_that_began_and_says_so(tmp_path, launcher):
    if launcher == "joblib":
        pytest.importorskip("hydra_plugins.hydra_joblib_launcher", reason="the sweeps extra is not installed")
    with Lab(tmp_path, n=4, latency_s=0) as lab, lab.holding_answers(after=2) as hold:
        proc = lab.start(*SWEEP, *lab.args(f"hydra/launcher={launcher}"))
        lab.wait_for(lambda: hold.holding and sum(lab.lines(job.parent) for job in
                                                  (tmp_path / "outputs").glob("*/*/*/run.json")) == 2)
        time.sleep(0.5)
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    [sweep_dir] = (tmp_path / "outputs").glob("*/*_sweep")
    jobs = [job["status"] for job in json.loads((sweep_dir / "sweep.json").read_text())["jobs"]]
    started = len(jobs)
    assert (proc.returncode, err.count("\n")) == (EXIT["interrupted"], 1), err
    assert err.endswith(f"the sweep in {sweep_dir} is recorded in its sweep.json, {started} job{'s' * (started != 1)} "
                        f"started ({started} interrupted); a job it does not list never started; finish each "
                        "interrupted one with: benchrun-audit resume RUN\n")
    assert jobs == ["interrupted"] * (2 if launcher == "joblib" else 1)


@pytest.mark.skipif(not can_mount(), reason="needs root to mount")
def test_a_file_system_made_read_only_under_a_run_is_one_line_and_resume_finishes_it(tmp_path):
    with Lab(tmp_path, n=4, latency_s=0) as lab:
        outputs = tmp_path / "outputs"
        with ExitStack() as stack:
            with lab.held_after(2, *lab.args()) as (proc, run_dir):
                stack.enter_context(read_only(outputs))  # still read-only once the answers held come
            _, err = proc.communicate(timeout=60)
        assert (proc.returncode, err) == (EXIT["archive"],
                                          f"benchrun: error: read-only file system writing {run_dir}/.reserve\n")
        assert lab.call("resume", str(run_dir), module="benchrun.audit").returncode == EXIT["ok"]
        assert lab.judge(Outcome("read-only"), run_dir).lost == 0 and lab.verified(run_dir)


def test_a_sweep_is_never_made_in_a_runs_directory_or_a_file(tmp_path):
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
        before = sorted(p.name for p in run_dir.iterdir())
        into_run = lab.call(*SWEEP, *lab.args(f"hydra.sweep.dir={run_dir}"))
        into_file = lab.call(*SWEEP, *lab.args(f"hydra.sweep.dir={run_dir / 'run.json'}"))
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"][:12]
    assert (into_run.returncode, into_run.stderr) == (EXIT["usage"], (
        f"benchrun: error: {run_dir} already holds run {run_id} (completed); nothing was changed; pick a new "
        "directory (hydra.sweep.dir=...)\n"))
    assert (into_file.returncode, into_file.stderr) == (EXIT["usage"], (
        f"benchrun: error: {run_dir / 'run.json'} is not a directory; nothing was changed; pick a new directory "
        "(hydra.sweep.dir=...)\n"))
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_multirun_given_after_the_overrides_is_taken_as_hydra_takes_it_first(tmp_path):
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        done = lab.call(*lab.args(), *SWEEP)
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        assert statuses(lab) == JOBS


def test_a_sweep_whose_errors_go_to_a_reader_that_stopped_runs_every_job(tmp_path):
    """`python -m benchrun -m ... 2>&1 | head -1`, the second job refused: its error line met the closed pipe."""
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        with subprocess.Popen([sys.executable, "-m", "benchrun", "-m", "runner.options.temperature=0,nan",
                               *lab.args()], cwd=lab.root, env=child_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) as proc:
            proc.stdout.readline()
            proc.stdout.close()
        assert proc.wait(timeout=120) == EXIT["sweep_failed"]
        assert statuses(lab) == [("0_temperature-0", "completed"), ("1_temperature-NaN", "failed")]


def test_the_audit_commands_under_an_ascii_only_encoding_and_a_full_disk(tmp_path):
    write_bench(tmp_path, {"tasks.yml": unicode_task("say {a}")}, name="ub")
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        assert lab.call(*lab.args("task.path=ub")).returncode == EXIT["ok"]
        [run] = lab.run_dirs()

        def audit(*args: str, stdout: int | IO[str] = subprocess.PIPE) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "benchrun.audit", *args], cwd=tmp_path, timeout=60,
                                  env=child_env({"PYTHONIOENCODING": "ascii"}), stdout=stdout, stderr=subprocess.PIPE)

        shown = audit("show", str(run), "--samples")
        exported = audit("export", str(run), "--text")
        with open("/dev/full", "w") as full:
            listed = audit("list", str(run.parent.parent), stdout=full)
    assert (shown.returncode, shown.stderr, b"say \\xe9" in shown.stdout) == (EXIT["ok"], b"", True)
    assert (exported.returncode, exported.stderr, "say é" in exported.stdout.decode("utf-8")) == (EXIT["ok"], b"", True)
    assert (listed.returncode, listed.stderr) == (
        EXIT["archive"], b"benchrun: error: disk full writing standard output: what was printed was cut short, not what was recorded\n")


@pytest.mark.parametrize("subdir", ["../../escape${hydra.job.num}", "..", "a/b${hydra.job.num}"])
def test_a_job_directory_outside_the_sweep_directory_is_refused(tmp_path, subdir):
    refused = call_benchrun("-m", "runner.model=a,b", f"hydra.sweep.subdir={subdir}", f"outputs={tmp_path / 'out'}",
                            cwd=tmp_path)
    assert (refused.returncode, refused.stderr) == (EXIT["usage"], (
        f"benchrun: error: hydra.sweep.subdir={subdir}: a job's directory is one name directly in the sweep directory "
        "(no '/', not '.' or '..'), where the sweep's jobs are found; leave hydra.sweep.subdir out\n"))
    assert sorted(p.name for p in tmp_path.iterdir()) == []
