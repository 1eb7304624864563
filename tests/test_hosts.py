"""A run over a list of servers (`runner.host=[...]`, `runner.base_url=[...]`): refused unless every server serves the
model by one digest; work spread to the server with the fewest requests outstanding; a server lost mid-run costs
nothing (its requests go to the others), and only when none is left does the run stop as interrupted."""

from __future__ import annotations

import json
import re
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama, Reply, fake_digest
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import LISTBENCH_SUMMARY, listbench_answer
from tests.helpers.archives import read_jsonl, summary_of
from tests.helpers.auditcli import audit
from tests.helpers.commands import call_benchrun, run_dir_of, squeezed
from tests.helpers.faults import DiesAfter

QUICK = ("cache=false", "runner.backoff_s=0")
BUSY = Reply(status=503, error="overloaded")


def servers(stack, *responders, **options):
    return [stack.enter_context(FakeOllama(models=["llama3.2"], responder=r, **options)) for r in responders]


def run_over(tmp_path, urls, *args):
    return call_benchrun(f"runner.host=[{','.join(urls)}]", *QUICK, f"outputs={tmp_path / 'outputs'}", *args,
                         cwd=tmp_path)


def chats(server):
    return sum(r["path"] == "/api/chat" for r in server.requests)


def test_a_server_lost_mid_run_leaves_its_samples_to_the_others_and_nothing_is_asked_twice(tmp_path):
    dying = DiesAfter(2)
    with ExitStack() as stack:
        first, second, third = servers(stack, listbench_answer, dying, listbench_answer)
        dying.server = second
        result = run_over(tmp_path, [first.url, second.url, third.url])
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    responses = read_jsonl(run_dir / "responses.jsonl")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert sorted(r["id"] for r in responses) == sorted(s["id"] for s in manifest["samples"])
    assert summary_of(run_dir) == LISTBENCH_SUMMARY
    answered = Counter(r["host"] for r in responses)
    assert answered[second.url] == 2 and sum(answered.values()) == 18
    moved = [r for r in responses if r["failed_attempts"]]
    assert moved and all(r["host"] in (first.url, third.url) and r["error"] is None for r in moved)
    assert all(a["error"]["message"].startswith(f"at {second.url}: ") for r in moved for a in r["failed_attempts"])
    assert chats(first) + chats(third) == 18 - 2
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "completed" and info["runner"]["host"] == [first.url, second.url, third.url]
    [lost] = info["history"]
    assert lost["host_lost"] == second.url and lost["reason"].startswith(f"lost the server {second.url}: ")
    assert lost["reason"].endswith("; 2 of 3 servers left")
    assert [h["host"] for h in info["identity"]["hosts"]] == [first.url, second.url, third.url]
    assert {h["digest"] for h in info["identity"]["hosts"]} == {fake_digest("llama3.2")}
    assert f"benchrun: warning: {lost['reason']}; its requests go to the others\n" in result.stderr
    speed = json.loads((run_dir / "summary.json").read_text())["speed"]
    assert {host: figures["n"] for host, figures in speed["hosts"].items()} == dict(answered)
    assert audit(tmp_path, "verify", str(run_dir)).returncode == EXIT["ok"]
    digest = fake_digest("llama3.2")[:12]
    servers_row = "servers" + "".join(f"{s.url}{digest}0.12.6" for s in (first, second, third))
    assert servers_row in squeezed(audit(tmp_path, "show", str(run_dir)).stdout)


def test_servers_that_serve_other_digests_are_refused_before_any_question(tmp_path):
    with ExitStack() as stack:
        servers_ = [*servers(stack, listbench_answer, listbench_answer),
                    *servers(stack, listbench_answer, digests={"llama3.2": "ab" * 32})]
        result = run_over(tmp_path, [s.url for s in servers_])
    same = fake_digest("llama3.2")[:12]
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], f"benchrun: error: the servers of runner.host serve different models as 'llama3.2': "
                        f"{servers_[0].url} digest {same}, {servers_[1].url} digest {same}, {servers_[2].url} digest "
                        "abababababab; serve the same model on each, or leave the odd one out of the list\n")
    assert [chats(s) for s in servers_] == [0, 0, 0]


