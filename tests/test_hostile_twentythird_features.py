"""The twenty-third hostile pass, the features a benchmark is made of (chats over data files, judges, repeats, servers,
shards, the cache, retry, resume, rescore, compare) used together as a demanding researcher does.

Found and fixed:
- `retry --host NEW` (or `resume --host NEW`) of a run whose judge names no server of its own (it asks the model's, as
  the README says): the model was asked at NEW, but the judge at the server config.yaml names, gone, so the retry
  failed `the judge model: cannot reach Ollama at OLD ...; or point judge.host at a running server`, which neither
  command takes: a run whose server moved could not be retried or resumed once it had a judge. The judge naming no
  server asks the servers the model is asked at (audit.resume.asked_at).
- A run whose judge names a server of its own (`judge.host`) that moved: `retry` and `resume` could not ask the judge
  anywhere else (`--host` moves the model, `--set` takes only limits), so the run could never be retried or finished.
  `--judge-host URL` (repeatable: a list) asks it there, recorded in the history (`judge_host`), and a later resume
  asks the judge where it was last asked (audit.resume.judge_config).
- `merge SWEEP --into DIR` of a `shards=n` sweep's directory was refused `it is a sweep's directory: name one of its
  jobs`, and one job merged alone is incomplete. A sweep's directory stands for its jobs, as in compare
  (audit.merge.main).
- `rescore RUN --scorer names`, `names` a judge of the run (a metric show, compare and export list beside the
  scorers'), said `unknown scorer 'names'`: it says the name is a judge's, that every rescore grades with the run's
  judges and that --rejudge asks them again (audit.rescorers.scorer_plan).
- `rescore --rejudge` of a run finished by `resume --host NEW` asked a judge naming no server of its own at the
  server config.yaml names (gone), where the resume had graded at NEW. A rejudge asks the judge where the run last
  asked it, as a resume does (audit.rejudge.rejudged_config, through audit.resume.asked_at).
- Two judges on two tasks scored by one scorer `s`, 0/1 on the second judge's task but 0.5 somewhere on the first's:
  summary.json's agreement of the second judge with `s` was left out (`with_scorers: {}`), `s` taken as not 0/1 for
  every judge. Whether a metric is 0/1 is told per judge, over the answers it grades (archive.agreement.Agreement).
"""

from __future__ import annotations

import json

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of, sweep_dir_of
from tests.helpers.judgedruns import CAPITALS, Capitals
from tests.helpers.judges import JUDGES, RESPONSE


def test_a_retry_at_another_server_asks_the_judge_naming_none_there_too(tmp_path):
    """Before: exit 3, `the judge model: cannot reach Ollama at http://127.0.0.1:PORT (ConnectionError); start it with
    `ollama serve`, or point judge.host at a running server`: the judge asked at the old server, gone."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals(judge_down=True)) as old:
        ran = bench_run(tmp_path, old.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", "+judge.retries=0")
    parent = run_dir_of(ran.stdout)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals()) as new:
        retried = call_benchrun("retry", str(parent), "--host", new.url, cwd=tmp_path, module="benchrun.audit")
    assert ran.returncode == EXIT["ok"], ran.stderr
    assert retried.returncode == EXIT["ok"], retried.stderr
    child = run_dir_of(retried.stdout)
    assert [(c["id"], c["grade"], c["value"]) for c in read_jsonl(child / "judgements.jsonl")] == [
        ("cap:fr", "right", 1), ("cap:jp", "wrong", 0)]
    info = json.loads((child / "run.json").read_text())
    assert (info["status"], info["judge"]["runner"]["host"], info["runner"]["host"]) == ("completed", new.url, new.url)


def test_a_resume_at_another_server_grades_there_with_the_judge_naming_none(tmp_path):
    """Before: as the retry's, exit 3 naming the old server: a run its judge stopped could not be finished once its
    server moved."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals(judge_down=True)) as old:
        ran = bench_run(tmp_path, old.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", "+judge.retries=0",
                        "+judge.max_consecutive_failures=1")
    [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals()) as new:
        resumed = call_benchrun("resume", str(run_dir), "--host", new.url, cwd=tmp_path, module="benchrun.audit")
    assert (ran.returncode, resumed.returncode) == (EXIT["runner"], EXIT["ok"]), resumed.stderr
    assert [(c["id"], c["grade"], c["value"]) for c in read_jsonl(run_dir / "judgements.jsonl")] == [
        ("cap:fr", "right", 1), ("cap:jp", "wrong", 0)]
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["judge"]["runner"]["host"]) == ("completed", new.url)


