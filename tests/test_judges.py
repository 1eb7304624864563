"""A judge model grades answers, pinned and archived like the model it grades: compile-time checks, the judge's
calls in judgements.jsonl (verified), its identity in run.json, its replies cached, a rescore from the archive alone,
self-judging refused, agreement reported, unparseable replies counted as errors. The judge is a loopback model that
grades by rule (benchrun.testing.oracle's verdict), or a broken one."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from benchrun import compile
from benchrun.archive.reader import load_run
from benchrun.audit.compare import compare
from benchrun.core.errors import EXIT
from benchrun.testing.chat import fake_digest
from benchrun.testing.ollama_server import ChatRequest, FakeOllama, Reply
from benchrun.testing.oracle import verdict
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, RUBRIC, TASKS, answer
from tests.helpers.sqlitefile import sqlite_db


def bench(tmp_path: Path, judges: str = JUDGES, tasks: str = TASKS) -> Path:
    return write_bench(tmp_path, {"tasks.yml": tasks, "judges.yml": judges, "custom_response.py": RESPONSE})


def run(tmp_path: Path, server: FakeOllama, *args: str):
    bench(tmp_path)
    return call_benchrun("task.path=bench", f"runner.host={server.url}", f"outputs={tmp_path / 'outputs'}",
                         "judge.model=qwen2.5", *args, cwd=tmp_path)


@pytest.fixture
def server():
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as fake:
        yield fake


def judge_requests(server: FakeOllama) -> list[dict]:
    return [r for r in server.requests if r["path"] == "/api/chat" and r["model"].startswith("qwen2.5")]


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """A judged run (cache=false) made once, its server then stopped: the tests that take it each work in a copy of
    it (`_copy_of_the_judged_run`), never in it."""
    root = tmp_path_factory.mktemp("judged_run")
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        result = run(root, server, "cache=false")
    return root, result, judge_requests(server), run_dir_of(result.stdout).relative_to(root)


def _copy_of_the_judged_run(judged_run, tmp_path: Path):
    """A copy of the shared judged run's folder (its benchmark and outputs) into tmp_path: the run's result, the judge
    requests its server took, and the copied run's directory."""
    root, result, requests, run_dir = judged_run
    shutil.copytree(root, tmp_path, symlinks=True, dirs_exist_ok=True)
    return result, requests, tmp_path / run_dir


