"""Hostile input, seventh pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad, each
with the rule it now obeys.

- a list of servers where one lists the model's digest as `sha256:<hex>` or in upper case: refused as serving a
  different model, though the digest is the same; now digests are compared as the one hash they name
- `runner.options.stop=['']`: taken, and every answer ended before its first token (an empty string is found at
  once); `top_k=true`, `temperature=true`, `seed='5'`: taken as 1, 1.0 and 5, though config.yaml and run.json keep
  (and the server gets) `true` and `'5'`; now refused, naming the option
- a user scorer writing to file descriptor 3 or 4 (as a shell's `3>debug.log` would give one): those were the
  scorer process's pipes, and a line there was taken as a reply (a traceback in benchrun.log for each, the call timed
  out; `[seq, metrics, null]` was another call's score); now the pipes are kept at 100 and above, and a line there
  that is not the reply to the call being made is that call's error, the process replaced
- one server's URL (`runner.host`, `runner.base_url`, `judge.host`) with a port beyond 65535: a traceback's last line
  (`ValueError: Port out of range 0-65535`, exit 1); `ftp://...`, `http://`: asked, then `the host name '' in
  runner.host=http: does not resolve`; now held to what each URL of a list is, naming the key
- an Ollama answer saying `"done": false` (a part of an answer, which no non-streamed answer is): taken and scored
  as the whole answer; now retried, then that sample's error
- an OpenAI-compatible answer whose body is empty (a 200 or a 204), or not UTF-8: `not a chat completion:` and
  nothing after it, or the body quoted with its bad byte replaced, as if it were JSON of the wrong shape; now it says
  the body is not JSON, and why
- `OLLAMA_API_KEY` (which the official client sends) printed by a benchmark's `custom_*.py` as the run imports it:
  kept in benchrun.log as printed, the key being registered for masking only when the runner was made, after the
  compile; now registered with the config, as runner.api_key_env's is (a key too short to mask is refused on a dry
  run too)
- a scorer's metric named with a line break, a tab or an escape (`{'two\\nlines': 1}`): kept, a summary row and the
  console's table split across lines (an escape reaching the terminal); now that call's error, as a name too long is
- a 5xx of the server's own fault whose message says "invalid" (an Ollama panic's `invalid memory address or nil
  pointer dereference`, a proxy's 503 `invalid upstream response`): not retried, as if the request were invalid; now
  only an invalid request, argument, value, ... is, and never a 502, 503 or 504
- a server echoing the API key percent-encoded (`%2B`, `%2f`), or JSON-escaped, and a key holding `"` or `\\` even as
  sent: kept unmasked (answers are masked as JSON, where such a key is escaped); now each form is masked as the key is
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from urllib.parse import quote, quote_plus

import pytest

from benchrun.compiler.scoring import metrics
from benchrun.core.errors import EXIT
from benchrun.testing.lab import SCORER, Lab
from benchrun.testing.ollama_server import FakeOllama, Reply, fake_digest
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer, odd_one
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import scorer, write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS
from tests.helpers.wire import ANSWER, asking, records, wire

DIGEST = fake_digest("llama3.2")


def test_one_digest_written_two_ways_is_one_model_to_a_list_of_servers(tmp_path):
    spellings = [DIGEST, f"sha256:{DIGEST}", DIGEST.upper(), f"SHA256:{DIGEST.upper()}"]
    with ExitStack() as stack:
        servers = [stack.enter_context(FakeOllama(models=["llama3.2"], responder=listbench_answer,
                                                  digests={"llama3.2": spelt})) for spelt in spellings]
        urls = ",".join(server.url for server in servers)
        result = call_benchrun(f"runner.host=[{urls}]", "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    assert len(read_jsonl(run_dir / "responses.jsonl")) == 18
    hosts = json.loads((run_dir / "run.json").read_text())["identity"]["hosts"]
    assert [host["digest"] for host in hosts] == spellings  # kept as each server wrote it


KEY = 'sk-Ab+cd/ef=gh"ij\\kl~mn0123'
"""A key of visible ASCII with what URLs and JSON escape: + / = " \\ ~."""
ECHOED = {"percent-encoded": quote(KEY, safe=""), "percent-encoded in lower case": quote(KEY, safe="").replace(
    "%2B", "%2b").replace("%2F", "%2f").replace("%3D", "%3d").replace("%22", "%22").replace("%5C", "%5c"),
          "form-encoded": quote_plus(KEY), "with ~ percent-encoded too": quote(KEY, safe="").replace("~", "%7E"), "JSON-escaped": json.dumps(KEY)[1:-1], "as it is": KEY}


