"""The twenty-fourth hostile pass, the features used together (chats over data files, judges, repeats, servers,
shards, the cache, retry, resume, rescore, compare) as a demanding researcher does.

Found and fixed:
- `resume` and `retry` of a run whose server cannot be reached advised `point runner.host at a running server` (or
  `judge.host`), keys neither command takes: their options are `--host` and `--judge-host`. A runner made by them
  names its server by the command's option (core.settings.RunnerConfig.key, set by audit.resume's make_runner and
  judge_model calls).
"""

from __future__ import annotations

import json

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama, Reply
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of
from tests.helpers.judgedruns import CAPITALS, Capitals


def _japan_fails(req):
    """The model answers France, but 500 for Japan."""
    return Reply(status=500, error="boom") if "Japan" in req.prompt else Capitals()(req)


def test_a_retry_whose_server_is_gone_names_its_host_option(tmp_path):
    """Before: `... or point runner.host at a running server`, which retry does not take."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=_japan_fails) as old:
        ran = bench_run(tmp_path, old.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", "runner.retries=0")
    retried = call_benchrun("retry", str(run_dir_of(ran.stdout)), cwd=tmp_path, module="benchrun.audit")
    assert ran.returncode == EXIT["ok"], ran.stderr
    assert (retried.returncode, retried.stderr) == (EXIT["runner"], (
        f"benchrun: error: cannot reach Ollama at {old.url} (ConnectionError); start it with `ollama serve`, or point "
        "--host at a running server\n"))


def test_a_resume_whose_judge_server_is_gone_names_judge_host(tmp_path):
    """Before: `the judge model: cannot reach Ollama at OLD ...; or point judge.host at a running server`, which
    resume does not take."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals(judge_down=True)) as old:
        ran = bench_run(tmp_path, old.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", "+judge.retries=0",
                        f"judge.host={old.url}", "+judge.max_consecutive_failures=1")
    [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals()) as new:
        resumed = call_benchrun("resume", str(run_dir), "--host", new.url, cwd=tmp_path, module="benchrun.audit")
    assert ran.returncode == EXIT["runner"], ran.stderr
    assert (resumed.returncode, resumed.stderr) == (EXIT["runner"], (
        f"benchrun: error: the judge model: cannot reach Ollama at {old.url} (ConnectionError); start it with "
        "`ollama serve`, or point --judge-host at a running server\n"))
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
