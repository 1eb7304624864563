r"""Hostile input, seventeenth pass, the review side: the code the sixteenth pass added, attacked; the cases found
bad, each with the rule it now obeys.

- `exact_match` on an answer that is a JSON number with a fraction or an exponent (`2.00000000000000001`,
  `1e-400`, `18446744073709551616.0`): the sixteenth pass compared numbers by their exact value, but the answer's JSON
  was read with floats first, so `2.00000000000000001` matched 2, `1e-999999999` matched 0, and the right answer
  `18446744073709551616.0` did not match 2**64. Now the answer's JSON numbers are read as written
  (`compiler.scoring.exact_match`, through `core.text.json_value(parse_float=)`)
- a custom scorer that starts a process which leaves one behind (a daemon's double fork, `sh -c 'cmd &'`, an
  answer's code that forks and returns, in a session of its own or not): the one left was given to init, out of the
  scorer process's tree and group, and ran for good after the run (exit 0), and after a run killed by SIGKILL. Now
  the process the run starts stays above the scorers' as the reaper of all below it (Linux's child subreaper), so
  what is left is given to it and ended with the rest (`execute.proctree.reap_below`, from
  `scorer_worker.main`; it replaces the sixteenth pass's keeper, and needs no pidfd)
- a benchmark's own module (`helpers.py`, imported by custom_scorer.py) edited within the second Python cached its
  bytecode, or put back with its old time (`cp -p`, `rsync -a`, `tar x`), at the same size: Python's import took the
  stale `__pycache__/helpers.cpython-311.pyc` (it checks the source's size and time in whole seconds), so the run was
  scored by the old code while its manifest named the new file's digest, and verify said intact. Now the benchmark's
  own modules are made of their source as read and hashed, once, never of bytecode
  (`compiler.ownsource.from_source`, from `compiler.usercode.import_file`)
- a sweep launched with `BENCHRUN_LAUNCHER_PID` in its environment (set by hand, or inherited from a joblib sweep's
  job): its first job's end took the process for a joblib worker whose launcher had gone, and ended it (exit 0): the
  other jobs never ran and no sweep.json was written. Now only a joblib launch names itself there; any other launch
  clears what it found (`callbacks.LauncherGone.on_multirun_start`, `on_run_start`)
- an unreadable override whose value holds `${` that starts no interpolation (`runner.model=${x`, `é${x`): the
  quoted form advised (`runner.model='${x'`) is read by Hydra's grammar but refused by OmegaConf, which reads `${` in
  quotes too as an interpolation's start (`Error merging override runner.model='${x'`): advice that does not work.
  Now a form is advised only when OmegaConf takes its value as well, the `${` escaped (`'\${x'`) when it must be
  (`cli._quote_advice`, `_readable`, `_in_quotes(escaped=)`); and that quoted form given by hand is said with
  OmegaConf's reason (`cli._why`), where `Error merging override runner.model='${x'` said nothing more
- a data file written as the run starts (a generator still appending to values.jsonl, a file replaced): the
  samples were made of the bytes read first, but the manifest named the file as read a second time, to be hashed,
  so it named rows never asked (and verify, the file finished, said the sources unchanged). Now the manifest names
  each file the tasks were read from by the bytes they were made of (`core.filebytes.digests_read`, from
  `compiler.plan.compiled`)
- a benchmark's own module imported inside a scorer function (`def s(...): from helpers import same`), by no file as
  it is imported: its code scored every sample (the scorer process imported it at the first call), but the manifest,
  which names a benchmark's own modules as its files import them, did not name helpers.py, nor did the scorer
  process check it: an edit changed the scores under the same manifest, verify intact. Now refused before anything
  is asked, naming the file, the module and the line (`compiler.ownsource.refuse_unrecorded`, from
  `compiler.usercode.import_file`)
- ending a scorer process's tree (`proctree.end_tree`, as a call overruns and as the run ends) signalled each pid
  /proc had listed below it a moment before: a pid freed and taken by another process meanwhile (a fork storm wraps
  the pids within moments) had that process stopped and killed. Now each is held by a pidfd once its parent is seen
  to be in the tree still, and signalled through it (`proctree._held`, `_send`)
- `rescore` of a benchmark whose scorers import its own module (helpers.py) edited (or removed) while the rescore
  scored: rescore.json named the module by its bytes read again once scoring was over, not those that scored (and a
  module removed meanwhile failed the whole rescore, its work thrown away). Now it names the bytes the scorers were
  made of, checked by the scorer process (`audit.rescorers.modules_used`, from `compiler.ownsource.LOADED`)
- a benchmark's Python files (custom_scorer.py, its helpers.py) edited as the run starts, just after they were
  imported: the manifest named them as read again to be hashed, not as imported, so the run recorded code that did
  not score. Now they are named by the bytes they were imported from (`compiler.plan.compiled`, its
  `core.filebytes.digests_read` block taking the imports in, `compiler.ownsource` reading through `read_bounded`)
"""