def test_a_judge_grades_every_answer_and_each_call_is_archived(judged_run, tmp_path):
    result, requests, run_dir = _copy_of_the_judged_run(judged_run, tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    scores = {(s["id"], s["scorer"]): s["metrics"] for s in read_jsonl(run_dir / "scores.jsonl")}
    assert [scores[f"symbol:symb={s}", "names"] for s in "@$#"] == [{"names": 1}, {"names": 1}, {"names": 0}]
    calls = read_jsonl(run_dir / "judgements.jsonl")
    assert [(c["id"], c["judge"], c["judge_repeat"], c["grade"], c["value"], c["error"]) for c in calls] == [
        ("symbol:symb=@", "names", 0, "right", 1, None), ("symbol:symb=$", "names", 0, "right", 1, None),
        ("symbol:symb=#", "names", 0, "wrong", 0, None)]
    assert calls[2]["messages"] == [{"role": "user", "content": (
        "Question: \n```prompt\nwhat is the name for the following symbol? #\n```\nAnswer: \n```response\n"
        '{"answer": "hash"}\n```\nReference: \n```reference\npound\n```\nDoes the answer name the reference?\n')}]
    assert calls[2]["reply"] == '{"verdict": "wrong"}'
    [sent] = [r for r in requests if r["messages"] == calls[2]["messages"]]
    assert (sent["options"], sent["format"]["title"]) == ({"temperature": 0, "seed": 0}, "Verdict")
    info = json.loads((run_dir / "run.json").read_text())
    assert info["judge"]["identity"]["digest"] == fake_digest("qwen2.5")
    assert info["judge"]["runner"]["model"] == "qwen2.5" and "allow_self" not in info["judge"]
    summary = {(m["task"], m["metric"]): m for m in json.loads((run_dir / "summary.json").read_text())["metrics"]}
    assert (summary["symbol", "names"]["mean"], summary["symbol", "names"]["n"]) == (2 / 3, 3)
    exported = call_benchrun("export", str(run_dir), "--format", "jsonl", cwd=tmp_path, module="benchrun.audit")
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [(r["sample_id"], r["value"]) for r in rows if r["metric"] == "names"] == [
        ("symbol:symb=@", 1), ("symbol:symb=$", 1), ("symbol:symb=#", 0)]


def test_the_manifest_pins_the_rubric_the_format_and_the_judge_model(tmp_path, compose_cfg):
    path = bench(tmp_path)
    manifest = compile(compose_cfg(f"task.path={path}", "judge.model=qwen2.5"))
    [judge] = manifest.judges
    assert (judge.name, judge.rubric, judge.score, judge.scores) == ("names", RUBRIC, "verdict", {"right": 1, "wrong": 0})
    assert judge.format.json_schema["$defs"]["Grade"]["enum"] == ["right", "wrong"]
    assert (manifest.judge.runner.model, manifest.judge.runner.options, manifest.judge.repeats) == (
        "qwen2.5", {"temperature": 0, "seed": 0}, 1)
    ids = {manifest.id, compile(compose_cfg(f"task.path={path}", "judge.model=gemma3")).id,
           compile(compose_cfg(f"task.path={path}", "judge.model=qwen2.5", "judge.options.temperature=0.5")).id}
    (path / "judges.yml").write_text(JUDGES.replace("Does the answer", "Does the reply"))
    ids.add(compile(compose_cfg(f"task.path={path}", "judge.model=qwen2.5")).id)
    assert len(ids) == 4, "another judge model, its options or another rubric is another manifest"


def test_verify_names_an_edited_judgement(judged_run, tmp_path):
    _, _, run_dir = _copy_of_the_judged_run(judged_run, tmp_path)
    path = run_dir / "judgements.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"grade":"right"', '"grade":"wrong"')
    path.write_text("".join(lines))
    verified = call_benchrun("verify", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert verified.returncode == EXIT["not_intact"]
    assert "FAIL  judgements.jsonl: line 2 is not the line written" in verified.stdout


def test_an_identical_run_takes_the_judges_replies_from_the_cache(tmp_path, server, private_cache):
    assert run(tmp_path, server).returncode == EXIT["ok"]
    asked = len(judge_requests(server))
    again = run_dir_of(run(tmp_path, server).stdout)
    assert len(judge_requests(server)) == asked == 3
    assert {c["cached_from"] is not None for c in read_jsonl(again / "judgements.jsonl")} == {True}
    with sqlite_db(private_cache / "responses.sqlite3") as db:
        judged = [json.loads(a)["text"] for (a,) in db.execute("SELECT answer FROM answers WHERE model = 'qwen2.5'")]
    assert sorted(judged) == ['{"verdict": "right"}', '{"verdict": "right"}', '{"verdict": "wrong"}']


def test_a_rescore_regrades_from_the_archived_judgements_with_the_server_gone(judged_run, tmp_path):
    _, _, run_dir = _copy_of_the_judged_run(judged_run, tmp_path)  # its server stopped when the run was made
    rescored = call_benchrun("rescore", str(run_dir), "--json", cwd=tmp_path, module="benchrun.audit")
    assert rescored.returncode == EXIT["ok"], rescored.stderr
    scores = read_jsonl(Path(json.loads(rescored.stdout)["dir"]) / "scores.jsonl")
    assert [s["metrics"] for s in scores if s["scorer"] == "names"] == [{"names": 1}, {"names": 1}, {"names": 0}]
    assert json.loads(rescored.stdout)["changed"] == []


def test_a_judge_that_is_the_model_under_test_is_refused_unless_allowed(tmp_path, server):
    refused = run(tmp_path, server, "judge.model=llama3.2", "cache=false")
    assert refused.returncode == EXIT["usage"]
    assert refused.stderr == ("benchrun: error: in 'config': judge.model: the judge llama3.2 is the model under test "
                              f"(digest {fake_digest('llama3.2')[:12]}): a model grading its own answers favours "
                              "them; pick another judge.model, or set judge.allow_self=true (recorded)\n")
    allowed = run(tmp_path, server, "judge.model=llama3.2", "judge.allow_self=true", "cache=false")
    assert allowed.returncode == EXIT["ok"], allowed.stderr
    assert json.loads((run_dir_of(allowed.stdout) / "run.json").read_text())["judge"]["allow_self"] is True


def flipping(req: ChatRequest) -> str:
    """A judge whose grade follows its seed: right on even seeds, wrong on odd ones (repeats disagree)."""
    if req.model.startswith("qwen2.5"):
        return verdict(req, req.options.get("seed", 0) % 2 == 0)
    return answer(req)


def test_repeated_judgements_report_the_judges_agreement_with_itself_and_the_scorer(tmp_path):
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=flipping) as server:
        result = run(tmp_path, server, "judge.repeats=3", "cache=false")
    run_dir = run_dir_of(result.stdout)
    calls = read_jsonl(run_dir / "judgements.jsonl")
    assert [c["grade"] for c in calls if c["id"] == "symbol:symb=@"] == ["right", "wrong", "right"]
    summary = json.loads((run_dir / "summary.json").read_text())
    means = {m["metric"]: m["mean"] for m in summary["metrics"]}
    assert means["names"] == 2 / 3
    # every answer graded right, wrong, right: the judge agrees with itself on none (Fleiss' kappa -1/2); against
    # `contains` (1, 0, 0) its majority verdicts (1, 1, 1) agree on one answer of three, no better than chance
    assert summary["judges"]["names"] == {
        "repeats": 3, "answers": 3, "self_agreement": 0.0, "kappa": pytest.approx(-0.5),
        "with_scorers": {"contains": {"answers": 3, "agreement": 1 / 3, "kappa": 0.0}}}
    shown = call_benchrun("show", str(run_dir), "--samples", cwd=tmp_path, module="benchrun.audit")
    assert shown.returncode == EXIT["ok"], shown.stderr
    lines = [line.rstrip() for line in shown.stdout.splitlines()]
    assert f"judge        qwen2.5  name qwen2.5:latest  digest {fake_digest('qwen2.5')}  server 0.12.6" in lines
    at = lines.index("symbol:symb=@  [symbol]")
    assert lines[at + 4:at + 7] == ["  judge     names#0: right -> 1", "  judge     names#1: wrong -> 0",
                                    "  judge     names#2: right -> 1"]
    assert "│ names │ itself (3 repeats) │       3 │     0.000 │ -0.500 │" in lines
    assert "│ names │ contains           │       3 │     0.333 │  0.000 │" in lines
    as_json = json.loads(call_benchrun("show", str(run_dir), "--samples", "--json", cwd=tmp_path,
                                       module="benchrun.audit").stdout)
    assert as_json["judges"] == summary["judges"]
    assert [c["grade"] for c in as_json["samples"][0]["judgements"]] == ["right", "wrong", "right"]
    page = (run_dir / "report.html")
    assert call_benchrun("report", str(run_dir), cwd=tmp_path, module="benchrun.audit").returncode == EXIT["ok"]
    html = page.read_text()
    assert f"<pre>qwen2.5  name qwen2.5:latest  digest {fake_digest('qwen2.5')}  server 0.12.6</pre>" in html
    assert ("<pre>names with itself (3 repeats): 0.000 (kappa -0.500, 3 answers)\n"
            "names with contains: 0.333 (kappa 0.000, 3 answers)</pre>") in html


def test_a_reply_that_does_not_parse_is_that_answers_scorer_error_with_the_reply_kept(tmp_path):
    def garbled(req: ChatRequest) -> str:
        return "I think it is right" if req.model.startswith("qwen2.5") else answer(req)

    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=garbled) as server:
        result = run(tmp_path, server, "cache=false")
    run_dir = run_dir_of(result.stdout)
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["counts"]["scorer_errors"]) == ("completed_with_errors", 3)
    [call] = [c for c in read_jsonl(run_dir / "judgements.jsonl") if c["id"] == "symbol:symb=@"]
    assert (call["reply"], call["grade"], call["value"]) == ("I think it is right", None, None)
    assert call["error"]["type"] == "JudgeReplyInvalid"
    [score] = [s for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "names" and s["id"] == call["id"]]
    assert score["metrics"] is None and score["error"]["message"].startswith("1 of 1 judgements give no grade: the "
                                                                             "judge's reply is not JSON")
    shown = call_benchrun("show", str(run_dir), "--failed", cwd=tmp_path, module="benchrun.audit").stdout
    [line] = [line for line in shown.splitlines() if line.startswith("  judge ")][:1]
    assert line.startswith("  judge     names#0: error JudgeReplyInvalid: ") and line.endswith(
        "; reply 'I think it is right'")


