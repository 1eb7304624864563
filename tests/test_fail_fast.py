"""A broken setup is not a benchmark result: identical failures in a row stop the run, what no retry can fix is not
retried, and the samples the broken setup cost are asked again by `resume` (benchrun and benchrun-audit called in this
process)."""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.runners.openai import PROBE_PROMPT
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl


class Switch:
    """`status` answered with `error` for every prompt (or for a <= failing_below) until `fixed`."""

    def __init__(self, status: int, error: str, failing_below: int = 1 << 30):
        self.status, self.error, self.failing_below, self.fixed = status, error, failing_below, False

    def __call__(self, req):
        if not self.fixed and int(req.prompt.split()[4]) < self.failing_below:
            return Reply(status=self.status, error=self.error)
        return half_right(req)


def test_identical_failures_stop_the_run_and_resume_asks_them_again(tmp_path):
    broken = Switch(400, "option 'temprature' is not valid")
    with Lab(tmp_path, responder=broken) as lab:
        result = lab.call(*lab.args("runner.max_consecutive_failures=4"))
        [run_dir] = lab.run_dirs()
        requests = len(lab.server.requests)
        broken.fixed = True
        resumed = lab.call("resume", str(run_dir), module="benchrun.audit")
    assert result.returncode == EXIT["runner"]
    assert result.stderr == (
        "benchrun: error: 4 samples in a row failed the same way, so the setup is broken, not the benchmark: "
        "ResponseError: HTTP 400: option 'temprature' is not valid (runner.max_consecutive_failures); run "
        f"{json.loads((run_dir / 'run.json').read_text())['run_id']} is recorded as 'failed' with 0 of 20 samples in "
        f"{run_dir}; finish it once the setup is mended with: benchrun-audit resume {run_dir}\n")
    assert requests == 4, "a 400 is not retried, and the run stopped at the fourth"
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "completed" and info["counts"]["request_errors"] == 0
    assert len(read_jsonl(run_dir / "responses.jsonl")) == 20
    assert info["history"][0]["previous_status"] == "failed"


def test_a_success_in_between_resets_the_count(tmp_path):
    with Lab(tmp_path, responder=Switch(400, "no", failing_below=4)) as lab:
        result = lab.call(*lab.args("runner.max_consecutive_failures=5"))
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    responses = {r["id"]: r for r in read_jsonl(run_dir / "responses.jsonl")}
    assert [responses[f"times7:a={a}"]["error"] is not None for a in range(6)] == [True] * 4 + [False] * 2
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed_with_errors"


@pytest.mark.parametrize(("status", "error", "attempts"), [
    (500, "1 validation error: Input should be 'text' or 'json_object'", 1),
    (500, "invalid request: unknown field 'format'", 1),
    (503, "server busy", 3),
    (408, "request timeout", 3),
    (404, "not found", 1),
])
def test_what_a_retry_cannot_fix_is_not_retried(tmp_path, status, error, attempts):
    def once(req):
        return Reply(status=status, error=error) if req.prompt.split()[4] == "0" else half_right(req)

    with Lab(tmp_path, n=3, responder=once) as lab:
        result = lab.call(*lab.args("runner.retries=2", "runner.backoff_s=0.01"))
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    first = next(r for r in read_jsonl(run_dir / "responses.jsonl") if r["id"] == "times7:a=0")
    assert (first["attempts"], first["error"]["message"]) == (attempts, f"HTTP {status}: {error}")


def test_a_refused_prompt_with_many_repeats_is_that_samples_error_not_a_broken_setup(tmp_path):
    """Its 5 repeats are one sample failing, not 5 samples: the run goes on, and a resume has nothing left to ask."""
    refused = Switch(400, "prompt refused", failing_below=1)
    with Lab(tmp_path, n=4, responder=refused) as lab:
        result = lab.call(*lab.args("repeats=5", "runner.max_consecutive_failures=5"))
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["counts"]["responses"], info["counts"]["request_errors"]) == \
        ("completed_with_errors", 20, 5)
    assert {r["id"] for r in read_jsonl(run_dir / "responses.jsonl") if r["error"]} == {"times7:a=0"}


def test_failures_of_one_kind_stop_the_run_whatever_their_text(tmp_path):
    """A 400 quoting each sample's prompt differs in its text every time: it is still one kind of failure."""
    def quoting(req):
        return Reply(status=400, error=f"cannot take {req.prompt!r}")

    with Lab(tmp_path, n=8, responder=quoting) as lab:
        result = lab.call(*lab.args("runner.max_consecutive_failures=3"))
        requests = len(lab.server.requests)
    assert result.returncode == EXIT["runner"]
    assert result.stderr.startswith("benchrun: error: 3 samples in a row failed the same way, so the setup is broken, "
                                    "not the benchmark: ResponseError: HTTP 400: cannot take 'find the product of 2 "
                                    "and 7' (runner.max_consecutive_failures); run ")
    assert requests == 3


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_a_proxy_answering_in_another_protocol_fails_fast(tmp_path, runner):
    """Every request answered as server-sent events, each differently: not 12 samples' own errors and exit 0."""
    def events(req):
        if req.prompt == PROBE_PROMPT:
            return half_right(req)
        return Reply(raw=f"data: {json.dumps({'delta': req.prompt})}\n\ndata: [DONE]\n\n")

    with Lab(tmp_path, n=12, responder=events) as lab, FakeOpenAI(models=["m"], responder=events) as openai:
        where = ([f"runner.host={lab.server.url}"] if runner == "ollama" else
                 ["runner=openai", f"runner.base_url={openai.url}", "runner.model=m"])
        result = lab.call("task.path=bench", *where, f"outputs={lab.root / 'outputs'}", "cache=false")
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["runner"], result.stderr
    assert "5 samples in a row failed the same way" in result.stderr
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