def test_a_retry_asks_a_judge_of_its_own_server_moved_at_judge_host(tmp_path):
    """Before: `retry --host M` said `the judge model: cannot reach Ollama at OLD ...; or point judge.host at a running
    server`, and neither retry nor resume took one: a run whose judge server moved could not be retried."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2"], responder=Capitals()) as model:
        with FakeOllama(models=["qwen2.5"], responder=Capitals(judge_down=True)) as old:
            ran = bench_run(tmp_path, model.url, "task.path=bench", "cache=false", "judge.model=qwen2.5",
                            f"judge.host={old.url}", "+judge.retries=0")
        parent = run_dir_of(ran.stdout)
        stuck = call_benchrun("retry", str(parent), cwd=tmp_path, module="benchrun.audit")
        with FakeOllama(models=["qwen2.5"], responder=Capitals()) as new:
            retried = call_benchrun("retry", str(parent), "--judge-host", new.url, cwd=tmp_path,
                                    module="benchrun.audit")
    assert (stuck.returncode, stuck.stderr.startswith(f"benchrun: error: the judge model: cannot reach Ollama at "
                                                      f"{old.url} ")) == (EXIT["runner"], True)
    assert retried.returncode == EXIT["ok"], retried.stderr
    child = run_dir_of(retried.stdout)
    assert [(c["id"], c["grade"], c["value"]) for c in read_jsonl(child / "judgements.jsonl")] == [
        ("cap:fr", "right", 1), ("cap:jp", "wrong", 0)]
    info = json.loads((child / "run.json").read_text())
    assert (info["status"], info["judge"]["runner"]["host"], info["history"][0]["judge_host"]) == (
        "completed", new.url, new.url)


def test_a_shards_sweep_directory_merges_as_its_jobs(tmp_path):
    """Before: exit 4, `not a run directory (no run.json); it is a sweep's directory: name one of its jobs (...)`, and
    one job merged alone is `the shards are incomplete`: `shards=n` made a directory merge could not take."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals()) as server:
        whole = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", "repeats=2")
        split = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", "repeats=2",
                          "shards=2", multirun=True)
    sweep = sweep_dir_of(split.stdout)
    merged = call_benchrun("merge", str(sweep), "--into", str(tmp_path / "merged"), cwd=tmp_path,
                           module="benchrun.audit")
    assert merged.returncode == EXIT["ok"], merged.stderr
    jobs = [json.loads((sweep / job / "run.json").read_text())["run_id"] for job in ("0_shard-1-2", "1_shard-2-2")]
    assert merged.stdout.splitlines()[-1] == f"merge of 2 shards: 1/2 ({jobs[0]}), 2/2 ({jobs[1]})"
    summaries = [json.loads((run / "summary.json").read_text()) for run in (run_dir_of(whole.stdout), tmp_path / "merged")]
    assert [{**summary, "speed": None} for summary in summaries][0] == {**summaries[1], "speed": None}


