"""Hostile input, sixteenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a run killed by SIGKILL (the OOM killer, a batch scheduler past its grace, `kill -9`) while a custom scorer had
  started a process of its own (a HumanEval-like scorer running an answer's code): the scorer process died with the
  run (PR_SET_PDEATHSIG), but the process it had started, in its process group, was reparented to init and ran for
  good, the fifteenth pass's "found and not fixed"; now the scorer process's group holds a keeper that runs no user
  code and takes no signal but SIGKILL, and kills the group once the scorer process has ended
  (`scorer_worker._keep_group`); it is not the scorer process's child, so a scorer's `os.wait()` waits for its own
- a custom scorer whose process starts a child in a session of its own (`subprocess.Popen(...,
  start_new_session=True)`, as a sandbox for an answer's code is often made, so that it can kill what it starts):
  the fifteenth pass ends the scorer process's group as a call overruns and as the run ends, but that child is in
  another group, and ran for good after the run (exit 0); now the scorer process is ended with every process below
  it, whatever its group or session, each stopped first so none starts another (`execute.proctree.end_tree`, from
  `scorerprocess._ended`)
- a seed llama.cpp does not take as given (it reads a seed as 32 bits: Ollama's engine, runner=local,
  llama-cpp-python's server): `runner.options.seed=4294967295` (2^32 - 1, LLAMA_DEFAULT_SEED) was sent as recorded
  and asked for a random seed, so every answer of a run at a temperature above 0 was drawn anew though run.json
  recorded its seed (seen on the embedded model: three answers of one prompt, three texts); 4294967296 and up
  were another seed (2^32 + 7 answered as 7 did); and a seed whose repeats (`repeats=k`, seed + i; `judge.repeats`,
  seed + j) reach 2^32 - 1 drew that repeat at random. Now a seed past 4,294,967,294, or one whose last repeat is, is
  refused naming its key before anything is made (`core.seeds`, from `core.settings`), as a negative seed is
- `exact_match` comparing numbers as floats: an answer of 18446744073709551617 to a reference of 2**64
  (18446744073709551616) matched (exact_match 1: both are 1.8446744073709552e19), as did any two integers past 2**53
  a float cannot tell apart, and any two numbers past 1e308 (400 nines and 400 eights, both infinity); and an answer
  "NaN" to a reference "NaN" did not (NaN equals nothing). Now a number is compared by its exact value (a text as
  written, a float as its shortest text, so 0.1 is still "0.1"), and NaN and the infinities as text
  (`compiler.scoring._number`)
- a thinking model's thinking (`runner.think=true`: Ollama gives it apart from the content, `message.thinking`; an
  OpenAI-compatible reasoning model's `reasoning_content` or `reasoning`, vLLM's, llama.cpp's, DeepSeek's): dropped,
  so the archive could not say all that came back (a judge's reasoning for its grade too); now kept with the
  answer, as a refusal is (`extra`: `runners.ollama._thought`, `runners.openai.SAID_APART`)
- a judge that is the model under test on an OpenAI-compatible server (no digest to tell), named by another spelling
  of the model's server (`judge.base_url=http://localhost:P/v1` beside `runner.base_url=http://127.0.0.1:P/v1`,
  `0.0.0.0`), or a server of the model's list so: taken without a word (exit 0), the model grading its own answers
  and run.json saying `allow_self: false`; the tenth pass compared the two URLs as written. Now they are compared as a list's
  servers are, by where they reach (`execute.hosts.one_server_among`, `session.same_model`): refused unless
  judge.allow_self (exit 2); so is the same model of one server asked through its two APIs (runner=openai at
  Ollama's /v1, which gives no digest, and a judge of runner=ollama at the same server)
- an answer's gzip (or deflate) stream that ends before its end (the body complete as its Content-Length says, the
  stream cut: a proxy that compresses and is stopped): decoded as far as it went and taken, zlib never asked whether
  the stream had ended, so it was `not Ollama's chat answer: Unterminated string ...` (JSONDecodeError, not retried),
  or, cut inside gzip's trailer, taken without its check (CRC and length); and a gzip body of two members (RFC 1952
  allows several, one after another): the second dropped without a word, the first half of the answer read as the
  whole. Now a stream that ends inside itself is `the answer broke off` (BrokenAnswer, retried, as a body shorter
  than its Content-Length is), gzip's members are read one after another, and bytes after a deflate stream's end or
  a gzip member that is not one do not decode (`runners.http._Inflater`, `_Bounded`)
- a response cache row planted (or damaged) with an answer far longer than any server's answer can be kept as (a
  shared cache_dir): its text is bounded as it is read back (the thirteenth pass), but not the rest of it, so a row
  whose `extra` held 300 MB was taken into the run as a cached answer (responses.jsonl of 300 MB, the run at 955 MB
  of memory, 256 such rows are looked up at once); now a row longer than a runner's answer can be kept as
  (`cacherows.row_bytes`: 6 bytes for each of runner.max_response_bytes, and 1 MiB) is not read, a miss, and deleted
  (`cache.Store.get_many`)

What held (tried, nothing new): the real llama-cpp-python server started with `--api_key` (no key, a wrong key:
one line naming $OPENAI_API_KEY, exit 3), `--model_alias` other than runner.model (one line naming what it serves),
`--n_ctx 64` (each prompt past the context that sample's error, the server's own words), `--ssl_keyfile` with a
self-signed certificate (the fifteenth pass's TLS advice, both ways, and the fix working), stopped mid-run and
started again (`interrupted`, `resume` completes, `verify` intact); a server answering 429 to everything (fail-fast
in one line, exit 3); an OpenAI-compatible answer of no choices padded to megabytes (its error line bounded).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from benchrun.compiler.scoring import exact_match
from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab, wait_for
from benchrun.testing.ollama_server import FakeOllama, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import odd_one
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.p38_archive import resealed
from tests.helpers.wire import ANSWER, coded

LEAVING = """import json
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def leaves(response, values):
    if values['a'] == 1:
        subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(1)'])
        Path({group!r}).write_text(str(os.getpgrp()))
        time.sleep(1000)
    return int(json.loads(response)['answer'] == values['a'] * 7)