@pytest.mark.parametrize(("change", "message"), [
    ({"tasks": TASKS.replace("judge: names", "judge: nams")},
     "in 'tasks.yml': task 'symbol': tasks[0].judge: unknown judge 'nams' (did you mean 'names'?)"),
    ({"judges": JUDGES.replace("  score:", "  scroe:")},
     "in 'judges.yml': judges[0].scroe: unknown key 'scroe' (did you mean 'score'?)"),
    ({"judges": JUDGES.replace("{prompt}", "{prompt:>9999999999}")},
     "in 'judges.yml': judges[0].rubric: field {prompt:>9999999999}: a rubric's field takes no format spec (a width "
     "could ask for any size)"),
    ({"judges": JUDGES.replace("{prompt}", "{prompt.__class__}")},
     "in 'judges.yml': judges[0].rubric: field {prompt.__class__}: only a plain name can stand in a field"),
    ({"judges": JUDGES.replace("{reference}", "{referens}")},
     "in 'judges.yml': judges[0].rubric: field {referens} of judge 'names' is neither the answer's nor a value of "
     "task 'symbol' (unknown field 'referens' (did you mean 'reference'?))"),
    ({"tasks": TASKS.replace("symb:", "chat:").replace("{symb}", "{chat}"), "judges": JUDGES.replace("{prompt}", "{chat}")},
     "in 'judges.yml': judges[0].rubric: field {chat} of judge 'names' is both the answer's chat and a value of task "
     "'symbol'; rename the value"),
    ({"judges": JUDGES.replace("score: verdict", "score: grade")},
     "in 'judges.yml': judges[0].score: unknown field 'grade' (allowed: verdict) of format 'Verdict'"),
    ({"judges": JUDGES.replace("{right: 1, wrong: 0}", "{right: 1}")},
     "in 'judges.yml': judges[0].scores: scores must give each value of field 'verdict' (right, wrong) a number: "
     "missing wrong"),
])
def test_a_judge_that_cannot_work_is_refused_at_compile_in_one_line(tmp_path, change, message):
    bench(tmp_path, change.get("judges", JUDGES), change.get("tasks", TASKS))
    result = call_benchrun("task.path=bench", "judge.model=qwen2.5", "dry_run=true", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {message}\n")


def test_a_task_with_a_judge_and_no_judge_model_is_refused(tmp_path):
    bench(tmp_path)
    result = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], "benchrun: error: in 'config': judge.model: task "
                                                  "'symbol' is graded by judge 'names': name the judge model with "
                                                  "judge.model=...\n")


