"""Hostile input, thirteenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a custom scorer that leaves a timer set (`signal.alarm`, `signal.setitimer`, as a scorer bounding its own work
  does, then returning before it went off) with a handler of its own: the timer went off in another sample's call,
  whose score became the handler's error (`Late: a timer set by an earlier call`), or, with no handler, killed the
  process in that call (`ScorerProcessDied`); a scorer lowering a resource limit for its own work
  (`resource.setrlimit(RLIMIT_AS, ...)`, as HumanEval's guard does) or setting a umask: every later call in that
  process ran under it (a MemoryError of another sample), so a score depended on which samples that process had
  scored before, as the twelfth pass found of the directory and environment. Now every call starts with the signal
  handling, limits and umask the first call found and no timer set (`scorer_worker._Found`; the signals through
  `core.interrupts.handling_now`, which an import's are put back by too)
- custom_scorer.py edited while the run runs (a helper or a constant, the scorer function itself as it was; or the
  scorer rewriting its own file): the scorer process started after it (a timeout or a crash replaces it) imported
  the file as it was then, and the rest of the run was scored by that code, exit 0, while manifest.json kept the
  sha256 of the file the run began with; the process checked only each scorer function's source. Now a module of
  a benchmark is made of the bytes read once, whose sha256 is kept (`compiler.usercode.import_file`), and the scorer
  process imports the file only if it still hashes to that: else every call after is `ScorerUnavailable`, saying so
- a custom scorer writing to the scorer process's reply pipe (a file descriptor of 100 or above) without end and
  without a line break (1 GB): the run kept all of it, searching the whole of it again for a line's end with each
  piece that came (time growing with the square of its length), its event loop busy and its memory growing until
  the call's time limit (`TimeoutError: timed out after 10 s`, hundreds of MB held); now a line on that pipe is at
  most as long as the longest reply that call's scorer can give (`scorerprocess.reply_bytes`: 256 metrics of the
  longest names, each character escaped), each piece searched once, and a longer one is that call's
  `ScorerProtocolError` as soon as it passes that, the process replaced
- a named pipe, a folder or a device (a link to /dev/null) where the response cache's database belongs
  (`responses.sqlite3`, or its `-wal` or `-shm` beside it): one line, but SQLite's words (`cannot be used
  (OperationalError: disk I/O error)`, `unable to open database file`), which say nothing of what is wrong; now the
  line names the file and what it is (`execute.cacheplace.misplaced_store`, by which `benchrun-audit cache` checks
  its database too), as one in the cache folder's place was
- an OpenAI-compatible server whose backend changed once the preflight had pinned it (restarted with another model
  or build under the same name: each answer's own `system_fingerprint` another than the preflight's), with
  cache=true: its answers were kept in the response cache under the key of the pinned one, and a later run of the
  pinned one took them from the cache as its model's answers (`cached_from`, nothing asked); now an answer is kept,
  and a cached one taken, only when its fingerprint is the pinned one's, or either gives none
  (`execute.cache.pinned_by`): an entry of another is a miss, deleted, and asked again
- a model (or the judge model) pulled again while the run asked: the eighth and twelfth passes fail the run as it
  ends, saying its answers (grades) may come from either model, yet each answer it had kept in the response cache
  stayed there under the digest the run began with, so a later run of that digest took answers of the other model
  as its own; now the answers that run kept are deleted from the cache as the change is found
  (`execute.session`, `RunCache.forget`)
- a scorer process that cannot score (its file's import failing there alone, or the file changed since the run
  started, as above) when no call waited yet, as at a run's start: its greeting said why, then its exit overwrote
  that with `the scorer process did not start`, each call's error; now the greeting's why stands (`scorerprocess`)

What held (tried, nothing new): the scorer: a generator or a coroutine returned (that call's TypeError, one line),
GeneratorExit, KeyboardInterrupt, MemoryError raised and a recursion without end (each that call's error, the calls
after scored), `sys.setrecursionlimit(30)`, `warnings.simplefilter('error')`, `sys.stdout = None`,
`sys.set_int_max_str_digits(640)` then an int of 700 digits (refused, `an int of 2,326 bits`), `json.dumps` patched
in the scorer process (its own call's ScorerProtocolError), SIGINT given back its default handler by a scorer and
the run's process group sent SIGINT mid-call (exit 130, `interrupted`, no score recorded of that call, so `resume`
scores it), a scorer appending a line to the run's responses.jsonl or half a line to its scores.jsonl (user code may
write any file; `verify` names the line the run did not write). Server bytes: an Ollama answer holding JSON 100,000
deep, an OpenAI-compatible one whose `usage` or `content` is (that sample's error, one line), `eval_count: 1e400`
and a count of 401 digits (not reported, the answer kept), an answer text 100,000 deep (format_valid 0, `nested
deeper than Python can follow`), a `103 Early Hints` before the answer (taken), a status line `ICY 200 OK`, a body
without a head, a status 999, a 204 without a body, a 200 of text/html (each that sample's error, one line). The
logs: a server's error text holding line breaks, `\\r`, ANSI escapes, bidi overrides, NEL, U+2028 and a line
`benchrun: error: FORGED`: one line on stderr and in run.json's reason, the escapes shown as text, nothing in
benchrun.log. The cache: a database of schema version 1 without the answers table, or with other columns (one line,
exit 2); a link to /dev/zero where the database belongs (one line, no hang). Servers: `http://127.1:P`,
`http://2130706433:P`, `http://0x7f.0.0.1:P` beside `http://127.0.0.1:P` (refused, one server listed twice). Memory:
answers of 7 MiB at runner.concurrency=18 under an address-space limit of 500 or 700 MB (`ulimit -v`): one line,
`out of memory; run ... is recorded as 'failed' ...; finish it with: benchrun-audit resume ...` (exit 4).
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.records import Completion
from benchrun.execute.cache import Entry, RunCache, Store
from benchrun.execute.runners.openai import PROBE_PROMPT
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import scorer, write_bench
from tests.helpers.cacheentry import stats
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, RepulledJudge
from tests.helpers.wire import records

pytestmark = pytest.mark.slow


def scores(lab: Lab) -> list[tuple[dict | None, dict | None]]:
    return sorted(((s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"),
                  key=json.dumps)


def scored(tmp_path, source: str, n: int = 1) -> list[tuple[dict | None, dict | None]]:
    """What scorer `s` of `source` gave in a lab's run of `n` samples, which completed saying nothing."""
    with Lab(tmp_path, n=n, latency_s=0, scorer=source) as lab:
        result = lab.call(*lab.args())
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    return scores(lab)


