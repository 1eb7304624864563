"""The twenty-fourth hostile pass, the features used together (chats over data files, judges, repeats, servers,
shards, the cache, retry, resume, rescore, compare) as a demanding researcher does.

Found and fixed:
- `resume` and `retry` of a run whose server cannot be reached advised `point runner.host at a running server` (or
  `judge.host`), keys neither command takes: their options are `--host` and `--judge-host`. A runner made by them
  names its server by the command's option (core.settings.RunnerConfig.key, set by audit.resume's make_runner and
  judge_model calls).
- `judge.host=[A,B]` (a list of servers, as the README says a judge asks, and as `retry --judge-host A --judge-host B`
  records) was refused `judge.host: Input should be a valid string`, so a retry asking its judge at two servers made
  a run that `rescore --rejudge` could never grade again. A judge's server key takes a list as the runner's does
  (core.settings.JudgeSettings).
- A judge naming no server of its own asks the model's (`runner.host=[A,B]`, or `resume --host A --host B`); where
  those serve the judge model by two digests, the refusal said `the servers of judge.host serve different models`, a
  key the user never gave. A judge asking at the model's servers names them by the model's key or option
  (execute.runners.registry.make_judge_runner, through core.judgeserver.models_server; `rescore --rejudge`, which
  takes only judge.KEY=VALUE, still names judge.host).
- `merge SWEEP` of a `-m runner.model=llama3.2,gemma3 shards=2` sweep said `shard 1/2 is given twice: runs A and B`,
  of two models' jobs: a shard's number found again is said given twice only of runs alike; two runs that differ say
  how (audit.merge._checked, through _same_split).
- `resume --host A --host A` was refused `in 'config': runner.host: 'A' is listed twice`, `--judge-host ftp://x`
  `in 'config': judge.host: 'ftp://x' is not a server's URL`: keys of a config the user never wrote. A server given
  by a command's option that is not one is said of that option (execute.runners.registry._checked; the judge's keys
  checked there once, compose.config.judge_keys).
"""

from __future__ import annotations

import json

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama, Reply, fake_digest
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of, sweep_dir_of
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


def test_a_judge_asks_a_list_of_servers_and_a_retry_at_two_is_rejudged(tmp_path):
    """Before: the run and the rejudge of the retry each exit 2, `in 'config': judge.host: Input should be a valid
    string`."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals(judge_down=True)) as old:
        ran = bench_run(tmp_path, old.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", "+judge.retries=0",
                        f"judge.host={old.url}", f"hydra.run.dir={tmp_path / 'run'}")
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals()) as a, \
            FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals()) as b:
        listed = bench_run(tmp_path, a.url, "task.path=bench", "cache=false", "judge.model=qwen2.5",
                           f"judge.host=[{a.url},{b.url}]", f"hydra.run.dir={tmp_path / 'listed'}")
        retried = call_benchrun("retry", str(tmp_path / "run"), "--judge-host", a.url, "--judge-host", b.url,
                                cwd=tmp_path, module="benchrun.audit")
        rejudged = call_benchrun("rescore", str(tmp_path / "run.retry1"), "--rejudge", cwd=tmp_path,
                                 module="benchrun.audit")
    assert (ran.returncode, listed.returncode, retried.returncode) == (EXIT["ok"],) * 3, listed.stderr
    assert rejudged.returncode == EXIT["ok"], rejudged.stderr
    for run in ("listed", "run.retry1"):
        info = json.loads((tmp_path / run / "run.json").read_text())
        assert info["judge"]["runner"]["host"] == [a.url, b.url]
    scores = read_jsonl(tmp_path / "run.retry1/rescores/001/scores.jsonl")
    assert [(s["id"], s["metrics"]) for s in scores if s["scorer"] == "names"] == [
        ("cap:fr", {"names": 1}), ("cap:jp", {"names": 0})]


def _two_judge_digests():
    """Two servers of llama3.2 and qwen2.5, the second serving qwen2.5 by another digest."""
    return (FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals()),
            FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals(), digests={"qwen2.5": "e" * 64}))


def _digests_refused(key: str, a: FakeOllama, b: FakeOllama) -> str:
    return (f"benchrun: error: the judge model: the servers of {key} serve different models as 'qwen2.5': {a.url} "
            f"digest 4a65eed368b0, {b.url} digest eeeeeeeeeeee; serve the same model on each, or leave the odd one "
            "out of the list\n")


def test_a_judge_at_the_models_servers_of_two_digests_names_runner_host(tmp_path):
    """Before: `the servers of judge.host serve different models`, judge.host never given."""
    write_bench(tmp_path, CAPITALS)
    first, second = _two_judge_digests()
    with first as a, second as b:
        ran = bench_run(tmp_path, a.url, "task.path=bench", "cache=false", "judge.model=qwen2.5",
                        f"runner.host=[{a.url},{b.url}]")
    assert (ran.returncode, ran.stderr) == (EXIT["runner"], _digests_refused("runner.host", a, b))


def test_a_resume_at_two_hosts_of_two_judge_digests_names_host(tmp_path):
    """Before: `the servers of judge.host serve different models`: the servers were given by --host."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals(judge_down=True)) as old:
        ran = bench_run(tmp_path, old.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", "+judge.retries=0",
                        "+judge.max_consecutive_failures=1", f"hydra.run.dir={tmp_path / 'run'}")
    first, second = _two_judge_digests()
    with first as a, second as b:
        resumed = call_benchrun("resume", str(tmp_path / "run"), "--host", a.url, "--host", b.url, cwd=tmp_path,
                                module="benchrun.audit")
    assert ran.returncode == EXIT["runner"], ran.stderr
    assert (resumed.returncode, resumed.stderr) == (EXIT["runner"], _digests_refused("--host", a, b))