from __future__ import annotations

import hashlib
import json
import os
import py_compile
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from benchrun.archive.reader import load_run
from benchrun.audit import rescore
from benchrun.compiler import plan
from benchrun.compiler.scoring import exact_match
from benchrun.core.errors import EXIT
from benchrun.execute import proctree
from benchrun.testing.lab import Lab, wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun, run_benchrun, run_dir_of


@pytest.mark.parametrize(("response", "reference", "matched"), [
    ('{"answer": 2.00000000000000001}', 2, 0),
    ("1e-999999999", 0, 0),
    ("1e-999999999", "1e-999999999", 1),
    ("18446744073709551616.0", 2**64, 1),
    ('{"answer": 18446744073709551617.0}', 2**64, 0),
    ("1e999999999999999999999", "1e999999999999999999999", 1),
    ("1e999999999999999999999", 1, 0),
    (json.dumps({"answer": 1e16}), 10**16, 1),
    ('{"answer": 0.1}', "0.1", 1),
    ('{"answer": [0.5, 0.5]}', "[0.5, 0.5]", 1),
    ('{"answer": {"x": 1.5}}', "{'x': 1.5}", 1),
])
def test_exact_match_reads_an_answers_json_numbers_as_written(response, reference, matched):
    assert exact_match(response, reference) == matched


LEAVES = """import json
import subprocess
import sys
import time


def leaves(response, values):
    if values['a'] == 1:
        subprocess.run([sys.executable, {daemon!r}], start_new_session=True)
        if {stays}:
            time.sleep(1000)
    return int(json.loads(response)['answer'] == values['a'] * 7)
"""
DAEMON = ("import os\nimport time\nif os.fork() == 0:\n    open({pid!r}, 'w').write(str(os.getpid()))\n"
          "    while True:\n        time.sleep(1)\n")