STATE = """import os
import resource
import signal


def s(response, values):
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    mark = 2**40 if hard == resource.RLIM_INFINITY else hard - 4096
    found = {'timer': int(signal.getitimer(signal.ITIMER_REAL)[0] > 0),
             'handler': int(signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL),
             'umask': int(os.umask(0o137) == 0o137), 'limit': int(soft == mark)}
    signal.signal(signal.SIGALRM, _late)
    signal.setitimer(signal.ITIMER_REAL, 1000)
    resource.setrlimit(resource.RLIMIT_AS, (mark, hard))
    return found


def _late(signum, frame):
    raise RuntimeError('a timer set by an earlier call')
"""


def test_a_timer_a_handler_a_umask_or_a_limit_a_scorer_leaves_set_does_not_reach_the_next_call(tmp_path):
    assert scored(tmp_path, STATE, n=3) == [({"s.handler": 0, "s.limit": 0, "s.timer": 0, "s.umask": 0}, None)] * 3


REWRITING = """import os
from pathlib import Path


def s(response, values):
    here = Path(__file__)
    if WORTH == 1:
        here.write_text(here.read_text().replace('WORTH = ' + '1', 'WORTH = ' + '0'))
        os._exit(1)
    return WORTH


WORTH = 1
"""


def test_a_scorer_file_edited_mid_run_is_not_imported_by_the_process_that_replaces_one(tmp_path):
    with Lab(tmp_path, n=3, latency_s=0, scorer=REWRITING) as lab:
        result = lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
    began, now = (hashlib.sha256(text.encode()).hexdigest() for text in
                  (REWRITING, REWRITING.replace("WORTH = 1\n", "WORTH = 0\n")))
    path = tmp_path / "bench" / "custom_scorer.py"
    assert (result.returncode, result.stderr, path.read_text()) == (EXIT["ok"], "", REWRITING.replace(
        "WORTH = 1\n", "WORTH = 0\n"))
    assert {f["path"]: f["sha256"] for f in json.loads((run_dir / "manifest.json").read_text())["files"]}[
        "custom_scorer.py"] == began
    unavailable = {"type": "ScorerUnavailable", "message": (
        f"in '{path}': changed since the run started: it hashes to {now[:12]}…, not to {began[:12]}… as when the run "
        "read it; its scores would come from other code than the run recorded")}
    assert scores(lab) == sorted([(None, {"type": "ScorerProcessDied", "message": (
        "the scorer's process ended (exit code 1) during this call")}), (None, unavailable), (None, unavailable)],
        key=json.dumps)


WITHOUT_END = """import os
chunk = b'x' * 2**20
for fd in range(100, 110):
    try:
        for _ in range(1024):
            os.write(fd, chunk)
    except OSError:
        pass
return 1"""


def test_a_line_without_end_on_the_reply_pipe_is_that_calls_error_once_no_reply_is_that_long(tmp_path):
    assert scored(tmp_path, scorer(WITHOUT_END)) == [(None, {"type": "ScorerProtocolError", "message": (
        f"the scorer wrote \"{'x' * 200}\" to the scorer process's reply pipe, a file descriptor of benchrun's: what "
        "a scorer prints goes to stdout or stderr (benchrun.log); a file it writes, it opens")})]