def test_a_rescore_asks_the_judges_again_of_another_judge_model_and_records_it(tmp_path):
    def two_judges(req: ChatRequest) -> str:
        return verdict(req, False) if req.model.startswith("gemma3") else answer(req)

    with FakeOllama(models=["llama3.2", "qwen2.5", "gemma3"], responder=two_judges) as server:
        run_dir = run_dir_of(run(tmp_path, server, "cache=false").stdout)
        rescored = call_benchrun("rescore", str(run_dir), "--rejudge", "judge.model=gemma3", "--json", cwd=tmp_path,
                                 module="benchrun.audit")
        wrong = call_benchrun("rescore", str(run_dir), "--rejudge", "model=gemma3", cwd=tmp_path,
                              module="benchrun.audit")
    assert rescored.returncode == EXIT["ok"], rescored.stderr
    result = json.loads(rescored.stdout)
    out = Path(result["dir"])
    assert [s["metrics"] for s in read_jsonl(out / "scores.jsonl") if s["scorer"] == "names"] == [{"names": 0}] * 3
    assert [c["grade"] for c in read_jsonl(out / "judgements.jsonl")] == ["wrong"] * 3
    info = json.loads((out / "rescore.json").read_text())
    assert info["judge"]["identity"]["digest"] == fake_digest("gemma3")
    assert info["judge"]["runner"]["model"] == "gemma3" and "judgements.jsonl" in info["files"]
    assert [(c["id"], c["metric"], c["old"], c["new"]) for c in result["changed"]] == [
        ("symbol:symb=@", "names", 1, 0), ("symbol:symb=$", "names", 1, 0)]
    assert (wrong.returncode, wrong.stderr) == (EXIT["usage"], "benchrun: error: --rejudge takes judge.KEY=VALUE "
                                                               "overrides, not 'model=gemma3'\n")


