"""Hostile input, twenty-third pass: the lead's own cases (the review of the twenty-second pass's change).

- a benchmark's scorer that binds a Unix socket in its $TMPDIR (as multiprocessing's managers and forkserver do)
  failed with `AF_UNIX path too long` under a $TMPDIR that took 60 characters: the twenty-second pass named each
  scratch folder by its maker (boot, pid namespace, pid, start: about 40 characters more), and Linux holds a socket's
  path to 107. The maker is now said by a file in the folder (`core.scratch.MAKER`), its name back to mkdtemp's.
- (the features side's case 2.7, left by it) a `retry` or `resume` that only grades again (a judge's failed requests)
  identified the model first, so with the model's server gone it failed `cannot reach Ollama at ...` though nothing
  was to be asked of it. Such a command takes the identity the run recorded (`audit.resume.checked_models(asks=)`).
  Without the model's request first, a judge failing fast as its other calls connected left anyio's happy-eyeballs
  attempt never awaited (its task, a wrapper since anyio 4.14, cancelled before it began): two lines of
  `RuntimeWarning` after the error line, every time. That warning is not said (`execute.runners.transport`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from benchrun.core import scratch
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of
from tests.helpers.judgedruns import CAPITALS, Capitals, Judging, judged_eight

SOCKET_SCORER = ("import os\nimport socket\nimport tempfile\n\n\n"
                 "def s(response, reference):\n"
                 "    with socket.socket(socket.AF_UNIX) as listener:\n"
                 "        listener.bind(os.path.join(tempfile.gettempdir(), 'scorer.sock'))\n"
                 "    return 1\n")


def test_a_scratch_folder_is_named_by_its_prefix_and_says_its_maker_in_a_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = Path(scratch.scratch_folder())
    assert re.fullmatch(r"benchrun-scratch-[a-z0-9_]{8}", folder.name), folder.name
    machine, pid, start = (folder / scratch.MAKER).read_text().split()
    assert (machine, int(pid), int(start)) == (scratch._machine(), os.getpid(),
                                              scratch.started(os.getpid()))


def test_a_scorer_binding_a_unix_socket_in_its_temporary_folder_is_not_pushed_past_the_path_limit(tmp_path):
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    temp = base / ("p" * (60 - len(str(base)) - 1))
    temp.mkdir()
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                        "  scorer: s\n",
                           "custom_scorer.py": SOCKET_SCORER})
    try:
        with FakeOllama(models=["llama3.2"]) as server:
            done = subprocess.run([sys.executable, "-m", "benchrun", "task.path=bench", f"runner.host={server.url}",
                                   "cache=false", "outputs=outputs"], cwd=tmp_path,
                                  env=child_env({"TMPDIR": str(temp)}), capture_output=True, text=True, timeout=120)
        [scores] = (tmp_path / "outputs").glob("*/*/scores.jsonl")
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        assert [(s["scorer"], s["metrics"], s["error"]) for s in map(json.loads, scores.read_text().splitlines())] == [
            ("format_valid", {"format_valid": 1}, None), ("s", {"s": 1}, None)]
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=True)


def test_a_fifo_standing_as_a_folders_maker_file_is_passed_over_not_waited_on(tmp_path):
    folder = tmp_path / f"{scratch.PREFIX}q1w2e3r4"
    folder.mkdir()
    os.mkfifo(folder / scratch.MAKER)
    swept = subprocess.run([sys.executable, "-c", "import sys; from benchrun.core.scratch import remove_orphans; "
                            "remove_orphans(sys.argv[1], 'benchrun-scratch-')", str(tmp_path)],
                           env=child_env(), capture_output=True, text=True, timeout=60)
    assert (swept.returncode, swept.stderr, [path.name for path in tmp_path.iterdir()]) == (0, "", [folder.name])


def judged_capitals(tmp_path, model: FakeOllama, judge: FakeOllama, *overrides: str) -> Path:
    """The run of CAPITALS asking `model`, graded by a judge of its own server, `judge`: its directory."""
    write_bench(tmp_path, CAPITALS)
    bench_run(tmp_path, model.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", f"judge.host={judge.url}",
              "+judge.retries=0", *overrides)
    [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
    return run_dir


@pytest.mark.parametrize("command", ["retry", "resume"])
def test_a_command_that_only_grades_again_needs_no_model_server(tmp_path, command):
    """Before: `cannot reach Ollama at M (ConnectionError); ... point runner.host at a running server` (exit 3): the
    model was identified though nothing was to be asked of it, so a run whose judge failed could not be finished once
    the model's server was gone (a released GPU node)."""
    with FakeOllama(models=["qwen2.5"], responder=Capitals(judge_down=True)) as judge:
        with FakeOllama(models=["llama3.2"], responder=Capitals()) as model:
            parent = judged_capitals(tmp_path, model, judge, *(["+judge.max_consecutive_failures=2"]
                                                               if command == "resume" else []))
        judge.responder = Capitals()
        done = call_benchrun(command, str(parent), cwd=tmp_path, module="benchrun.audit")
    assert done.returncode == EXIT["ok"], done.stderr
    run_dir = run_dir_of(done.stdout) if command == "retry" else parent
    assert [(c["id"], c["grade"], c["value"]) for c in read_jsonl(run_dir / "judgements.jsonl")
            if c["error"] is None] == [("cap:fr", "right", 1), ("cap:jp", "wrong", 0)]
    before, after = (json.loads((path / "run.json").read_text()) for path in (parent, run_dir))
    assert (after["status"], after["identity"]) == ("completed", before["identity"])