def test_a_merge_of_a_two_model_shards_sweep_says_the_models_differ(tmp_path):
    """Before: exit 4, `shard 1/2 is given twice: runs A and B`, A llama3.2's and B gemma3's."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5", "gemma3"], responder=Capitals()) as server:
        swept = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5",
                          "runner.model=llama3.2,gemma3", "shards=2", multirun=True)
    sweep = sweep_dir_of(swept.stdout)
    merged = call_benchrun("merge", str(sweep), "--into", str(tmp_path / "merged"), cwd=tmp_path,
                           module="benchrun.audit")
    ids = {name: json.loads((sweep / name / "run.json").read_text())["run_id"]
           for name in ("0_llama3.2_shard-1-2", "2_gemma3_shard-1-2")}
    assert swept.returncode == EXIT["ok"], swept.stderr
    assert (merged.returncode, merged.stderr) == (EXIT["archive"], (
        f"benchrun: error: shard runs {ids['0_llama3.2_shard-1-2']} (1/2) and {ids['2_gemma3_shard-1-2']} (1/2) "
        f"asked different models: digest {fake_digest('llama3.2')[:12]} and digest {fake_digest('gemma3')[:12]}\n"))
    assert not (tmp_path / "merged").exists()


def test_servers_given_by_resumes_options_are_refused_by_those_options(tmp_path):
    """Before: `in 'config': runner.host: 'A' is listed twice ...` and `in 'config': judge.host: 'ftp://x' is not a
    server's URL (http://host:port)`."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals(judge_down=True)) as old:
        bench_run(tmp_path, old.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", "+judge.retries=0",
                  f"judge.host={old.url}", "+judge.max_consecutive_failures=1", f"hydra.run.dir={tmp_path / 'run'}")
    before = (tmp_path / "run/run.json").read_bytes()
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals()) as new:
        twice = call_benchrun("resume", str(tmp_path / "run"), "--host", new.url, "--host", new.url, cwd=tmp_path,
                              module="benchrun.audit")
        ftp = call_benchrun("resume", str(tmp_path / "run"), "--host", new.url, "--judge-host", "ftp://x",
                            cwd=tmp_path, module="benchrun.audit")
    assert (twice.returncode, twice.stderr) == (EXIT["usage"], (
        f"benchrun: error: --host: '{new.url}' is listed twice (as '{new.url}'): list each server once\n"))
    assert (ftp.returncode, ftp.stderr) == (EXIT["usage"], (
        "benchrun: error: --judge-host: 'ftp://x' is not a server's URL (http://host:port)\n"))
    assert (tmp_path / "run/run.json").read_bytes() == before