def test_a_retry_carries_the_parents_judgements_and_judges_what_it_asks_again(tmp_path):
    broken = {"fixed": False}

    def flaky(req: ChatRequest):
        if not req.model.startswith("qwen2.5") and req.prompt.endswith("#") and not broken["fixed"]:
            return Reply(status=400, error="cannot answer")
        return answer(req)

    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=flaky) as server:
        parent = run_dir_of(run(tmp_path, server, "cache=false").stdout)
        broken["fixed"] = True
        asked = len(judge_requests(server))
        retried = call_benchrun("retry", str(parent), cwd=tmp_path, module="benchrun.audit")
        assert retried.returncode == EXIT["ok"], retried.stderr
        assert len(judge_requests(server)) == asked + 1, "only the answer asked again is judged"
    child = parent.with_name(parent.name + ".retry1")
    calls = read_jsonl(child / "judgements.jsonl")
    parent_id = json.loads((parent / "run.json").read_text())["run_id"]
    assert [(c["id"], c["grade"], c.get("carried_from")) for c in calls] == [
        ("symbol:symb=@", "right", parent_id), ("symbol:symb=$", "right", parent_id),
        ("symbol:symb=#", "wrong", None)]
    assert json.loads((child / "run.json").read_text())["judge"]["identity"]["digest"] == fake_digest("qwen2.5")
    verified = call_benchrun("verify", str(child), cwd=tmp_path, module="benchrun.audit")
    assert verified.returncode == EXIT["ok"], verified.stdout + verified.stderr
    summary = {(m["task"], m["metric"]): m for m in json.loads((child / "summary.json").read_text())["metrics"]}
    assert (summary["symbol", "names"]["mean"], summary["symbol", "names"]["n"]) == (2 / 3, 3)


def test_compare_reports_the_judge_models_identity_when_two_runs_differ(tmp_path):
    with FakeOllama(models=["llama3.2", "qwen2.5", "gemma3"], responder=answer_or_judge) as server:
        first = run_dir_of(run(tmp_path, server, "cache=false").stdout)
        second = run_dir_of(run(tmp_path, server, "cache=false", "judge.model=gemma3").stdout)
    inputs = compare([load_run(first), load_run(second)]).comparisons[0].inputs
    assert inputs.provenance.changed == {"judge.name": ("qwen2.5:latest", "gemma3:latest"),
                                         "judge.digest": (fake_digest("qwen2.5"), fake_digest("gemma3"))}
    assert inputs.judges.changed == {"model.runner.model": ("qwen2.5", "gemma3")}
    shown = call_benchrun("compare", str(first), str(second), cwd=tmp_path, module="benchrun.audit").stdout
    assert '  judge model.runner.model: "qwen2.5" -> "gemma3"' in shown.splitlines()
    assert '  provenance judge.name: "qwen2.5:latest" -> "gemma3:latest"' in shown.splitlines()