def test_a_rescore_given_a_judge_as_its_scorer_says_it_is_a_judge(tmp_path):
    """Before: `unknown scorer 'names' (available: contains, exact_match)`, of a metric every show of the run lists."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals()) as server:
        ran = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5")
    rescored = call_benchrun("rescore", str(run_dir_of(ran.stdout)), "--scorer", "names", cwd=tmp_path,
                             module="benchrun.audit")
    assert (rescored.returncode, rescored.stdout, rescored.stderr) == (EXIT["usage"], "", (
        "benchrun: error: 'names' is a judge of the run, not a scorer: every rescore grades with the run's judges "
        "(--rejudge asks them again); the scorers (available: contains, exact_match)\n"))


def test_a_rejudge_asks_the_judge_naming_no_server_where_the_run_last_asked_the_model(tmp_path):
    """Before: `the judge model: cannot reach Ollama at OLD`: a run finished by `resume --host NEW` was rejudged at the
    server config.yaml names, gone, where its resume had graded at NEW."""
    write_bench(tmp_path, CAPITALS)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals(judge_down=True)) as old:
        bench_run(tmp_path, old.url, "task.path=bench", "cache=false", "judge.model=qwen2.5", "+judge.retries=0",
                  "+judge.max_consecutive_failures=1")
    [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Capitals()) as new:
        resumed = call_benchrun("resume", str(run_dir), "--host", new.url, cwd=tmp_path, module="benchrun.audit")
        rejudged = call_benchrun("rescore", str(run_dir), "--rejudge", cwd=tmp_path, module="benchrun.audit")
    assert (resumed.returncode, rejudged.returncode) == (EXIT["ok"], EXIT["ok"]), rejudged.stderr
    assert [(c["id"], c["grade"]) for c in read_jsonl(run_dir / "rescores" / "001" / "judgements.jsonl")] == [
        ("cap:fr", "right"), ("cap:jp", "wrong")]
    rescore = json.loads((run_dir / "rescores" / "001" / "rescore.json").read_text())
    assert rescore["judge"]["runner"]["host"] == new.url


def test_a_judges_agreement_with_a_scorer_is_not_dropped_for_another_judges_task(tmp_path):
    """Before: `other`'s with_scorers was {}: `s` gave 0.5 on task a (graded by `names`), so it was taken as not 0/1 for
    every judge, though on `other`'s task b it is 0/1."""
    write_bench(tmp_path, {
        "tasks.yml": "- name: a\n  template: 'say {x}'\n  values: {x: [p, q]}\n  reference: [p, q]\n  scorer: s\n"
                     "  judge: names\n- name: b\n  template: 'tell {x}'\n  values: {x: [p, q]}\n  reference: [p, q]\n"
                     "  scorer: s\n  judge: other\n",
        "custom_scorer.py": "def s(response, reference):\n    return 0.5 if response.endswith('say p\"}') else 1\n",
        "judges.yml": JUDGES + JUDGES.replace("- name: names", "- name: other"), "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=lambda req: json.dumps(
            {"verdict": "right"} if req.model.startswith("qwen2.5") else {"answer": req.prompt})) as server:
        ran = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5")
    judges = json.loads((run_dir_of(ran.stdout) / "summary.json").read_text())["judges"]
    assert (judges["names"]["with_scorers"], judges["other"]["with_scorers"]) == (
        {}, {"s": {"answers": 2, "agreement": 1.0, "kappa": None}})


def test_judge_host_for_a_run_without_a_judge_is_refused(tmp_path):
    write_bench(tmp_path, {**CAPITALS, "tasks.yml": CAPITALS["tasks.yml"].replace("  judge: names\n", "")})
    with FakeOllama(responder=lambda req: Reply(status=500, error="down") if "Japan" in req.prompt
                    else json.dumps({"answer": "Paris"})) as server:
        ran = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "runner.retries=0")
        parent = run_dir_of(ran.stdout)
        retried = call_benchrun("retry", str(parent), "--judge-host", server.url, cwd=tmp_path, module="benchrun.audit")
    parent_id = json.loads((parent / "run.json").read_text())["run_id"]
    assert (retried.returncode, retried.stdout, retried.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: run {parent_id} has no judge: --judge-host does not apply\n"))
    assert sorted(p.name for p in parent.parent.iterdir()) == [parent.name]