def test_a_retry_whose_judge_fails_fast_as_others_connect_says_one_line(tmp_path):
    """Before: the retry's error line was followed by `sys:1: RuntimeWarning: coroutine
    'connect_tcp.<locals>.try_connect' was never awaited` and `RuntimeWarning: Enable tracemalloc ...`: anyio's
    happy eyeballs attempt, its task cancelled before it began, as the judge failed fast."""
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Judging((1, 3, 5, 7))) as server:
        _, parent = judged_eight(tmp_path, server.url, "+judge.max_consecutive_failures=2", "runner.concurrency=1")
        server.responder = Judging(None)
        retried = subprocess.run([sys.executable, "-m", "benchrun.audit", "retry", str(parent)], cwd=tmp_path,
                                 env=child_env(), capture_output=True, text=True, timeout=120)
    [child] = parent.parent.glob("*.retry1")
    assert (retried.returncode, retried.stderr.splitlines()[-1]) == (EXIT["runner"], (
        "benchrun: error: the judge's requests failed the same way for answer after answer (2 in a row), so the "
        "judge's setup is broken, not the benchmark: ResponseError: HTTP 500: boom (judge.max_consecutive_failures); "
        f"run {json.loads((child / 'run.json').read_text())['run_id']} is recorded as "
        f"'failed' with 8 of 8 samples (4 not graded yet) in {child}; finish it once the setup is mended with: "
        f"benchrun-audit resume {child}"))
    assert len(retried.stderr.splitlines()) == 1, retried.stderr


def test_a_retry_that_only_grades_again_asks_nothing_of_a_model_pulled_again(tmp_path):
    """Before (with the fix above alone): the retry graded, then failed `model llama3.2 changed on URL while the run
    asked: ... (pulled again?)`, though it asked the model nothing."""
    with FakeOllama(models=["qwen2.5"], responder=Capitals(judge_down=True)) as judge:
        with FakeOllama(models=["llama3.2"], responder=Capitals()) as model:
            parent = judged_capitals(tmp_path, model, judge)
            judge.responder = Capitals()
            model.digests["llama3.2"] = "f" * 64
            done = call_benchrun("retry", str(parent), cwd=tmp_path, module="benchrun.audit")
    assert done.returncode == EXIT["ok"], done.stderr
    child = run_dir_of(done.stdout)
    info = json.loads((child / "run.json").read_text())
    before = json.loads((parent / "run.json").read_text())
    assert (info["status"], info["identity"]) == ("completed", before["identity"])