def answer_or_judge(req: ChatRequest) -> str:
    """llama3.2 answers; qwen2.5 and gemma3 both judge by rule."""
    return answer(replace(req, model="qwen2.5") if req.model.startswith("gemma3") else req)


@pytest.mark.parametrize(("args", "code", "message"), [
    (("judge.host=http://127.0.0.1:1",), "runner",
     "benchrun: error: the judge model: cannot reach Ollama at http://127.0.0.1:1 (ConnectionError); start it with "
     "`ollama serve`, or point judge.host at a running server\n"),
    (("judge.model=gemma3",), "runner",
     "benchrun: error: the judge model: model 'gemma3' is not pulled on {url} (it has: llama3.2:latest, "
     "qwen2.5:latest); run `ollama pull gemma3` or pick another judge.model\n"),
    (("judge.repeats=0",), "usage",
     "benchrun: error: in 'config': judge.repeats: 0 is out of bounds: give at least 1\n"),
])
def test_a_judge_model_that_cannot_be_used_is_refused_naming_the_judges_key(tmp_path, server, args, code, message):
    refused = run(tmp_path, server, "cache=false", *args)
    assert (refused.returncode, refused.stderr) == (EXIT[code], message.format(url=server.url))
    for responses in (tmp_path / "outputs").rglob("responses.jsonl"):
        assert responses.read_bytes() == b"", "nothing is asked before the judge model answers its preflight"


def test_a_dry_run_counts_the_judge_calls_beside_the_model_calls(tmp_path):
    bench(tmp_path)
    result = call_benchrun("task.path=bench", "dry_run=true", "judge.model=qwen2.5", "judge.repeats=3", "repeats=2",
                           "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    assert result.stdout.splitlines()[-2] == (
        "1 task, 3 samples x 2 repeats -> 6 model calls and 18 judge calls (dry run: no model was called)")


def test_a_rubric_can_show_the_judge_the_whole_chat_the_model_was_asked(tmp_path, server):
    """`{chat}`: the system prompt and few-shot turns before the question, each turn its role, then its text fenced."""
    tasks = TASKS.replace("  judge: names\n", "  judge: names\n  system: Answer in one word.\n  fewshot:\n"
                          "    - {user: 'what is the name for the following symbol? &', assistant: ampersand}\n")
    judges = JUDGES.replace(json.dumps(RUBRIC), json.dumps("{chat}\nAnswer: {response}\nReference: {reference}"))
    bench(tmp_path, judges=judges, tasks=tasks)
    result = call_benchrun("task.path=bench", f"runner.host={server.url}", f"outputs={tmp_path / 'outputs'}",
                           "judge.model=qwen2.5", "cache=false", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    calls = read_jsonl(run_dir_of(result.stdout) / "judgements.jsonl")
    assert calls[2]["messages"] == [{"role": "user", "content": (
        "system:\n```\nAnswer in one word.\n```\n\nuser:\n```\nwhat is the name for the following symbol? &\n```"
        "\n\nassistant:\n```\nampersand\n```\n\nuser:\n```\nwhat is the name for the following symbol? #\n```\n"
        "Answer: \n```response\n{\"answer\": \"hash\"}\n```\nReference: \n```reference\npound\n```")}]


def test_a_judge_call_past_the_judges_own_limits_names_the_judges_key(tmp_path):
    def long_judge(req: ChatRequest) -> str:
        return json.dumps({"verdict": "right", "why": "x" * 2000}) if req.model.startswith("qwen2.5") else answer(req)

    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=long_judge) as fake:
        result = run(tmp_path, fake, "cache=false", "+judge.max_response_bytes=1024", "+judge.retries=0")
    assert result.returncode == EXIT["ok"], result.stderr
    calls = read_jsonl(run_dir_of(result.stdout) / "judgements.jsonl")
    assert {(c["error"]["type"], c["error"]["message"]) for c in calls} == {
        ("TooLarge", "the answer is longer than judge.max_response_bytes (1,024 bytes); the rest was not read")}
