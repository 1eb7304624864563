"""User code and servers that misbehave, end to end: contained, recorded, and never in the archive or on stdout.

benchrun and benchrun-audit are called in this process, except where a real pipe is read by `head`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun

pytestmark = pytest.mark.slow
MOODY = """import json, os, sys, time

def moody(response, values):
    a = values['a']
    if a == 1:
        time.sleep(3600)
    if a == 2:
        sys.exit(3)
    if a == 3:
        os._exit(9)
    print(f"scoring {a}, like a chatty scorer does")
    return int(json.loads(response)['answer'] == a * 7)
"""


WAITING = """import json, os, time
from pathlib import Path

def waiting(response, values):
    release = Path(os.environ["BENCHRUN_TEST_RELEASE"])
    while not release.exists():
        time.sleep(0.01)
    return int(json.loads(response)['answer'] == values['a'] * 7)
"""


def scores_of(run_dir: Path, scorer: str = "moody") -> dict[str, dict]:
    return {s["id"]: s for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == scorer}


def test_a_scorer_that_hangs_exits_or_dies_costs_only_its_own_call(tmp_path):
    with Lab(tmp_path, n=6, scorer=MOODY) as lab:
        started = time.monotonic()
        result = lab.call(*lab.args("scorer_timeout_s=1"))
        took = time.monotonic() - started
        [run_dir] = lab.run_dirs()
        rescored = lab.call("rescore", str(run_dir), "--json", "--scorer-timeout-s", "1", module="benchrun.audit")
    assert result.returncode == EXIT["ok"], result.stderr
    assert took < 30
    scores = scores_of(run_dir)
    assert {i: (s["metrics"], s["error"]) for i, s in scores.items()} == {
        "times7:a=0": ({"moody": 1}, None),
        "times7:a=1": (None, {"type": "TimeoutError", "message": "timed out after 1 s"}),
        "times7:a=2": (None, {"type": "SystemExit", "message": "3"}),
        "times7:a=3": (None, {"type": "ScorerProcessDied",
                              "message": "the scorer's process ended (exit code 9) during this call"}),
        "times7:a=4": ({"moody": 1}, None),
        "times7:a=5": ({"moody": 0}, None),
    }
    assert "scoring" not in result.stdout
    log = (run_dir / "benchrun.log").read_text()
    assert all(f"scoring {a}, like a chatty scorer does" in log for a in (0, 4, 5))
    assert rescored.returncode == EXIT["ok"], rescored.stderr
    report = json.loads(rescored.stdout)
    assert report["info"]["counts"]["scorer_errors"] == 3
    out = Path(report["dir"])
    assert {i: s["error"]["type"] if s["error"] else None for i, s in scores_of(out).items()} == {
        "times7:a=0": None, "times7:a=1": "TimeoutError", "times7:a=2": "SystemExit",
        "times7:a=3": "ScorerProcessDied", "times7:a=4": None, "times7:a=5": None}
    assert "scoring 4, like a chatty scorer does" in (out / "rescore.log").read_text()


def test_a_server_that_drips_its_answer_is_held_to_the_deadline(tmp_path):
    def drip(req):
        return Reply(content=half_right(req), drip_s=0.3) if req.prompt.split()[4] == "2" else half_right(req)

    with Lab(tmp_path, n=4, responder=drip) as lab:
        started = time.monotonic()
        result = lab.call(*lab.args("runner.timeout_s=1", "runner.retries=0"))
        took = time.monotonic() - started
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    assert took < 20
    responses = {r["id"]: r for r in read_jsonl(run_dir / "responses.jsonl")}
    assert responses["times7:a=2"]["error"] == {"type": "TimeoutError", "message": "no answer within 1 s"}
    assert [r["error"] for i, r in responses.items() if i != "times7:a=2"] == [None] * 3


def test_a_server_that_echoes_the_api_key_cannot_put_it_in_the_archive(tmp_path):
    key = "sk-echo-0123456789abcdef"

    def answer(req):
        return Reply(status=400, error="cannot do 3") if req.prompt.endswith(" 3 and 7") else half_right(req)

    with FakeOpenAI(models=["m"], responder=answer, api_key=key, echo_auth=True) as server:
        lab = Lab(tmp_path, n=5)
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "task.path=bench",
                               f"outputs={tmp_path / 'outputs'}", "runner.retries=0", cwd=tmp_path,
                               env={"OPENAI_API_KEY": key})
        assert server.auth_headers and set(server.auth_headers) == {f"Bearer {key}"}
    assert result.returncode == EXIT["ok"], result.stderr
    [run_dir] = lab.run_dirs()
    fingerprints = {r["extra"]["system_fingerprint"] for r in read_jsonl(run_dir / "responses.jsonl") if not r["error"]}
    assert fingerprints == {"Bearer ***"}
    errors = [r["error"]["message"] for r in read_jsonl(run_dir / "responses.jsonl") if r["error"]]
    assert errors == ["HTTP 400: cannot do 3 (you sent Bearer ***)"]
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert leaks == [] and key not in result.stdout + result.stderr
    assert call_benchrun("verify", str(run_dir), cwd=tmp_path, module="benchrun.audit").returncode == EXIT["ok"]


def test_markup_and_emoji_codes_in_prompts_are_printed_as_they_are(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "tasks.yml").write_text(
        "- name: t\n  template: '[bold]{a}[/] :x: [link=x]'\n  values: {a: ['[red]', ':smile:']}\n"
        "  reference: ['1', '2']\n")
    result = call_benchrun("dry_run=true", "task.path=bench", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    assert "[bold][red][/] :x: [link=x]" in result.stdout
    assert re.search(r"\bt\s+│\s+2\b", result.stdout)


def test_piped_into_head_ends_quietly(tmp_path):
    with Lab(tmp_path, n=500, latency_s=0) as lab:
        lab.call(*lab.args("runner.concurrency=4"))
        [run_dir] = lab.run_dirs()
    for args in (["export", str(run_dir)], ["show", str(run_dir), "--samples"]):  # each well over a pipe's 64 KiB
        command = " ".join([sys.executable, "-m", "benchrun.audit", *args])
        result = subprocess.run(["bash", "-c", f"{command} 2>&1 | head -1; echo status ${{PIPESTATUS[0]}}"],
                                cwd=tmp_path, capture_output=True, text=True)
        lines = result.stdout.splitlines()
        assert len(lines) == 2 and "Traceback" not in lines[0] and lines[1] == f"status {EXIT['ok']}", (args, lines)


def test_the_next_samples_are_asked_while_the_scorers_work(tmp_path, monkeypatch):
    """Concurrency 1 and a scorer that waits until the server has had every request: graded behind the asking,
    every score comes; a run that waited for each sample's scores before asking the next would time them all out."""
    release, asked = tmp_path / "release", []

    def answer(req) -> str:
        asked.append(req.prompt)
        if len(asked) == 6:
            release.touch()
        return half_right(req)

    monkeypatch.setenv("BENCHRUN_TEST_RELEASE", str(release))
    with Lab(tmp_path, n=6, latency_s=0, scorer=WAITING, responder=answer) as lab:
        result = lab.call(*lab.args("runner.concurrency=1", "scorer_timeout_s=5"))
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    assert {s["id"]: s["metrics"] for s in scores_of(run_dir, "waiting").values()} == {
        f"times7:a={a}": {"waiting": int(a % 2 == 0)} for a in range(6)}