"""


def _stat(pid: int) -> tuple[str, int] | None:
    """Process `pid`'s state (`Z`: a zombie, dead and waiting to be reaped) and process group; None when it is gone."""
    try:
        state, _, group = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:3]
    except (FileNotFoundError, ProcessLookupError):
        return None
    return state, int(group)


def _running(pid: int) -> bool:
    return (_stat(pid) or ("Z", 0))[0] != "Z"


def _in_group(pgid: int) -> list[int]:
    """The processes of process group `pgid` still running."""
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()
            and _running(int(entry.name)) and (_stat(int(entry.name)) or ("", 0))[1] == pgid]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_the_processes_a_scorer_started_end_with_a_run_killed_by_sigkill(tmp_path):
    group = tmp_path / "group"
    with Lab(tmp_path, n=3, latency_s=0, scorer=LEAVING.format(group=str(group))) as lab:
        proc = lab.start(*lab.args("scorer_timeout_s=600"))
        wait_for(group.exists)
        pgid = int(group.read_text())
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    with contextlib.suppress(TimeoutError):
        wait_for(lambda: not _in_group(pgid), timeout=20)
    left = _in_group(pgid)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert (proc.returncode, left) == (-signal.SIGKILL, [])


PAST = ("is past the seeds llama.cpp takes as given (0 to 4,294,967,294): it reads a seed as 32 bits, so "
        "4,294,967,295 asks it for a random seed and a larger one is another seed (modulo 2^32), and the run would not "
        "repeat as its seed is recorded; give a smaller seed")