LONGEST = "return {'\\U0001F600' * 197 + f'{i:03}': -10**100 for i in range(256)}"


def test_the_longest_reply_a_scorer_can_give_is_taken_whole(tmp_path):
    assert scored(tmp_path, scorer(LONGEST)) == [({f"s.{chr(0x1F600) * 197}{i:03}": -10**100 for i in range(256)}, None)]


REFUSED_THERE = """import sys


def s(response, values):
    return 1


if 'scorer_worker' in sys.argv[0]:
    raise ValueError('x' * 1_000_000)
"""


def test_why_the_scorer_process_cannot_score_is_each_calls_error_in_one_line(tmp_path):
    path = tmp_path / "bench" / "custom_scorer.py"
    assert scored(tmp_path, REFUSED_THERE) == [(None, {"type": "ScorerUnavailable", "message": (
        f"in '{path}': cannot import: ValueError: [...] (line 9)")})]


@pytest.mark.parametrize("name", ["responses.sqlite3", "responses.sqlite3-wal", "responses.sqlite3-shm"])
def test_a_pipe_where_the_cache_keeps_its_database_is_named_in_one_line(tmp_path, name):
    cache = tmp_path / "cache"
    cache.mkdir()
    os.mkfifo(cache / name)
    with Lab(tmp_path, n=1, latency_s=0) as lab:
        result = lab.call(*lab.args(), "cache=true", f"cache_dir={cache}")
        [run_dir] = lab.run_dirs()
    line = (f"cache_dir: {cache / name} is a named pipe (FIFO), where the response cache's database belongs; set "
            "cache_dir= to a directory on local disk, or cache=false")
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {line}\n")
    assert json.loads((run_dir / "run.json").read_text())["reason"] == line


def test_an_openai_answer_of_another_fingerprint_than_the_pinned_one_is_not_cached(tmp_path):
    swapping = [True]

    def restarted(req):
        if swapping[0] and req.prompt != PROBE_PROMPT:  # the backend changed once the preflight had pinned it
            server.system_fingerprint = "fp_2"
        return listbench_answer(req)

    def asked() -> list[dict]:
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=llama3.2", "cache=true",
                               f"cache_dir={tmp_path / 'cache'}", "task.only=[product]",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        assert (result.returncode, result.stderr) == (EXIT["ok"], "")
        return read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")

    with FakeOpenAI(models=["llama3.2"], responder=restarted, system_fingerprint="fp_1") as server:
        first = asked()
        kept = stats(tmp_path / "cache").entries
        swapping[0], server.system_fingerprint = False, "fp_1"
        second = asked()
    assert ({r["extra"]["system_fingerprint"] for r in first}, kept) == ({"fp_2"}, 0)
    assert [(r["cached_from"], r["extra"]["system_fingerprint"]) for r in second] == [(None, "fp_1")] * 3


def test_a_cached_openai_answer_of_another_fingerprint_than_the_pinned_one_is_a_miss(tmp_path):
    answer = Completion(text="x", extra={"model": "m", "system_fingerprint": "fp_2"})
    with Store(tmp_path / "cache") as store:
        store.put("k", Entry(answer, "m", None, "a1b2c3d4e5f6", "2026-01-01T00:00:00Z"))
        cache = RunCache(store, "openai", {"served": "m", "system_fingerprint": "fp_1"}, {}, "m", "r", 2**20, "b")
        assert (cache.get_many(["k"]), store.get("k")) == ({}, None)


def test_a_model_pulled_again_mid_run_leaves_none_of_that_runs_answers_in_the_cache(tmp_path):
    asked = []

    def repulled(req):
        asked.append(req)
        if len(asked) == 2:  # the second answer on, another model answers under the name
            server.digests["llama3.2"] = "f" * 64
        return listbench_answer(req)

    with FakeOllama(responder=repulled) as server:
        result = call_benchrun(f"runner.host={server.url}", f"cache_dir={tmp_path / 'cache'}", "runner.concurrency=1",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr.startswith("benchrun: error: model llama3.2 changed on")) == (
        EXIT["runner"], True)
    assert (len(asked), stats(tmp_path / "cache").entries) == (18, 0)


def test_a_judge_pulled_again_mid_run_leaves_none_of_its_grades_in_the_cache(tmp_path):
    repulled = RepulledJudge()
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=repulled) as server:
        repulled.server = server
        result = call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5",
                               f"cache_dir={tmp_path / 'cache'}", "runner.concurrency=1",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr.startswith("benchrun: error: the judge model qwen2.5 changed on")) == (
        EXIT["runner"], True)
    assert [(m.model, m.entries) for m in stats(tmp_path / "cache").models] == [("llama3.2", 3)]
