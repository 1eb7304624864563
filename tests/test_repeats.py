"""Repeats: each sample asked k times with its own seed (or the same), records identified by (sample id, repeat),
and the statistics of repeated answers against hand-computed values."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import threading
from fractions import Fraction
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.archive.tally import clustered_stderr, pass_at_k
from benchrun.audit.compare import compare
from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import ChatRequest, FakeOllama, Reply
from benchrun.testing.oracle import seeded
from tests.helpers.archives import another_run, read_jsonl, reseal
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of

SUMS = {(2, 3): 5, (4, 5): 9, (8, 9): 17}


by_seed = seeded
"""The loopback server's --by-seed answers: wrong for a seed one more than a multiple of 3, so each sample gets 2 of
3 right with seeds 0, 1, 2."""


def ask_again(srv: FakeOllama, command: str, run_dir: Path) -> tuple[subprocess.CompletedProcess, list]:
    """`benchrun-audit COMMAND RUN` with the server now answering by seed: its result, and the (prompt, seed) of
    each chat request it made."""
    srv.responder = by_seed
    before = len(srv.requests)
    result = call_benchrun(command, str(run_dir), "--host", srv.url, cwd=run_dir.parent, module="benchrun.audit")
    return result, [(r["messages"][0]["content"], r["options"]["seed"]) for r in srv.requests[before:]
                    if r["path"] == "/api/chat"]


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (3, 0, 3, 0.0), (3, 1, 3, 1.0), (5, 2, 3, 1 - 1 / 10), (5, 1, 2, 1 - 6 / 10), (4, 4, 1, 1.0), (10, 3, 1, 0.3),
])
def test_pass_at_k_is_chens_estimator(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_the_clustered_standard_error_by_hand():
    assert clustered_stderr([(2, 2), (2, 0)]) == pytest.approx(0.5)  # sqrt(2/1 * ((2-1)^2 + (0-1)^2)) / 4
    assert clustered_stderr([(3, 2), (3, 2)]) == 0.0  # identical clusters: no spread between samples
    one_each = [(1, 1), (1, 0), (1, 1)]  # one answer per sample: the sample sd / sqrt(n) of 1, 0, 1
    assert clustered_stderr(one_each) == pytest.approx((1 / 3) ** 0.5 / 3 ** 0.5)
    assert clustered_stderr([(3, Fraction(3, 2))]) is None


def test_each_sample_is_asked_k_times_with_its_own_seed(tmp_path):
    with FakeOllama(responder=by_seed) as srv:
        result = bench_run(tmp_path, srv.url, "task=folderbench", "repeats=3")
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    chats = [r for r in srv.requests if r["path"] == "/api/chat"]
    assert [(c["messages"][0]["content"], c["options"]["seed"]) for c in chats] == [
        (f"what is {a} + {b}?", seed) for (a, b), seed in itertools.product(SUMS, range(3))]
    responses = read_jsonl(run_dir / "responses.jsonl")
    assert [(r["id"], r["repeat"]) for r in responses] == [
        (f"add:a={a},b={b}", repeat) for (a, b), repeat in itertools.product(SUMS, range(3))]
    assert {(s["id"], s["repeat"]) for s in read_jsonl(run_dir / "scores.jsonl")} == {
        (r["id"], r["repeat"]) for r in responses}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["repeats"] == 3 and summary["consistency"] == {"add": 0.0}
    assert summary["metrics"][0] == {"task": "add", "metric": "exact_match", "n": 9, "mean": pytest.approx(2 / 3),
                                     "stderr": 0.0, "errors": 0, "binary": True, "samples": 3, "pass_at_k": 1.0,
                                     "majority_at_k": 1.0}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["repeats"] == {"k": 3, "seeds": "vary"}
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["counts"]["samples"], info["counts"]["responses"]) == (9, 9)
    assert "completed: 9/9 answers" in result.stdout
    assert "llama3.2 · 3 answers per sample" in result.stdout


def test_the_same_seed_tells_a_deterministic_server_from_one_that_is_not(tmp_path):
    calls = itertools.count()

    def drifting(req: ChatRequest) -> str:  # a server whose answer changes from call to call whatever the seed
        return json.dumps({"answer": str(SUMS[tuple(map(int, re.findall(r"\d+", req.prompt)))] + next(calls) % 2)})

    summaries = {}
    for name, responder in (("deterministic", by_seed), ("drifting", drifting)):
        (tmp_path / name).mkdir()
        with FakeOllama(responder=responder) as srv:
            result = bench_run(tmp_path / name, srv.url, "task=folderbench", "repeats=4", "repeat_seeds=same",
                               "cache=false")  # both servers are asked: their model has the same digest
        assert result.returncode == EXIT["ok"], result.stderr
        assert {c["options"]["seed"] for c in srv.requests if c["path"] == "/api/chat"} == {0}
        summaries[name] = json.loads((run_dir_of(result.stdout) / "summary.json").read_text())
    assert summaries["deterministic"]["consistency"] == {"add": 1.0}
    assert summaries["deterministic"]["metrics"][0]["pass_at_k"] == 1.0
    assert summaries["drifting"]["consistency"] == {"add": 0.0}
    first = summaries["drifting"]["metrics"][0]  # calls 0..11: right on even calls, so 2 of each sample's 4
    assert (first["mean"], first["pass_at_k"], first["majority_at_k"]) == (0.5, 1.0, 0.0)


def test_one_answer_per_sample_is_written_as_before(tmp_path):
    with FakeOllama(responder=by_seed) as srv:
        result = bench_run(tmp_path, srv.url, "task=folderbench")
    run_dir = run_dir_of(result.stdout)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert "repeats" not in summary and "consistency" not in summary
    assert list(summary["metrics"][0]) == ["task", "metric", "n", "mean", "stderr", "errors", "binary"]
    assert "repeats" not in json.loads((run_dir / "manifest.json").read_text())
    assert {r["repeat"] for r in read_jsonl(run_dir / "responses.jsonl")} == {0}
    assert "completed: 3/3 samples" in result.stdout


def test_retry_asks_only_the_failed_repeat(tmp_path):
    def third_repeat_of_8_fails(req: ChatRequest) -> Reply | str:
        if req.prompt == "what is 8 + 9?" and req.options.get("seed") == 2:
            return Reply(status=400, error="no")
        return by_seed(req)

    with FakeOllama(responder=third_repeat_of_8_fails) as srv:
        result = bench_run(tmp_path, srv.url, "task=folderbench", "repeats=3")
        run_dir = run_dir_of(result.stdout)
        retried, asked = ask_again(srv, "retry", run_dir)
    assert retried.returncode == EXIT["ok"], retried.stderr
    assert asked == [("what is 8 + 9?", 2)]
    child = run_dir.with_name(run_dir.name + ".retry1")
    info = json.loads((child / "run.json").read_text())
    assert (info["parent"]["carried"], info["parent"]["asked"]) == (8, 1)
    assert json.loads((child / "summary.json").read_text())["metrics"][0]["n"] == 9


def test_compare_pairs_samples_on_the_mean_of_their_repeats(tmp_path):
    runs = []
    for name, extra in (("once", ()), ("thrice", ("repeats=3",))):
        (tmp_path / name).mkdir()
        with FakeOllama(responder=by_seed) as srv:
            runs.append(run_dir_of(bench_run(tmp_path / name, srv.url, "task=folderbench", *extra).stdout))
    result = call_benchrun("compare", *map(str, runs), "--json", cwd=tmp_path, module="benchrun.audit")
    assert result.returncode == EXIT["ok"], result.stderr
    line = next(m for m in json.loads(result.stdout)["comparisons"][0]["metrics"] if m["metric"] == "exact_match")
    assert (line["n"], line["baseline_mean"], line["delta"], line["test"]) == (
        3, 1.0, pytest.approx(-1 / 3), "permutation")


def test_resume_asks_the_missing_repeats_with_their_seeds(tmp_path):
    calls = itertools.count()

    def lost_after_four(req: ChatRequest) -> Reply | str:
        if next(calls) < 4:
            return by_seed(req)
        threading.Thread(target=srv.stop).start()  # the server goes away
        return Reply(drop=True)

    with FakeOllama(responder=lost_after_four) as srv:
        result = bench_run(tmp_path, srv.url, "task=folderbench", "repeats=3", "runner.retries=0",
                           "runner.concurrency=1")
        assert result.returncode == EXIT["runner"], result.stderr
        [run_dir] = (tmp_path / "outputs").glob("*/*")
        srv.start()
        resumed, asked = ask_again(srv, "resume", run_dir)
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    assert asked == [("what is 4 + 5?", 1), ("what is 4 + 5?", 2), ("what is 8 + 9?", 0), ("what is 8 + 9?", 1),
                     ("what is 8 + 9?", 2)]
    assert [(r["id"], r["repeat"]) for r in read_jsonl(run_dir / "responses.jsonl")] == [
        (f"add:a={a},b={b}", repeat) for (a, b), repeat in itertools.product(SUMS, range(3))]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["metrics"][0]["n"], summary["metrics"][0]["mean"]) == (9, pytest.approx(2 / 3))
    verified = call_benchrun("verify", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert verified.returncode == EXIT["ok"], verified.stdout


def test_show_and_the_report_give_pass_at_k_majority_and_consistency(tmp_path):
    with FakeOllama(responder=by_seed) as srv:
        run_dir = run_dir_of(bench_run(tmp_path, srv.url, "task=folderbench", "repeats=3").stdout)
    shown = call_benchrun("show", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert shown.returncode == EXIT["ok"], shown.stderr
    header, row = [line.split() for line in shown.stdout.splitlines() if "exact_match" in line or "pass@k" in line]
    assert header[-6:] == ["pass@k", "┃", "majority@k", "┃", "consistency", "┃"]
    assert row == ["│", "add", "│", "exact_match", "│", "9", "│", "0.667", "│", "0.152–0.957", "│", "wilson-kg", "│", "0",
                   "│", "1.000", "│", "1.000", "│", "0.000", "│"]
    as_json = json.loads(call_benchrun("show", str(run_dir), "--json", cwd=tmp_path, module="benchrun.audit").stdout)
    assert as_json["consistency"] == {"add": 0.0}
    assert {m["metric"]: m["pass_at_k"] for m in as_json["metrics"]} == {"exact_match": 1.0, "format_valid": 1.0}
    samples = call_benchrun("show", str(run_dir), "--samples", cwd=tmp_path, module="benchrun.audit").stdout
    assert [line for line in samples.splitlines() if line.startswith("add:a=2")] == [
        "add:a=2,b=3  [add]", "add:a=2,b=3 repeat 1  [add]", "add:a=2,b=3 repeat 2  [add]"]
    report = tmp_path / "report.html"
    made = call_benchrun("report", str(run_dir), "--output", str(report), cwd=tmp_path, module="benchrun.audit")
    assert made.returncode == EXIT["ok"], made.stderr
    html = report.read_text()
    assert html.count("pass@k 1.000, majority@k 1.000") == 2
    assert "<pre>3 answers per sample</pre>" in html and "<pre>add 0.000</pre>" in html
    assert html.count('<div class="sub">repeat 2</div>') == 3


def test_the_cache_keeps_each_repeat_apart(tmp_path):
    runs = []
    with FakeOllama(responder=by_seed) as srv:
        for name in ("first", "again"):
            (tmp_path / name).mkdir()
            runs.append(run_dir_of(bench_run(tmp_path / name, srv.url, "task=folderbench", "repeats=3",
                                             "repeat_seeds=same").stdout))
    chats = [r for r in srv.requests if r["path"] == "/api/chat"]
    assert len(chats) == 9  # the first run asks every repeat, though all have seed 0; the second asks nothing
    first_id = json.loads((runs[0] / "run.json").read_text())["run_id"]
    again = read_jsonl(runs[1] / "responses.jsonl")
    assert [(r["repeat"], r["cached_from"]) for r in again] == [(i, first_id) for i in range(3)] * 3
    assert json.loads((runs[1] / "summary.json").read_text())["metrics"] == json.loads(
        (runs[0] / "summary.json").read_text())["metrics"]


def test_show_takes_the_t_intervals_degrees_of_freedom_from_samples_not_answers(tmp_path):
    def wrong_for_4_and_5(req: ChatRequest) -> str:  # every repeat alike: samples 1, 0, 1 on exact_match
        a, b = map(int, re.findall(r"\d+", req.prompt))
        return json.dumps({"answer": str(a + b + ((a, b) == (4, 5)))})

    with FakeOllama(responder=wrong_for_4_and_5) as srv:
        run_dir = run_dir_of(bench_run(tmp_path, srv.url, "task=folderbench", "repeats=3").stdout)
    shown = call_benchrun("show", str(run_dir), "--json", cwd=tmp_path, module="benchrun.audit")
    line = json.loads(shown.stdout)["metrics"][0]
    # mean 2/3, clustered stderr sqrt(3/2 * ((3-2)^2 + (0-2)^2 + (3-2)^2)) / 9 = 1/3, t(0.975, 3 - 1) = 4.302652...
    # (scipy's t quantile differs from release to release in the 11th digit): Wilson's interval on Korn and Graubard's
    # effective n, (2/3 * 1/3) / (1/3)^2 = 2, times (1.959964 / 4.302652)^2 for the 2 degrees of freedom
    low, high = pytest.approx(0.0438299229852, rel=1e-8), pytest.approx(0.988670077014, rel=1e-8)
    assert line == {"task": "add", "metric": "exact_match", "n": 9, "mean": 0.6666666666666666,
                    "stderr": 0.3333333333333333, "errors": 0, "low": low, "high": high, "interval": "wilson-kg",
                    "pass_at_k": 0.6666666666666666, "majority_at_k": 0.6666666666666666}
    summary = json.loads((run_dir / "summary.json").read_text())
    for metric in summary["metrics"]:  # as written before summary.json gave each metric's samples
        del metric["binary"], metric["samples"]
    (run_dir / "summary.json").write_text(json.dumps(summary))
    reseal(run_dir, "summary.json")
    again = call_benchrun("show", str(run_dir), "--json", cwd=tmp_path, module="benchrun.audit")
    assert json.loads(again.stdout)["metrics"][0] == line
    copy = another_run(run_dir, tmp_path / "copy")  # a run is compared with another run
    compared = compare([load_run(run_dir), load_run(copy)]).comparisons[0].metrics[0]
    assert (compared.metric, compared.test) == ("exact_match", "permutation")  # sample means 1, 0, 1: not answers