def test_a_key_a_server_echoes_url_or_json_encoded_is_masked_as_the_key_is(tmp_path):
    said = " | ".join(ECHOED.values())

    def echoing(req):
        return Reply(status=400, error=f"bad {said}") if req.prompt.endswith(" 3 and 7") else f"{{\"x\": \"{said}\"}}"

    with FakeOpenAI(models=["m"], responder=echoing, api_key=KEY) as server:
        lab = Lab(tmp_path, n=5)
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "task.path=bench",
                               f"outputs={tmp_path / 'outputs'}", "runner.retries=0", cwd=tmp_path,
                               env={"OPENAI_API_KEY": KEY})
    assert result.returncode == EXIT["ok"], result.stderr
    [run_dir] = lab.run_dirs()
    masked = " | ".join(["***"] * len(ECHOED))
    assert [(r["text"], r["error"]) for r in read_jsonl(run_dir / "responses.jsonl")] == [
        (None, {"type": "APIError", "message": f"HTTP 400: bad {masked}"}) if a == 3 else (f'{{"x": "{masked}"}}', None)
        for a in range(5)]
    forms = {form.encode() for form in ECHOED.values()} | {json.dumps(KEY).encode()[1:-1]}
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and any(form in p.read_bytes() for form in forms)]
    assert leaks == [] and not any(form in result.stdout + result.stderr for form in ECHOED.values())


OPTIONS = {  # an option as given -> the key and what is wrong, for Ollama's options and runner=local's alike
    "+runner.options.stop=['']": ("stop", "an empty stop string, which every text starts with: every answer would "
                                          "end before its first token; leave it out"),
    "+runner.options.stop=[END,'']": ("stop", "an empty stop string, which every text starts with: every answer "
                                              "would end before its first token; leave it out"),
    "+runner.options.top_k=true": ("top_k", "Input should be a valid integer, not true"),
    "++runner.options.temperature=true": ("temperature", "Input should be a valid number, not true"),
    "++runner.options.seed='5'": ("seed", 'Input should be a valid integer, not "5"'),
}