def test_work_goes_to_every_server_at_most_concurrency_each_and_versions_that_differ_are_warned_of(tmp_path):
    with ExitStack() as stack:
        one, two = servers(stack, listbench_answer, listbench_answer)
        three = stack.enter_context(FakeOllama(models=["llama3.2"], responder=listbench_answer, version="0.13.0"))
        result = run_over(tmp_path, [one.url, two.url, three.url], "runner.concurrency=2")
    assert result.returncode == EXIT["ok"], result.stderr
    assert result.stderr == (f"benchrun: warning: the servers run different versions: {one.url} 0.12.6, {two.url} "
                             f"0.12.6, {three.url} 0.13.0; the same model may answer differently on each "
                             "(recorded)\n")
    assert all(chats(s) >= 2 and s.max_in_flight <= 2 for s in (one, two, three))
    assert sum(chats(s) for s in (one, two, three)) == 18


def test_when_every_server_is_lost_the_run_is_interrupted_and_resume_finishes_it(tmp_path):
    dying = [DiesAfter(3), DiesAfter(3)]
    with ExitStack() as stack:
        both = servers(stack, *dying)
        for responder, server in zip(dying, both):
            responder.server = server
        result = run_over(tmp_path, [s.url for s in both])
        assert result.returncode == EXIT["runner"]
        run_dir = run_dir_of_stderr(result.stderr)
        info = json.loads((run_dir / "run.json").read_text())
        assert info["status"] == "interrupted" and info["counts"]["responses"] == 6
        assert info["reason"].startswith("lost every server of the list, the last: lost the server ")
        assert sorted(entry["host_lost"] for entry in info["history"]) == sorted(s.url for s in both)
        warnings = [line for line in result.stderr.splitlines() if line.startswith("benchrun: warning: lost")]
        assert len(warnings) == 1 and warnings[0].endswith("1 of 2 servers left; its requests go to the others")
        for server, responder in zip(both, dying):
            responder.answers = 100
            server.start()
        resumed = audit(tmp_path, "resume", str(run_dir))
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    assert summary_of(run_dir) == LISTBENCH_SUMMARY
    assert len({r["id"] for r in read_jsonl(run_dir / "responses.jsonl")}) == 18


def run_dir_of_stderr(stderr):
    return Path(re.search(r"recorded as 'interrupted' with \d+ of \d+ samples in (\S+);", stderr)[1])


