"""Hostile input, twelfth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a judge model pulled again while the run graded (`ollama pull` of a new version under the judge's name): the
  eighth pass asks the model's digest again as the run ends, but not the judge's, so the run completed (exit 0) and
  run.json said one judge, of the digest it began with, gave every grade; now the judge's digest is asked again too
  (`execute.session`), and one that changed fails the run (its answers and grades kept), naming both digests and
  the server
- a custom scorer returning a dict subclass, or keys of a str subclass, whose own methods lie: `__len__` saying 1
  of a dict of 100,000 metrics (the bound of 256 passed), `items()` giving 100,000 metrics of a dict holding one
  (scores.jsonl took them, summary.json grew to 16 MB), a key's `__len__` saying 1 of a name of 5 MB (kept whole in
  scores.jsonl and the summary), a key's `__format__` writing another name than the key's, keys that are one name
  by their text but apart by their `__hash__` (the first dropped without a word); now a dict and its keys are read
  through dict's and str's own methods (`compiler.scoring.metrics`), as the ninth pass reads an int, and a name
  given twice is that call's scorer error
- a server's host name that no request can be sent to (`OLLAMA_HOST=ｇｐｕ１`, full-width letters; `http://①:1`, an
  empty label `a..b`, a label of 64 characters, an IPv4 address `10.0.0.256`): taken by the config, then a
  traceback as the runner was made or its name resolved (`httpx.InvalidURL: Invalid IDNA hostname`, `UnicodeError:
  encoding with 'idna' codec failed`, exit 1); now refused with the other malformed URLs (`core.serverurls`), naming
  the key and why, before anything is made (exit 2)
- a custom scorer that moves the working directory (`os.chdir('/')`) or sets an environment variable: the change
  reached every later call in the scorer process, so a score depended on which samples that process had scored
  before it (and on whether a timeout had replaced it); now every call starts in the directory and environment the
  first call found (`scorer_worker`)
- a scorer writing to the scorer process's reply pipe (a file descriptor of 100 or above) a line in the shape of
  its call's reply with 300 metrics, a metric of another scorer (`{"other": 1}`) or a name of 201 characters after
  the scorer's: taken as the reply (the ninth pass checked each name and number, not how many or whose), the bound
  on metrics that `scoring.metrics` keeps passed by a line it never wrote; now a reply is taken only as that call's
  scorer could give it (`grading`: at most 256 metrics, each named as that scorer's, of at most 200 characters
  after it), else it is that call's `ScorerProtocolError`, the process replaced
- a custom scorer printing without end (40 MB a call): the scorer process wrote stdout and stderr straight into
  benchrun.log, which grew by all of it (80 MB for 2 samples, 40 GB for 1,000: the disk filled at the run's pace);
  now the run reads what the scorers print from a pipe (`execute.scorerprocess`, split from `grading`) and keeps at
  most 64 MiB of it in the log each session, then one line saying the rest is not kept

What held (tried, nothing new): HTTP: a 307 to another port (not followed, `Redirected`, so no key reaches another
host), a gzip body of 200 MB decoded (`TooLarge` at runner.max_response_bytes, counted decoded), 10,000 response
headers (the answer kept), one header of 1 MB (`RemoteProtocolError: Receive buffer too long`, that sample's error),
a header echoing the API key (headers are not kept), a 503 with `Retry-After: 999999999` (not obeyed: the backoff's
8 s cap), a `101 Switching Protocols`, an HTTP/2 preface, a body with no status line, a head then a short body (each
that sample's error, one line). benchrun does not stream (one body per request), so no stream case applies. The
environment: `OLLAMA_HOST` of `:0`, `[::1]:x`, spaces or a line break around it, `gpü`, `.../v1/v1/`, `%zz` in the
path, a bare `?` or `#` (each read as a URL or refused naming runner.host); `resume --host` is checked by the same
config model. The scorer: numpy's float64, float32, float16, longdouble, bool_, int64 and a 0-d array (read as
Python's), a 1-d array and complex128 (refused), a Fraction (its float), a Fraction past any float (that call's
OverflowError), a Decimal and the string "1.0" (refused, one line), `sys.exit(0)` in a call (that call's
`SystemExit`), closing file descriptors 1 and 2 (each call's own OSError), `time.sleep(10**6)` (that call's
`TimeoutError` at scorer_timeout_s). The judge: a grade of 11 or 0 for `Field(ge=1, le=10)`, `"7.5"`, `"٧"` (the
format check refuses each, that answer's `JudgeReplyInvalid`), `7.0` for an int (7, as JSON Schema reads it), a reply
echoing the API key beside its grade (masked, `***`, no file holds the key); a judge that is the model it grades
(refused unless judge.allow_self, the tenth pass). Per-answer cost: benchrun has no price settings; token counts of
every odd type were covered by the fourth, eighth and ninth passes.
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.recordvalues import short_digest
from benchrun.execute.scorerprocess import PRINTED_MAX
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama, fake_digest
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import scorer, write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, RepulledJudge
from tests.helpers.wire import records

pytestmark = pytest.mark.slow


def test_a_judge_pulled_again_while_the_run_asks_fails_the_run_naming_both_digests(tmp_path):
    repulled = RepulledJudge()
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=repulled) as server:
        repulled.server = server
        result = call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                               "runner.concurrency=1", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
    began = fake_digest("qwen2.5")
    line = (f"the judge model qwen2.5 changed on {server.url} while the run asked: digest {short_digest(began)} when "
            f"it began, digest {short_digest('f' * 64)} as it ended (pulled again?); its grades may come from either "
            "model and cannot be told apart: run it again")
    info = json.loads((run_dir / "run.json").read_text())
    assert (result.returncode, result.stderr, info["status"], info["reason"]) == (
        EXIT["runner"], f"benchrun: error: {line}\n", "failed", line)
    assert (info["judge"]["identity"]["digest"], len(read_jsonl(run_dir / "judgements.jsonl"))) == (began, 3)


LYING_ITEMS = """class Many(dict):
    def items(self):
        return ((f'k{i}', 1) for i in range(100_000))

