"""End to end: `python -m benchrun` (called in this process) against a loopback Ollama-API server."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from benchrun.core.errors import EXIT
from benchrun.core.resources import demos_dir
from benchrun.testing.lab import untimed_records, untimed_summary
from benchrun.testing.ollama_server import FakeOllama, Reply, fake_digest
from tests.helpers.answers import LISTBENCH_SUMMARY, listbench_answer
from tests.helpers.archives import read_jsonl, summary_of, validator
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of, sweep_dir_of

pytestmark = pytest.mark.slow


@pytest.fixture
def server():
    with FakeOllama(models=["llama3.2", "gemma3"], responder=listbench_answer, version="0.12.6") as srv:
        yield srv


def scores_by(run_dir: Path) -> dict[tuple[str, str], dict]:
    return {(s["id"], s["scorer"]): s for s in read_jsonl(run_dir / "scores.jsonl")}


def test_listbench_end_to_end(server, tmp_path):
    result = bench_run(tmp_path, server.url)
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    assert run_dir.parent.parent == tmp_path / "outputs"
    assert run_dir.name.endswith("_listbench_llama3.2")

    scores = scores_by(run_dir)
    assert len(scores) == 3 * 2 + 9 * 3 + 3 * 2 + 3 * 2
    assert {i: scores[i, "calculated_answer"]["metrics"] for i in ("product:a=2,b=3", "product:a=3,b=4",
                                                                   "product:a=5,b=5")} == {
        "product:a=2,b=3": {"calculated_answer": 1}, "product:a=3,b=4": {"calculated_answer": 0},
        "product:a=5,b=5": {"calculated_answer": 1}}
    assert scores["product_combination:a=2,b=5", "add_justify"]["metrics"] == {"add_justify": 1}
    assert scores["product_combination:a=5,b=5", "calculated_answer"]["metrics"] == {"calculated_answer": 0}
    assert scores["symbol:symb=$,exmeta=world", "contains"]["metrics"] == {"contains": 0}
    assert scores["symbol_dir:symb=<,name=less,direction=left", "check_name_dir"]["metrics"] == {
        "check_name_dir.name": 1, "check_name_dir.direction": 0}
    assert all(s["error"] is None for s in scores.values())

    summary = summary_of(run_dir)
    assert summary.keys() == LISTBENCH_SUMMARY.keys()
    for key, (n, mean, stderr, errors) in LISTBENCH_SUMMARY.items():
        assert summary[key] == (n, pytest.approx(mean, abs=1e-12), pytest.approx(stderr, abs=1e-12), errors), key

    assert "│ symbol_dir          │ check_name_dir.name      │ 0.667 │  0.333 │ 3 │      0 │" in result.stdout
    assert "completed: 18/18 samples, 0 request errors, 0 scorer errors, 0 invalid formats" in result.stdout


def test_run_directory_contract(server, tmp_path):
    result = bench_run(tmp_path, server.url, "runner.concurrency=3", "runner.keep_alive=5m")
    run_dir = run_dir_of(result.stdout)
    manifest_bytes = (run_dir / "manifest.json").read_bytes()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["manifest_id"] == hashlib.sha256(manifest_bytes).hexdigest()
    assert info["status"] == "completed" and info["reason"] is None
    assert info["benchmark"] == "listbench" and info["model"] == "llama3.2"
    assert info["overrides"] == [f"runner.host={server.url}", f"outputs={tmp_path / 'outputs'}",
                                 "runner.concurrency=3", "runner.keep_alive=5m"]
    assert info["identity"]["digest"] == fake_digest("llama3.2")
    assert info["identity"]["server_version"] == "0.12.6"
    assert info["identity"]["details"]["family"] == "llama"
    assert info["runner"]["host"] == server.url and info["runner"]["concurrency"] == 3
    assert info["environment"]["packages"]["ollama"]
    assert info["counts"] == {"samples": 18, "responses": 18, "request_errors": 0, "scorer_errors": 0,
                              "format_invalid": 0, "cached": 0}
    for name in ("responses.jsonl", "scores.jsonl"):
        data = (run_dir / name).read_bytes()
        assert info["files"][name] == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                                       "lines": data.count(b"\n")}
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["runner"]["model"] == "llama3.2" and config["runner"]["keep_alive"] == "5m"

    validator("manifest").validate(json.loads(manifest_bytes))
    validator("run").validate(info)
    validator("summary").validate(json.loads((run_dir / "summary.json").read_text()))
    for line in read_jsonl(run_dir / "responses.jsonl"):
        validator("response").validate(line)
    for line in read_jsonl(run_dir / "scores.jsonl"):
        validator("score").validate(line)

    chats = [r for r in server.requests if r["path"] == "/api/chat"]
    assert len(chats) == 18
    assert {json.dumps(r["options"], sort_keys=True) for r in chats} == {'{"seed": 0, "temperature": 0}'}
    assert {r["keep_alive"] for r in chats} == {"5m"}
    assert {r["format"]["title"] for r in chats} == {"IntAnswer", "IntJustification", "StringAnswer", "NameSource"}


def test_folderbench_end_to_end(server, tmp_path):
    result = bench_run(tmp_path, server.url, "task=folderbench")
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    scores = scores_by(run_dir)
    assert {i: scores[i, "exact_match"]["metrics"]["exact_match"] for i, _ in scores if _ == "exact_match"} == {
        "add:a=2,b=3": 1, "add:a=4,b=5": 1, "add:a=8,b=9": 0}
    assert summary_of(run_dir)[("add", "exact_match")] == (3, pytest.approx(2 / 3), pytest.approx(1 / 3), 0)


def test_unreachable_server_is_one_line_and_recorded(tmp_path):
    with FakeOllama() as srv:
        url = srv.url
    result = bench_run(tmp_path, url)
    assert result.returncode == EXIT["runner"]
    message = (f"cannot reach Ollama at {url} (ConnectionError); start it with `ollama serve`, "
               "or point runner.host at a running server")
    assert result.stderr == f"benchrun: error: {message}\n"
    [run_json] = (tmp_path / "outputs").glob("*/*/run.json")
    info = json.loads(run_json.read_text())
    assert (info["status"], info["reason"]) == ("failed", message)


def test_model_not_pulled_lists_the_models(server, tmp_path):
    result = bench_run(tmp_path, server.url, "runner.model=mistral")
    assert result.returncode == EXIT["runner"]
    message = (f"model 'mistral' is not pulled on {server.url} (it has: gemma3:latest, llama3.2:latest); "
               "run `ollama pull mistral` or pick another runner.model")
    assert result.stderr == f"benchrun: error: {message}\n"
    [run_json] = (tmp_path / "outputs").glob("*/*/run.json")
    assert json.loads(run_json.read_text())["reason"] == message


def flaky(req):
    """500 on the first attempt of every symbol prompt; 503 always for '$'; answers otherwise."""
    if req.prompt.endswith("$"):
        return Reply(status=503, error="server busy")
    if "symbol?" in req.prompt and req.attempt == 1:
        return Reply(status=500, error="boom")
    return listbench_answer(req)


def test_server_errors_are_retried_and_recorded(tmp_path):
    with FakeOllama(responder=flaky) as srv:
        result = bench_run(tmp_path, srv.url, "runner.retries=2", "runner.backoff_s=0.01", "task.only=[symbol]")
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    responses = {r["id"]: r for r in read_jsonl(run_dir / "responses.jsonl")}
    at = responses["symbol:symb=@,exmeta=internet"]
    assert (at["attempts"], at["text"], at["error"]) == (2, '{"answer": "at"}', None)
    assert [a["error"] for a in at["failed_attempts"]] == [{"type": "ResponseError", "message": "HTTP 500: boom"}]
    dollar = responses["symbol:symb=$,exmeta=world"]
    assert (dollar["attempts"], dollar["text"]) == (3, None)
    assert dollar["error"] == {"type": "ResponseError", "message": "HTTP 503: server busy"}
    assert [a["number"] for a in dollar["failed_attempts"]] == [1, 2, 3]
    scores = scores_by(run_dir)
    assert scores["symbol:symb=$,exmeta=world", "contains"]["error"] == {
        "type": "NoResponse", "message": "no response: HTTP 503: server busy"}
    assert summary_of(run_dir)[("symbol", "contains")] == (2, 1.0, 0.0, 1)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "completed_with_errors"
    assert info["counts"]["request_errors"] == 1
    assert "completed_with_errors: 3/3 samples, 1 request errors" in result.stdout


def test_a_request_that_times_out(tmp_path):
    def slow_hash(req):
        return Reply(content='{"answer": "pound"}', delay_s=3) if req.prompt.endswith("#") else listbench_answer(req)

    with FakeOllama(responder=slow_hash) as srv:
        result = bench_run(tmp_path, srv.url, "runner.timeout_s=0.5", "runner.retries=1", "runner.backoff_s=0.01",
                           "task.only=[symbol]")
    responses = {r["id"]: r for r in read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")}
    timed_out = responses["symbol:symb=#,exmeta=internet"]
    assert timed_out["text"] is None and timed_out["attempts"] == 2
    assert timed_out["error"] == {"type": "TimeoutError", "message": "no answer within 0.5 s"}
    assert [a["error"]["type"] for a in timed_out["failed_attempts"]] == ["TimeoutError", "TimeoutError"]


def test_invalid_json_and_a_raising_scorer_are_recorded(tmp_path):
    bench = tmp_path / "bench"
    shutil.copytree(demos_dir() / "listbench", bench)
    with open(bench / "custom_scorer.py", "a") as handle:
        handle.write("\ndef picky(response, values):\n    raise ValueError(f\"no score for {values['a']}\")\n")
    tasks = (bench / "tasks.yml").read_text().replace('scorer: "calculated_answer"\n',
                                                       'scorer: [calculated_answer, picky]\n', 1)
    (bench / "tasks.yml").write_text(tasks)

    def garbled(req):
        return "the answer is 6" if req.prompt == "find the product of 2 and 3" else listbench_answer(req)

    with FakeOllama(responder=garbled) as srv:
        result = bench_run(tmp_path, srv.url, "task.path=bench", "task.only=[product]")
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    scores = scores_by(run_dir)
    bad = "product:a=2,b=3"
    assert scores[bad, "format_valid"]["metrics"] == {"format_valid": 0}
    assert scores[bad, "format_valid"]["detail"] == "invalid JSON: Expecting value: line 1 column 1 (char 0)"
    assert scores[bad, "calculated_answer"]["error"] == {
        "type": "JSONDecodeError", "message": "Expecting value: line 1 column 1 (char 0)"}
    assert scores["product:a=3,b=4", "picky"]["error"] == {"type": "ValueError", "message": "no score for 3"}
    assert summary_of(run_dir)[("product", "picky")] == (0, None, None, 3)
    assert summary_of(run_dir)[("product", "calculated_answer")] == (2, 0.5, 0.5, 1)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "completed_with_errors"
    assert info["counts"]["scorer_errors"] == 4 and info["counts"]["format_invalid"] == 1


def test_concurrency_does_not_change_the_records(server, tmp_path):
    runs = [run_dir_of(bench_run(tmp_path, server.url, f"runner.concurrency={n}", "cache=false").stdout)
            for n in (1, 8)]
    for name in ("responses.jsonl", "scores.jsonl"):
        assert untimed_records(runs[0], name) == untimed_records(runs[1], name)
    assert untimed_summary(runs[0]) == untimed_summary(runs[1])
    assert (runs[0] / "manifest.json").read_bytes() == (runs[1] / "manifest.json").read_bytes()


def test_two_model_sweep(server, tmp_path):
    result = bench_run(tmp_path, server.url, "runner.model=llama3.2,gemma3", "task=folderbench", multirun=True)
    assert result.returncode == EXIT["ok"], result.stderr
    sweep_dir = sweep_dir_of(result.stdout)
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir()) == ["0_llama3.2", "1_gemma3"]
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    validator("sweep").validate(sweep)
    assert [(j["dir"], j["model"], j["status"]) for j in sweep["jobs"]] == [
        ("0_llama3.2", "llama3.2", "completed"), ("1_gemma3", "gemma3", "completed")]
    [line] = [m for m in sweep["metrics"] if m["metric"] == "exact_match"]
    assert {job: s["mean"] for job, s in line["jobs"].items()} == pytest.approx({"0_llama3.2": 2 / 3, "1_gemma3": 2 / 3})
    assert "│ add  │ exact_match  │ 0.667 ± 0.333 (n=3) │ 0.667 ± 0.333 (n=3) │" in result.stdout


def test_a_failed_sweep_job_is_listed_and_fails_the_sweep(server, tmp_path):
    result = bench_run(tmp_path, server.url, "runner.model=llama3.2,mistral", "task=folderbench", multirun=True)
    assert result.returncode == EXIT["sweep_failed"]
    sweep = json.loads((sweep_dir_of(result.stdout) / "sweep.json").read_text())
    assert [(j["model"], j["status"]) for j in sweep["jobs"]] == [("llama3.2", "completed"), ("mistral", "failed")]
    assert sweep["jobs"][1]["reason"].startswith("model 'mistral' is not pulled")
    assert "job 1_mistral (mistral) failed: model 'mistral' is not pulled" in result.stdout


def test_seed_runner_file_with_two_models(server, tmp_path):
    result = bench_run(tmp_path, server.url, "task=folderbench", "runner_file=multiple_models.yml")
    assert result.returncode == EXIT["ok"], result.stderr
    sweep_dir = sweep_dir_of(result.stdout)
    jobs = json.loads((sweep_dir / "sweep.json").read_text())["jobs"]
    assert [(j["dir"], j["model"], j["status"]) for j in jobs] == [
        ("0_llama3.2", "llama3.2", "completed"), ("1_gemma3", "gemma3", "completed")]
    for job in jobs:
        assert json.loads((sweep_dir / job["dir"] / "run.json").read_text())["sweep"] == str(sweep_dir)


def test_progress_bar_on_a_terminal(tmp_path):
    with FakeOllama(responder=flaky) as srv:
        result = call_benchrun(f"runner.host={srv.url}", f"outputs={tmp_path / 'outputs'}", "task.only=[symbol]",
                               "runner.retries=0", cwd=tmp_path, env={"TTY_COMPATIBLE": "1", "NO_COLOR": "1"})
    assert result.returncode == EXIT["ok"], result.stderr
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", result.stdout)
    last = [line for line in plain.splitlines() if "asking" in line][-1]
    assert re.fullmatch(r"asking ━+ 3/3 errors 3 \d+\.\d/s 0:00:0\d", last.strip()), last


def test_a_model_list_goes_on_after_a_failed_model(server, tmp_path):
    result = bench_run(tmp_path, server.url, "task=folderbench", "runner.model=[mistral,gemma3]")
    assert result.returncode == EXIT["sweep_failed"]
    assert result.stderr.startswith("benchrun: error: model 'mistral' is not pulled")
    sweep = json.loads((sweep_dir_of(result.stdout) / "sweep.json").read_text())
    assert [(j["dir"], j["status"]) for j in sweep["jobs"]] == [("0_mistral", "failed"), ("1_gemma3", "completed")]