@pytest.mark.parametrize("runner", ["ollama", "local"])
@pytest.mark.parametrize("option", list(OPTIONS))
def test_an_option_no_server_takes_as_meant_is_refused_before_anything_is_asked(tmp_path, option, runner):
    key, why = OPTIONS[option]
    result = call_benchrun(f"runner={runner}", "dry_run=true", option, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'config': runner.options.{key}: {why}\n")


def test_a_scorer_writing_to_descriptors_it_does_not_own_costs_only_its_own_call(tmp_path):
    writes = "if values['a'] == 1:\n    for fd in (3, 4, 100, 101):\n        try:\n            os.write(fd, b'debug\\n')\n" \
             "        except OSError:\n            pass\nreturn 1"
    with Lab(tmp_path, n=4, latency_s=0, scorer="import os\n" + scorer(writes)) as lab:
        assert lab.call(*lab.args("scorer_timeout_s=5")).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
    foreign = {"type": "ScorerProtocolError", "message": (
        "the scorer wrote \"debug\\n\" to the scorer process's reply pipe, a file descriptor of benchrun's: what a "
        "scorer prints goes to stdout or stderr (benchrun.log); a file it writes, it opens")}
    assert [(s["metrics"], s["error"]) for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "s"] == [
        (None, foreign) if a == 1 else ({"s": 1}, None) for a in range(4)]
    assert "Traceback" not in (run_dir / "benchrun.log").read_text()



def test_a_scorer_closing_the_reply_pipe_ends_its_process_in_one_line_of_the_log(tmp_path):
    closes = "if values['a'] == 1:\n    os.close(101)\nreturn 1"
    with Lab(tmp_path, n=3, latency_s=0, scorer="import os\n" + scorer(closes)) as lab:
        assert lab.call(*lab.args("scorer_timeout_s=5")).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
    died = {"type": "ScorerProcessDied", "message": "the scorer's process ended (exit code 1) during this call"}
    assert [(s["metrics"], s["error"]) for s in read_jsonl(run_dir / "scores.jsonl") if s["scorer"] == "s"] == [
        ({"s": 1}, None), (None, died), ({"s": 1}, None)]
    log = (run_dir / "benchrun.log").read_text()
    assert ("Traceback" in log, "scorer 's' closed the scorer process's reply pipe (bad file descriptor): the "
            "process ends, and the run starts another" in log) == (False, True)

SERVERS = {  # one server's URL -> what is wrong with it
    "runner.host=http://127.0.0.1:99999": "runner.host: 'http://127.0.0.1:99999' is not a server's URL: its port is "
                                          "not a number from 1 to 65535",
    "runner.host=ftp://gpu1:11434": "runner.host: 'ftp://gpu1:11434' is not a server's URL (http://host:port)",
    "runner.host=http://": "runner.host: 'http://' is not a server's URL (http://host:port)",
    "judge.host=http://gpu2:70000": "judge.host: 'http://gpu2:70000' is not a server's URL: its port is not a number "
                                    "from 1 to 65535",
}


@pytest.mark.parametrize("given", list(SERVERS))
def test_one_servers_url_is_held_to_what_a_list_of_them_is(tmp_path, given):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    result = call_benchrun(given, "task.path=bench", "judge.model=qwen2.5", f"outputs={tmp_path / 'outputs'}",
                           cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'config': {SERVERS[given]}\n")
    assert list((tmp_path / "outputs").rglob("*")) == []


def test_an_ollama_answer_that_says_it_is_not_done_is_not_taken_as_an_answer(tmp_path):
    unfinished = ANSWER.replace(b'"done": true', b'"done": false')
    with Lab(tmp_path, n=4, latency_s=0, responder=odd_one(Reply(wire=wire(unfinished)))) as lab:
        assert lab.call(*lab.args("runner.backoff_s=0")).returncode == EXIT["ok"]
    refused = {"type": "BrokenAnswer", "message": "the answer says it is not done (done: false): a part of an answer, "
                                                  "not taken as one"}
    assert [(r["id"], r["text"] is None, r["error"], r["attempts"]) for r in records(lab)] == [
        (f"times7:a={a}", a == 3, refused if a == 3 else None, 2 if a == 3 else 1) for a in range(4)]


NOT_JSON = {  # an OpenAI-compatible answer's body -> what the sample's error says of it
    b"": "not JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0)): an empty body",
    b'{"choices": [{"message": {"role": "assistant", "content": "caf\xe9"}}]}': (
        "not JSON (UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 62: invalid continuation "
        "byte): {\"choices\": [{\"message\": {\"role\": \"assistant\", \"content\": \"caf\ufffd\"}}]}"),
}


@pytest.mark.parametrize("body", list(NOT_JSON), ids=["empty", "latin-1"])
def test_an_answer_that_is_not_json_says_why(tmp_path, body):
    odd = odd_one(Reply(wire=wire(body)))
    with FakeOpenAI(models=["m"], responder=odd) as server, Lab(tmp_path, n=4, latency_s=0) as lab:
        assert lab.call(*asking(lab, server, "openai", "runner.retries=0")).returncode == EXIT["ok"]
    [error] = [r["error"] for r in records(lab) if r["error"]]
    assert error == {"type": "APIError", "message": f"not a chat completion: {NOT_JSON[body]}"}


def test_the_ollama_key_printed_by_a_benchmarks_code_as_it_is_imported_is_masked(tmp_path):
    key = "ol-0123456789abcdefghijKLMN"
    printing = "import os\n\nprint('the key:', os.environ.get('OLLAMA_API_KEY'))\n\n\n" + SCORER
    with Lab(tmp_path, n=2, latency_s=0, scorer=printing) as lab:
        result = call_benchrun(*lab.args(), cwd=tmp_path, env={"OLLAMA_API_KEY": key})
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    assert "custom_scorer.py printed while it was imported:\nthe key: ***\n" in (run_dir / "benchrun.log").read_text()
    assert [p for p in tmp_path.rglob("*") if p.is_file() and key.encode() in p.read_bytes()] == []


@pytest.mark.parametrize("name", ["two\nlines", "a\ttab", "\x1b[31mred", "nul\x00"])
def test_a_metric_name_holding_a_control_character_is_that_calls_error(name):
    with pytest.raises(TypeError) as raised:
        metrics("s", {name: 1, "fine": 1})
    assert str(raised.value) == (f"scorer s gave a metric named {name!r}: a name is a string of 1 to 200 characters, "
                                 "none of them a control character (a line break, a tab, ...)")


SERVER_FAULTS = {  # a 5xx a retry can mend, though its message says "invalid" -> the runner asked
    (500, "runtime error: invalid memory address or nil pointer dereference"): "ollama",
    (503, "Service Unavailable: invalid upstream response"): "openai",
    (502, "Bad Gateway: upstream sent an invalid request line"): "openai",
}


@pytest.mark.parametrize(("status", "said"), list(SERVER_FAULTS))
def test_a_servers_own_fault_is_retried_though_it_says_invalid(tmp_path, status, said):
    odd = odd_one(Reply(status=status, error=said))
    with FakeOpenAI(models=["m"], responder=odd) as server, Lab(tmp_path, n=4, latency_s=0, responder=odd) as lab:
        args = asking(lab, server, SERVER_FAULTS[status, said], "runner.retries=2", "runner.backoff_s=0")
        assert lab.call(*args).returncode == EXIT["ok"]
    [(attempts, error)] = [(r["attempts"], r["error"]["message"]) for r in records(lab) if r["error"]]
    assert (attempts, error) == (3, f"HTTP {status}: {said}")