return Many(fine=1)"""
LYING_LEN = """class Few(dict):
    def __len__(self):
        return 1

return Few((f'k{i}', 1) for i in range(100_000))"""
LYING_KEY = """class Short(str):
    def __len__(self):
        return 1

return {Short('y' * 5_000_000): 1}"""
LYING_FORMAT = """class Plain(str):
    def __format__(self, spec):
        return 'two\\nlines'

return {Plain('fine'): 1}"""
TWO_NAMES = """class Apart(str):
    def __hash__(self):
        return 5

    def __eq__(self, other):
        return other is self

return {Apart('a'): 1, 'a': 0}"""
SAID = "scorer result s has 100,000 metrics, more than 256"
NAMED = ("scorer s gave a metric named '" + "y" * 56 + "...: a name is a string of 1 to 200 characters, "
         "none of them a control character (a line break, a tab, ...)")


@pytest.mark.parametrize(("body", "error"), [
    (LYING_ITEMS, None),
    (LYING_LEN, SAID),
    (LYING_KEY, NAMED),
    (LYING_FORMAT, None),
    (TWO_NAMES, "scorer result s names one metric twice (keys of a str subclass, equal as strings)"),
])
def test_a_scorers_dict_and_its_keys_are_read_as_dict_and_str_read_them(tmp_path, body, error):
    with Lab(tmp_path, n=1, latency_s=0, scorer=scorer(body)) as lab:
        result = lab.call(*lab.args())
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    [(metrics, said)] = [(s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"]
    assert (metrics, said) == ((None, {"type": "TypeError", "message": error}) if error else ({"s.fine": 1}, None))


UNASKABLE = {  # (arguments, environment) -> the key at fault, the URL as read, its host, why
    "full-width, from $OLLAMA_HOST": ((), {"OLLAMA_HOST": "ｇｐｕ１"}, "runner.host (from $OLLAMA_HOST)",
                                      "ｇｐｕ１:11434", "ｇｐｕ１",
                                      "each label 1 to 63 characters, in IDNA: Codepoint U+FF47 at position 1 of 'ｇｐｕ１' not "
                                      "allowed"),
    "an empty label": (("runner.host='http://a..b:1'",), {}, "runner.host", "http://a..b:1", "a..b",
                       "an empty label; each label is 1 to 63 characters"),
    "a label of 64": ((f"runner.host='http://{'a' * 64}.b:1'",), {}, "runner.host", f"http://{'a' * 64}.b:1",
                      f"{'a' * 64}.b", "a label of 64 characters; each label is 1 to 63 characters"),
    "a circled digit": (("runner=openai", "runner.model=m", "runner.base_url='http://①:1/v1'"), {}, "runner.base_url",
                        "http://①:1/v1", "①",
                        "each label 1 to 63 characters, in IDNA: Codepoint U+2460 at position 1 of '①' not allowed"),
}


@pytest.mark.parametrize("case", UNASKABLE)
def test_a_host_name_no_request_can_be_sent_to_is_refused_naming_the_key(tmp_path, case):
    args, env, key, url, host, why = UNASKABLE[case]
    result = call_benchrun(*args, f"outputs={tmp_path / 'outputs'}", cwd=tmp_path, env=env)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}: '{url}' is not a server's URL: its host '{host}' is not a host name "
        f"that can be asked ({why})\n"))
    assert list(tmp_path.rglob("run.json")) == []


def test_an_ipv4_address_of_an_octet_past_255_is_refused_naming_the_key(tmp_path):
    result = call_benchrun("judge.model=qwen2.5", "judge.host='http://10.0.0.256:1'", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'config': judge.host: 'http://10.0.0.256:1' is not a server's URL: its host '10.0.0.256' "
        "is not an IPv4 address (four numbers from 0 to 255)\n"))


MOVING = """import os
found = {'cwd_moved': int(os.getcwd() == '/'), 'env_set': int(os.environ.get('LEFT_BY_A_SCORER') == 'x')}
os.chdir('/')
os.environ['LEFT_BY_A_SCORER'] = 'x'
return found"""


def test_a_scorer_moving_its_directory_or_setting_the_environment_leaves_the_next_call_as_it_was(tmp_path):
    with Lab(tmp_path, n=3, latency_s=0, scorer=scorer(MOVING)) as lab:
        result = lab.call(*lab.args())
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert [(s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"] == [
        ({"s.cwd_moved": 0, "s.env_set": 0}, None)] * 3


FORGING = """import json
import os
line = json.dumps([0, {FORGED}, None]).encode() + b'\\n'
for fd in range(100, 110):
    try:
        os.write(fd, line)
    except OSError:
        pass
