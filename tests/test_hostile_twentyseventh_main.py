"""The twenty-seventh hostile pass, the lead's part: the last review's rules that had no test failing without them.

- A stopped submitit_local sweep sends SIGKILL to what still runs after its wait, then says how each job ended; SIGKILL
  is delivered, not done, as `kill` returns, and a job seen running then was said `running` (the CI's `1 running, 1
  interrupted`). The stop waits for what it killed to have ended (`compose.takeback.stop_launched_jobs`, KILLED_S).
- A judge call waiting for the same call under way (`execute.judging.Judge._cached`) that is cancelled (a stopped
  run, fail-fast) must leave that call's future alone: awaited without a shield, the waiter's cancel cancelled it, and
  the call itself then failed as it said it was done (InvalidStateError) after its reply was kept.
- `rescore --rejudge judge.model=` (a variable unset, or `judge.model=null`) was a KeyError traceback: a rejudge's
  judge model is made by the rule a run's is (`compiler.plan.judge_model`), refused in one line without a model.
- An answer cut at the model's token limit (done_reason `length`) failed its format check as `invalid JSON:
  Unterminated string ...`, not saying it was cut, as a judge's reply now says (`execute.formatcheck.ended_early`).
- `task.name=' b '` was taken: benchmark ` b ` printed as `b` in every heading and in `list`, under another manifest id
  than `b`'s; a name with white space around it is refused (`core.tasksettings`).
- A server that took the preflight's connection and closed it unanswered (a part of a response head, or nothing) was
  said `cannot reach ... (RemoteProtocolError); start it`: it runs, so the line says what it did
  (`execute.runners.base.there_unanswered`, both runners).
- `rescore --rejudge judge.runner=local` kept the run's judge.model (`qwen2.5`, an Ollama model) as the name of the
  embedded model it asked: a judge of another runner type names its model (`audit.rejudge`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socketserver
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchrun.compose import takeback
from benchrun.core.errors import EXIT
from benchrun.execute.judging import Judge
from benchrun.testing.chat import Reply
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, make_run, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer

DEAF = "import signal, time\nfor s in (signal.SIGTERM, signal.SIGINT): signal.signal(s, signal.SIG_IGN)\n" \
       "print('ready', flush=True)\ntime.sleep(600)\n"
"""A job that passes SIGTERM and SIGINT over."""
KILL = os.kill


def test_a_stopped_local_sweep_returns_only_once_what_it_killed_has_ended(tmp_path: Path, monkeypatch) -> None:
    job = subprocess.Popen([sys.executable, "-c", DEAF], stdout=subprocess.PIPE, text=True)
    try:
        assert job.stdout.readline() == "ready\n"
        (tmp_path / takeback.LAUNCHER_FILES / str(job.pid)).mkdir(parents=True)
        takeback.begin_command()
        takeback.MADE.local_sweeps.append(tmp_path)
        killed, alive = [], takeback._alive
        monkeypatch.setattr(takeback, "LOCAL_STOP_S", 0.2)
        monkeypatch.setattr(takeback.os, "kill", lambda pid, sig: killed.append(sig) or KILL(pid, sig))
        seen = iter([True] * 3)  # a killed process still seen running three times: one slow to tear down
        monkeypatch.setattr(takeback, "_alive", lambda pid: next(seen, alive(pid)) if signal.SIGKILL in killed
                            else alive(pid))
        takeback.stop_launched_jobs()
        assert (killed, next(seen, "all seen")) == ([signal.SIGTERM, signal.SIGKILL], "all seen")
        assert job.wait(timeout=10) == -signal.SIGKILL
    finally:
        job.kill()
        job.wait()
        job.stdout.close()
        takeback.begin_command()


def test_a_judge_call_waiting_on_one_under_way_cancelled_leaves_that_call_alone() -> None:
    async def scenario() -> tuple[bool, bool]:
        judge = Judge.__new__(Judge)
        judge.cache, judge._under_way = None, {}
        under_way = judge._under_way["key"] = asyncio.get_running_loop().create_future()
        waiter = asyncio.ensure_future(judge._cached("key"))
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        under_way.set_result(None)  # the call under way says it is done, as it does once its reply is kept
        return under_way.cancelled(), under_way.done()

    assert asyncio.run(scenario()) == (False, True)


REFUSED_REJUDGES = {
    "judge.model=": "in 'config': judge.model: task 'symbol' is graded by judge 'names': name the judge model with "
                    "judge.model=...",
    "judge.model=null": "in 'config': judge.model: task 'symbol' is graded by judge 'names': name the judge model "
                        "with judge.model=...",
    "judge.runner=local": "--rejudge judge.runner=local: the run's judge.model ('qwen2.5') names a model of runner "
                          "ollama; name the one to ask with judge.model=NAME",
}


@pytest.mark.parametrize("override", list(REFUSED_REJUDGES))
def test_a_rejudge_naming_no_judge_model_to_ask_is_one_line(tmp_path: Path, override: str) -> None:
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        run = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5")
        run_dir = run_dir_of(run.stdout)
        rejudged = call_benchrun("rescore", str(run_dir), "--rejudge", override, cwd=tmp_path,
                                 module="benchrun.audit")
    assert (rejudged.returncode, rejudged.stdout, rejudged.stderr) == (
        EXIT["usage"], "", f"benchrun: error: {REFUSED_REJUDGES[override]}\n")
    assert not (run_dir / "rescores").exists()


@pytest.mark.parametrize(("ended", "said"), [
    ("length", " (the answer was cut at the model's token limit: done_reason \"length\")"),
    ("stop", "")])
def test_an_answer_cut_at_its_token_limit_says_so_in_its_format_check(tmp_path: Path, ended: str, said: str) -> None:
    run_dir = make_run(tmp_path, "task.only=[product]", responder=lambda req: Reply('{"answer": 1', done_reason=ended))
    checks = {r["detail"] for r in read_jsonl(run_dir / "scores.jsonl") if r["scorer"] == "format_valid"}
    assert checks == {f"invalid JSON: Expecting ',' delimiter: line 1 column 13 (char 12){said}"}


@pytest.mark.parametrize("name", [" b ", "b　", " b"])
def test_a_benchmark_name_with_white_space_around_it_is_refused(tmp_path: Path, name: str) -> None:
    write_bench(tmp_path, {"tasks.yml": TASKS})
    done = call_benchrun("task.path=bench", f"task.name='{name}'", "dry_run=true", "outputs=out", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': task.name: {name!r} has white space around it, so it prints as 'b' (a run's "
        "heading, benchrun-audit list), a name it is not: name the benchmark without it\n"))
    assert not (tmp_path / "out").exists()


class _Unanswering(socketserver.BaseRequestHandler):
    """Reads a request's head, sends the server's `sent` (a part of a response head, or nothing) and closes."""

    def handle(self) -> None:
        received = b""
        self.request.settimeout(0.5)  # a TLS handshake (the preflight asks whether it speaks TLS) sends no head
        with contextlib.suppress(TimeoutError):
            while b"\r\n\r\n" not in received and (chunk := self.request.recv(4096)):
                received += chunk
        self.request.sendall(self.server.sent)


@pytest.mark.parametrize("runner", ["ollama", "openai"])
@pytest.mark.parametrize("sent", [b"HTTP/1.1 200 OK\r\nContent-", b""])
def test_a_server_closing_the_preflights_connection_unanswered_is_said_to_run(tmp_path: Path, runner: str,
                                                                                sent: bytes) -> None:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Unanswering) as server:
        server.sent, server.daemon_threads = sent, True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}" + ("/v1" if runner == "openai" else "")
        named = [f"runner.host={url}"] if runner == "ollama" else ["runner=openai", f"runner.base_url={url}",
                                                                   "runner.model=m"]
        done = call_benchrun(*named, "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        server.shutdown()
    key = "runner.host" if runner == "ollama" else "runner.base_url"
    assert (done.returncode, done.stdout) == (EXIT["runner"], "")
    assert done.stderr == (f"benchrun: error: the server at {url} took the connection and closed it without an answer "
                           "(RemoteProtocolError: Server disconnected without sending a response.): something runs "
                           f"there that does not answer its HTTP requests; check its log, or point {key} at its HTTP "
                           "API\n")