def test_a_list_of_openai_compatible_servers(tmp_path):
    with FakeOpenAI(models=["llama3.2"], responder=listbench_answer) as one, \
            FakeOpenAI(models=["llama3.2"], responder=listbench_answer) as two:
        result = call_benchrun("runner=openai", f"runner.base_url=[{one.url},{two.url}]", *QUICK,
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    assert summary_of(run_dir) == LISTBENCH_SUMMARY
    assert {r["host"] for r in read_jsonl(run_dir / "responses.jsonl")} == {one.url, two.url}
    assert json.loads((run_dir / "run.json").read_text())["runner"]["base_url"] == [one.url, two.url]


def test_a_list_of_servers_with_a_duplicate_an_empty_list_or_a_malformed_url_is_refused_in_one_line(tmp_path):
    for hosts, why in [("[]", "an empty list of servers: give one URL, or a list of one or more"),
                       ("[http://a:1,a:1/]", "'a:1/' is listed twice (as 'http://a:1'): list each server once"),
                       ("[http://a:1,http://b:port]", "'http://b:port' is not a server's URL: its port is not a "
                                                      "number from 1 to 65535"),
                       ("[http://a:1,ftp://b]", "'ftp://b' is not a server's URL (http://host:port)")]:
        result = call_benchrun(f"runner.host={hosts}", "dry_run=true", cwd=tmp_path)
        assert (result.returncode, result.stderr) == (EXIT["usage"],
                                                      f"benchrun: error: in 'config': runner.host: {why}\n")
    result = call_benchrun("runner.host=[http://a:1,http://me:pw@b:2]", "dry_run=true", cwd=tmp_path)
    assert result.returncode == EXIT["usage"] and "a URL with a user name or password in it" in result.stderr


def test_a_server_of_the_list_that_cannot_be_reached_at_the_preflight_is_named_and_nothing_is_asked(tmp_path):
    gone = FakeOllama(models=["llama3.2"]).start()
    gone.stop()
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as alive:
        result = run_over(tmp_path, [alive.url, gone.url])
    assert result.returncode == EXIT["runner"]
    assert result.stderr.startswith(f"benchrun: error: cannot reach Ollama at {gone.url} (")
    assert result.stderr.count("\n") == 1 and chats(alive) == 0


def test_resume_with_host_repeated_asks_the_rest_of_a_list_of_servers(tmp_path):
    dying = DiesAfter(5)
    with FakeOllama(models=["llama3.2"], responder=dying) as lone:
        dying.server = lone
        result = call_benchrun(f"runner.host={lone.url}", *QUICK, f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == EXIT["runner"]
    run_dir = run_dir_of_stderr(result.stderr)
    with ExitStack() as stack:
        one, two = servers(stack, listbench_answer, listbench_answer)
        resumed = audit(tmp_path, "resume", str(run_dir), "--host", one.url, "--host", two.url)
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    responses = read_jsonl(run_dir / "responses.jsonl")
    assert [r.get("host") for r in responses[:5]] == [None] * 5
    assert {r["host"] for r in responses[5:]} == {one.url, two.url} and len(responses) == 18
    info = json.loads((run_dir / "run.json").read_text())
    assert info["history"][-1]["host"] == [one.url, two.url] and info["runner"]["host"] == [one.url, two.url]
    assert summary_of(run_dir) == LISTBENCH_SUMMARY


def test_a_server_that_fails_everything_rests_instead_of_being_every_samples_first_try(tmp_path):
    with ExitStack() as stack:
        busy = stack.enter_context(FakeOllama(models=["llama3.2"], responder=lambda _: BUSY))
        [well] = servers(stack, listbench_answer)
        result = run_over(tmp_path, [busy.url, well.url], "runner.concurrency=1", "runner.retries=0")
        asked_busy, asked_well = chats(busy), chats(well)
    assert result.returncode == EXIT["ok"], result.stderr
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert {(r["host"], r["error"]) for r in responses} == {(well.url, None)} and len(responses) == 18
    assert (asked_busy, asked_well) == (1, 18)  # its one failure, then the others' for 10 seconds
    [moved] = [r for r in responses if r["failed_attempts"]]
    assert [a["error"]["message"] for a in moved["failed_attempts"]] == [f"at {busy.url}: HTTP 503: overloaded"]


def test_each_servers_latency_is_its_own_time_not_the_failover_before_it(tmp_path):
    with ExitStack() as stack:
        slow_busy = stack.enter_context(FakeOllama(models=["llama3.2"], responder=lambda _: BUSY, latency_s=0.5))
        [well] = servers(stack, listbench_answer)
        result = run_over(tmp_path, [slow_busy.url, well.url], "runner.concurrency=1", "runner.retries=0")
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    [moved] = [r for r in read_jsonl(run_dir / "responses.jsonl") if r["failed_attempts"]]
    assert moved["seconds"] >= 0.5 > moved["host_seconds"] > 0
    assert moved["seconds"] - moved["host_seconds"] >= moved["failed_attempts"][0]["seconds"]
    speed = json.loads((run_dir / "summary.json").read_text())["speed"]
    assert speed["latency_s"]["max"] >= 0.5 > speed["hosts"][well.url]["latency_s"]["max"]
    assert all("host_seconds" not in r for r in read_jsonl(run_dir / "responses.jsonl") if not r["failed_attempts"])