return 1"""
FORGED = {"300 metrics": "{f's.k{i}': 1 for i in range(300)}", "another scorer's": "{'other': 1}",
          "a name of 201": "{'s.' + 'n' * 201: 1}"}


@pytest.mark.parametrize("case", FORGED)
def test_a_reply_forged_on_the_reply_pipe_is_taken_only_as_the_called_scorer_could_give_it(tmp_path, case):
    with Lab(tmp_path, n=1, latency_s=0, scorer=scorer(FORGING.replace("{FORGED}", FORGED[case]))) as lab:
        result = lab.call(*lab.args())
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    [(metrics, error)] = [(s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"]
    assert (metrics, error["type"]) == (None, "ScorerProtocolError")
    assert error["message"].endswith("to the scorer process's reply pipe, a file descriptor of benchrun's: what a "
                                     "scorer prints goes to stdout or stderr (benchrun.log); a file it writes, it opens")


def test_what_scorers_print_is_kept_in_the_log_up_to_a_bound(tmp_path):
    with Lab(tmp_path, n=2, latency_s=0, scorer=scorer("print('x' * 40_000_000)\nreturn 1")) as lab:
        result = lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    printed = (b"x" * 40_000_000 + b"\n") * 2
    assert (run_dir / "benchrun.log").read_bytes() == printed[:PRINTED_MAX] + (
        b"\nbenchrun: the scorers printed more than 67,108,864 bytes; the rest of what they print is not kept\n")
    assert [s["metrics"] for s in records(lab, "scores.jsonl") if s["scorer"] == "s"] == [{"s": 1}] * 2