def _running(pid: int) -> bool:
    """Whether process `pid` is there and not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _left_running(pid_file: Path) -> bool:
    """Whether the daemon that wrote `pid_file` still runs once the run is over (killed here if it does)."""
    pid = int(pid_file.read_text())
    try:
        wait_for(lambda: not _running(pid), timeout=20)
    except TimeoutError:
        os.kill(pid, signal.SIGKILL)
        return True
    return False


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="Linux's child subreaper")
@pytest.mark.parametrize("killed", [False, True], ids=["the run ends", "the run is SIGKILLed"])
def test_a_process_a_scorer_leaves_behind_ends_with_the_run(tmp_path, killed):
    pid_file, daemon = tmp_path / "pid", tmp_path / "daemon.py"
    daemon.write_text(DAEMON.format(pid=str(pid_file)))
    with Lab(tmp_path, n=3, latency_s=0, scorer=LEAVES.format(daemon=str(daemon), stays=killed)) as lab:
        proc = lab.start(*lab.args("scorer_timeout_s=600"))
        if killed:
            wait_for(pid_file.exists)
            proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
    assert (proc.returncode, err, _left_running(pid_file)) == (-signal.SIGKILL if killed else EXIT["ok"], "", False)



KILLED = ("import json\nimport os\nimport signal\n\n\ndef k9(response, values):\n    if values['a'] == 1:\n"
          "        os.kill(os.getpid(), signal.SIGKILL)\n    return int(json.loads(response)['answer'] == values['a'] * 7)\n")


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="Linux's child subreaper")
def test_a_scorer_process_killed_by_sigkill_is_said_so_through_its_reaper(tmp_path):
    """The OOM killer's SIGKILL: the reaper the run started ends as the scorers' process did, by the same signal."""
    with Lab(tmp_path, n=3, latency_s=0, scorer=KILLED) as lab:
        result = lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert [s["error"] for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "k9"] == [None, {
        "type": "ScorerProcessDied", "message": "the scorer's process ended (exit code -9) during this call"}, None]


HELPED = "import json\nfrom helpers import same\n\n\ndef helped(response, values):\n" \
         "    return same(json.loads(response)['answer'], values['a'] * 7)\n"
OLD, NEW = "def same(a, b):\n    return int(a == b)\n", "def same(a, b):\n    return int(a != b)\n"


@pytest.mark.slow
def test_a_helper_module_with_a_stale_bytecode_cache_scores_as_its_source_says(tmp_path):
    with Lab(tmp_path, n=2, latency_s=0, scorer=HELPED) as lab:
        helpers = tmp_path / "bench" / "helpers.py"
        helpers.write_text(OLD)
        py_compile.compile(str(helpers), doraise=True)  # __pycache__/helpers.cpython-*.pyc, as an import leaves it
        found = helpers.stat()
        helpers.write_text(NEW)  # as long, and given the old time (within its second, or `cp -p`)
        os.utime(helpers, ns=(found.st_atime_ns, found.st_mtime_ns))
        done = call_benchrun(*lab.args("task.path=."), cwd=helpers.parent)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert [s["metrics"] for s in read_jsonl(run_dir_of(done.stdout) / "scores.jsonl") if s["scorer"] == "helped"] == [
        {"helped": 0}, {"helped": 1}]


@pytest.mark.slow
def test_a_sweep_launched_with_a_launcher_pid_in_its_environment_runs_every_job(tmp_path):
    with FakeOllama(models=["llama3.2", "gemma3"]) as server:
        done = call_benchrun("-m", "task.path=demo:listbench", f"runner.host={server.url}",
                             "runner.model=llama3.2,gemma3", "cache=false", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                             cwd=tmp_path, env={"BENCHRUN_LAUNCHER_PID": "1"})
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert sorted(path.name for path in (tmp_path / "sweep").iterdir()) == [
        "0_llama3.2", "1_gemma3", "multirun.yaml", "sweep.json"]


@pytest.mark.parametrize(("value", "why", "advised"), [
    ("${x", "cannot read it (mismatched input '{' expecting <EOF>); a value that is one text is written in quotes",
     "runner.model='\\${x'"),
    ("é${x", "takes 'é' (\\xe9) (character 14) only inside quotes; quote it", "runner.model='é\\${x'"),
    ("${x}=b", "cannot read it (mismatched input '=' expecting <EOF>); a value that is one text is written in quotes",
     "runner.model='${x}=b'"),
])
def test_the_quoted_form_advised_for_a_value_holding_an_interpolations_mark_is_taken_as_the_value(tmp_path, value,
                                                                                                  why, advised):
    refused = call_benchrun(f"runner.model={value}", "dry_run=true", cwd=tmp_path)
    assert (refused.returncode, refused.stderr) == (EXIT["usage"], (
        f"benchrun: error: the override {'runner.model=' + value!r}: Hydra's override grammar {why}: {advised}\n"))
    taken = OmegaConf.create({"model": OverridesParser.create().parse_override(advised).value(), "x": "X"})
    assert OmegaConf.to_container(taken, resolve=True)["model"] == value.replace("${x}", "X")


def test_a_quoted_value_holding_an_interpolation_never_ended_is_refused_with_omegaconfs_reason(tmp_path):
    refused = call_benchrun("runner.model='${x'", "dry_run=true", cwd=tmp_path)
    assert (refused.returncode, refused.stderr) == (EXIT["usage"], (
        "benchrun: error: Error merging override runner.model='${x' (no viable alternative at input '${x')\n"))


FIRST = b'{"q": "2+2", "reference": 4}\n{"q": "3+3", "reference": 6}\n'


def test_a_data_file_written_as_the_run_starts_is_named_as_its_samples_were_made_of(tmp_path, monkeypatch):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "tasks.yml").write_text("- name: sums\n  template: 'what is {q}?'\n  values_file: values.jsonl\n")
    (bench / "values.jsonl").write_bytes(FIRST)
    read_tasks = plan.read_tasks

    def then_written(*args, **kwargs):
        """The tasks as read; then the generator writing the file appends its last row."""
        specs = read_tasks(*args, **kwargs)
        with (bench / "values.jsonl").open("ab") as file:
            file.write(b'{"q": "4+4", "reference": 8}\n')
        return specs

    monkeypatch.setattr(plan, "read_tasks", then_written)
    with FakeOllama() as server:
        done = call_benchrun("task.path=bench", f"runner.host={server.url}", "cache=false", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    manifest = json.loads((run_dir_of(done.stdout) / "manifest.json").read_text())
    assert [(f["path"], f["sha256"], f["size"]) for f in manifest["files"] if f["path"] == "values.jsonl"] == [
        ("values.jsonl", hashlib.sha256(FIRST).hexdigest(), len(FIRST))]
    assert len(manifest["samples"]) == 2


LAZY = "import json\n\n\ndef lazy(response, values):\n    from helpers import same\n" \
       "    return same(json.loads(response)['answer'], values['a'] * 7)\n"


@pytest.mark.slow
@pytest.mark.parametrize(("imported", "refused"), [
    ("helpers import same", True),
    ("custom_response import same", False),  # a benchmark file: the manifest names it whoever imports it
])
def test_a_benchmark_module_imported_only_inside_a_scorer_function_is_refused(tmp_path, imported, refused):
    with Lab(tmp_path, n=2, latency_s=0, scorer=LAZY.replace("helpers import same", imported)) as lab:
        for name in ("helpers.py", "custom_response.py"):
            (tmp_path / "bench" / name).write_text(OLD)
        # a real process: `python -m` puts its working directory (the benchmark's) first on sys.path, which
        # inprocess.cli does not, and the check looks for the module there
        done = run_benchrun(*lab.args("task.path=."), cwd=tmp_path / "bench")
        asked = [request["path"] for request in lab.server.requests if request["path"].endswith("/chat")]
    assert (done.returncode, done.stderr, len(asked)) == ((EXIT["usage"], (
        "benchrun: error: in 'custom_scorer.py': 'helpers', a module of the benchmark, is imported inside a function "
        "(line 5), and by no file as it is imported: the run records a benchmark's own modules as its files import "
        "them; import it at the top of the file\n"), 0) if refused else (EXIT["ok"], "", 2))


SLEEPER = [sys.executable, "-c", "import time\nwhile True:\n    time.sleep(1)"]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_a_pid_taken_by_another_process_since_it_was_listed_below_a_tree_is_not_killed(monkeypatch):
    """/proc listed `other`'s pid below the scorer process a moment ago; it is another process's now."""
    scorer, other = subprocess.Popen(SLEEPER), subprocess.Popen(SLEEPER)
    listed = iter([{other.pid}])
    monkeypatch.setattr(proctree, "descendants", lambda pid: next(listed, set()))
    try:
        proctree.end_tree(scorer.pid)
        ended = scorer.wait(timeout=60)
        assert (ended, _running(other.pid)) == (-signal.SIGKILL, True)
    finally:
        for process in (scorer, other):
            process.kill()
            process.wait()


@pytest.mark.slow
@pytest.mark.parametrize("after", ["edited", "removed"])
def test_a_rescore_names_the_helper_module_its_scorers_were_made_of(tmp_path, monkeypatch, after):
    with Lab(tmp_path, n=2, latency_s=0, scorer=HELPED) as lab:
        helpers = tmp_path / "bench" / "helpers.py"
        helpers.write_text(OLD)
        done = call_benchrun(*lab.args("task.path=."), cwd=helpers.parent)
    scoring = rescore._judged_scores

    async def then_changed(*args, **kwargs):
        """The scores; then helpers.py edited (or removed) before rescore.json is written."""
        scored = await scoring(*args, **kwargs)
        helpers.write_text(NEW) if after == "edited" else helpers.unlink()
        return scored

    monkeypatch.setattr(rescore, "_judged_scores", then_changed)
    monkeypatch.chdir(helpers.parent)
    monkeypatch.syspath_prepend(str(helpers.parent))
    sys.modules.pop("helpers", None)  # a rescore's process imports the benchmark's helpers afresh, as this one does
    try:
        made = rescore.rescore(load_run(run_dir_of(done.stdout)))
    finally:
        sys.modules.pop("helpers", None)
    assert [(module.path, module.sha256) for module in made.info.modules] == [
        (str(helpers.resolve()), hashlib.sha256(OLD.encode()).hexdigest())]


@pytest.mark.slow
def test_a_helper_module_edited_as_the_run_starts_is_named_as_it_was_imported(tmp_path, monkeypatch):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "tasks.yml").write_text("- name: t\n  template: 'what is {a} times 7?'\n  values:\n    a: [1]\n"
                                     "  scorer: helped\n")
    (bench / "custom_scorer.py").write_text(HELPED)
    (bench / "helpers.py").write_text(OLD)
    available = plan.scoring.available

    def then_edited(*args, **kwargs):
        """The scorers, imported; then helpers.py edited before the manifest is made."""
        found = available(*args, **kwargs)
        (bench / "helpers.py").write_text(NEW)
        return found

    monkeypatch.setattr(plan.scoring, "available", then_edited)
    monkeypatch.syspath_prepend(str(bench))
    sys.modules.pop("helpers", None)
    try:
        with FakeOllama() as server:
            done = call_benchrun("task.path=.", f"runner.host={server.url}", "cache=false",
                                 f"outputs={tmp_path / 'outputs'}", cwd=bench)
    finally:
        sys.modules.pop("helpers", None)
    manifest = json.loads((run_dir_of(done.stdout) / "manifest.json").read_text())
    assert [(f["sha256"], f["size"]) for f in manifest["files"] if f["path"] == "helpers.py"] == [
        (hashlib.sha256(OLD.encode()).hexdigest(), len(OLD))]