@pytest.mark.parametrize(("given", "said"), [
    ("runner.options.seed=4294967295", "runner.options.seed: a seed of 4,294,967,295"),
    ("runner=local runner.options.seed=4294967296", "runner.options.seed: a seed of 4,294,967,296"),
    ("runner=openai runner.options.seed=99999999999", "runner.options.seed: a seed of 99,999,999,999"),
    ("judge.options.seed=4294967295", "judge.options.seed: a seed of 4,294,967,295"),
    ("runner.options.seed=4294967290 repeats=10",
     "runner.options.seed: the seed of repeat 9 (4,294,967,290 + 9, repeats=10)"),
    ("judge.options.seed=4294967294 judge.repeats=2",
     "judge.options.seed: the seed of repeat 1 (4,294,967,294 + 1, judge.repeats=2)"),
])
def test_a_seed_llama_cpp_reads_otherwise_is_refused_naming_its_key(tmp_path, given, said):
    done = call_benchrun("task=folderbench", *given.split(), "judge.model=q", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'config': {said} {PAST}\n")


@pytest.mark.parametrize("given", ["runner.options.seed=4294967294", "runner.options.seed=4294967290 repeats=5",
                                   "runner.options.seed=4294967290 repeats=10 repeat_seeds=same",
                                   "judge.options.seed=4294967285 judge.repeats=10"])
def test_every_seed_llama_cpp_takes_as_given_is_taken(tmp_path, given):
    done = call_benchrun("task=folderbench", *given.split(), "judge.model=q", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


BIG = 2**64


@pytest.mark.parametrize(("answer", "reference", "matched"), [
    ({"answer": BIG + 1}, BIG, 0),
    ({"answer": BIG}, BIG, 1),
    ({"answer": str(BIG + 1)}, str(BIG), 0),
    ({"answer": 2**53 + 1}, [2**53, "x"], 0),
    ({"answer": "9" * 400}, "8" * 400, 0),
    ({"answer": "9" * 400}, "9" * 400, 1),
    ({"answer": "NaN"}, "NaN", 1),
    ({"answer": "nan"}, "NaN", 0),
    ({"answer": 0.1}, "0.1", 1),
    ({"answer": 10}, "10.0", 1),
    ({"answer": " 7 "}, 7, 1),
    ({"answer": 1e16}, 10**16, 1),
    ({"answer": True}, 1, 0),
])
def test_exact_match_compares_numbers_by_their_exact_value(answer, reference, matched):
    assert exact_match(json.dumps(answer), reference) == matched


THOUGHT = "2 and 3 make 5"


def _thinking(req) -> Reply:
    """Ollama's answer of a thinking model: its thinking apart from its content."""
    return Reply(raw=json.dumps({"model": req.model, "created_at": "2026-12-04T00:00:00Z", "done": True,
                                 "message": {"role": "assistant", "content": '{"answer": 5}', "thinking": THOUGHT}}))


def _reasoning(req) -> Reply:
    """An OpenAI-compatible reasoning model's answer: its reasoning apart from its content."""
    message = {"role": "assistant", "content": '{"answer": 5}', "reasoning_content": THOUGHT, "reasoning": "r"}
    return Reply(raw=json.dumps({"object": "chat.completion", "model": req.model, "choices": [
        {"index": 0, "message": message, "finish_reason": "stop"}]}))


@pytest.mark.parametrize(("runner", "kept"), [("ollama", {"thinking": THOUGHT}),
                                              ("openai", {"reasoning_content": THOUGHT, "reasoning": "r"})])
def test_a_thinking_models_thinking_is_kept_with_its_answer(tmp_path, runner, kept):
    thinks = ("completion", "thinking")
    with FakeOllama(responder=_thinking, capabilities=thinks) as ollama, \
            FakeOpenAI(models=["m"], responder=_reasoning) as openai:
        named = ([f"runner.host={ollama.url}", "runner.think=true"] if runner == "ollama" else
                 ["runner=openai", f"runner.base_url={openai.url}", "runner.model=m", "runner.structured=json_schema"])
        done = call_benchrun(*named, "task=folderbench", "cache=false", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    answers = read_jsonl(run_dir_of(done.stdout) / "responses.jsonl")
    assert [(a["text"], {k: v for k, v in a["extra"].items() if k in kept}) for a in answers] == [
        ('{"answer": 5}', kept)] * 3


SELF = ("benchrun: error: in 'config': judge.model: the judge m is the model under test (the same model on the same "
        "server): a model grading its own answers favours them; pick another judge.model, or set "
        "judge.allow_self=true (recorded)\n")


@pytest.mark.parametrize("spelled", ["localhost", "0.0.0.0", "a list"])
def test_a_judge_that_is_the_model_under_another_name_of_its_server_is_refused(tmp_path, spelled):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOpenAI(models=["m"], responder=answer) as server, FakeOpenAI(models=["m"], responder=answer) as other:
        judged = server.url.replace("127.0.0.1", "localhost" if spelled == "a list" else spelled)
        asked = f"[{other.url},{server.url}]" if spelled == "a list" else server.url
        done = call_benchrun("runner=openai", f"runner.base_url={asked}", "runner.model=m", "task.path=bench",
                             "judge.runner=openai", f"judge.base_url={judged}", "judge.model=m",
                             "runner.structured=json_schema", "+judge.structured=json_schema",
                             f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], SELF)


BROKE_OFF = {"type": "BrokenAnswer", "message": "the answer broke off: its body ended inside its gzip stream (what came "
                                                "was a part of the answer)"}
ZIPPED = gzip.compress(ANSWER, mtime=0)
CODED = {  # the body of a = 3's answer under Content-Encoding: gzip -> (its text, its error, attempts)
    "cut in its data": (ZIPPED[:-20], (None, BROKE_OFF, 2)),
    "cut in its trailer": (ZIPPED[:-4], (None, BROKE_OFF, 2)),
    "two members": (gzip.compress(ANSWER[:50], mtime=0) + gzip.compress(ANSWER[50:], mtime=0),
                    ('{"answer": 21}', None, 1)),
    "a member, then bytes": (ZIPPED + b"junk", (None, {
        "type": "DecodingError", "message": "the answer's body does not decode as its Content-Encoding (gzip) says: "
                                            "Error -3 while decompressing data: incorrect header check"}, 2)),
}


@pytest.mark.parametrize("body", list(CODED))
def test_a_gzip_answer_is_read_to_the_end_of_its_stream_or_broke_off(tmp_path, body):
    data, kept = CODED[body]
    with Lab(tmp_path, n=6, responder=odd_one(Reply(wire=coded(data, "gzip")))) as lab:
        result = lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    assert [(r["text"], r["error"], r["attempts"]) for r in read_jsonl(run_dir / "responses.jsonl")
            if r["id"] == "times7:a=3"] == [kept]


def _planted(tmp_path, extra: int) -> list[tuple[str, int, bool]]:
    """A run of the folderbench into a cache that a first run filled, one row of which is then given an `extra` of
    `extra` bytes: (sample, the length of its kept extra, whether it came from the cache) of each answer."""
    asked = ["task=folderbench", f"cache_dir={tmp_path / 'cache'}", "runner.max_response_bytes=1024",
             f"outputs={tmp_path / 'o'}"]
    with FakeOllama(responder=lambda req: json.dumps({"answer": 5})) as server:
        assert call_benchrun(f"runner.host={server.url}", *asked, cwd=tmp_path).returncode == EXIT["ok"]
        with sqlite3.connect(tmp_path / "cache" / "responses.sqlite3") as db:
            key, answer = db.execute("SELECT key, answer FROM answers ORDER BY key LIMIT 1").fetchone()
            db.execute("UPDATE answers SET answer = ? WHERE key = ?",
                       (json.dumps({**json.loads(answer), "extra": {"x": "a" * extra}}), key))
            resealed(db)  # as a hand that seals what it planted leaves it: the checks after the seal's see it
        done = call_benchrun(f"runner.host={server.url}", *asked, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    return sorted((a["id"], len(json.dumps(a["extra"])), a["cached_from"] is not None)
                  for a in read_jsonl(run_dir_of(done.stdout) / "responses.jsonl"))


def test_a_cache_row_longer_than_any_answer_is_a_miss_never_read(tmp_path):
    kept = _planted(tmp_path, 2**20 + 6 * 1024)
    assert sorted(cached for _, _, cached in kept) == [False, True, True]
    assert max(length for _, length, _ in kept) < 100


def test_a_cache_row_within_the_bound_is_read(tmp_path):
    kept = _planted(tmp_path, 2**20 - 1000)
    assert [cached for _, _, cached in kept] == [True] * 3
    assert max(length for _, length, _ in kept) == 2**20 - 1000 + len('{"x": ""}')


WAITING = ("import os\n\n\ndef waits(response, values):\n    try:\n        os.wait()\n"
           "    except ChildProcessError:\n        return 1\n    return 0\n")


def test_a_scorer_waiting_for_any_child_of_its_own_finds_none_but_its_own(tmp_path):
    with Lab(tmp_path, n=2, latency_s=0, scorer=WAITING) as lab:
        result = lab.call(*lab.args("scorer_timeout_s=5"))
        [run_dir] = lab.run_dirs()
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert [(s["metrics"], s["error"]) for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "waits"] == [
        ({"waits": 1}, None)] * 2


APART = """import json
import subprocess
import sys
from pathlib import Path


def apart(response, values):
    if values['a'] in (1, 2):
        child = subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(1)'],
                                 start_new_session=True)
        Path({pids!r}, str(values['a'])).write_text(str(child.pid))
        if values['a'] == 2:
            child.wait()
    return int(json.loads(response)['answer'] == values['a'] * 7)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_a_process_a_scorer_starts_in_a_session_of_its_own_ends_with_its_call_or_the_run(tmp_path):
    """a = 1 leaves its child running and returns; a = 2 waits on a child that never ends, overrunning its time."""
    pids = tmp_path / "pids"
    pids.mkdir()
    with Lab(tmp_path, n=3, latency_s=0, scorer=APART.format(pids=str(pids))) as lab:
        result = lab.call(*lab.args("scorer_timeout_s=2"))
        [run_dir] = lab.run_dirs()
    children = [int(pids.joinpath(name).read_text()) for name in ("1", "2")]
    try:
        wait_for(lambda: not any(map(_running, children)), timeout=20)
    finally:
        for pid in filter(_running, children):
            os.kill(pid, signal.SIGKILL)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert [(s["id"], s["error"]) for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "apart"] == [
        ("times7:a=0", None), ("times7:a=1", None),
        ("times7:a=2", {"type": "TimeoutError", "message": "timed out after 2 s"})]


class _BothAPIs(FakeOllama):
    """Ollama with its OpenAI-compatible API beside its own, on one port, as Ollama serves them."""

    def routes(self):
        return {**super().routes(), **FakeOpenAI(models=self.models, responder=answer).routes()}


def test_a_judge_that_is_the_model_through_the_other_api_of_its_server_is_refused(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with _BothAPIs(models=["llama3.2"], responder=answer) as server:
        done = call_benchrun("runner=openai", f"runner.base_url={server.url}/v1", "runner.model=llama3.2",
                             "runner.structured=json_schema", "task.path=bench", "judge.runner=ollama",
                             f"judge.host={server.url.replace('127.0.0.1', 'localhost')}", "judge.model=llama3.2",
                             f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], SELF.replace("judge m ", "judge llama3.2 "))
