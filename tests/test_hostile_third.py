"""Hostile input, third pass (issue 19's fresh pass of the same kinds): the cases it found bad, each with the rule it
now obeys.

- a gzip bomb (a 50 KB body that decodes to 50 MB), also gzip twice over: the bound counts the decoded bytes, so it is
  that sample's `TooLarge`; a body that is not the coding its Content-Encoding names is that sample's `DecodingError`
- a redirect to another server: never followed (the other server's answer was recorded as the named model's), that
  sample's `Redirected` error naming where it pointed; at preflight, one line
- a custom_scorer.py or custom_response.py that is not UTF-8 (Python imports a bad byte in a comment), and a scorer
  made by exec: one line naming the file (it was exit 4, `could not get source code`, after a line of Hydra's)
- the API key pasted as a value (`runner.model=$OPENAI_API_KEY`, a sweep's `task.name=a,KEY`, a runner file's
  model): refused before Hydra writes (it was in config.yaml, .hydra/, the manifest and the run directory's name)
- `export --output` or `report --output` naming a device or a pipe (/dev/full, /dev/stdout, a FIFO): written into (it
  was replaced by a regular file: as root, `--output /dev/full` put a CSV file in place of the device), a disk-full
  device one line; a symbolic link is written through, not replaced
- a resume that refuses (tampered records, a server not there) after a writer was SIGKILLed: it let go of run.lock
  cleanly, erasing the dead writer's note, so `verify` then said `run.json was edited` and gave no resume command;
  the note is put back unless the holder ended the run
- a custom_*.py that calls os._exit(0) at import, kills its own process, or loops: a dry run exited 0 having printed
  nothing, a run left a directory saying `running` and exited 0 (or hung for ever); now one line naming the file, found
  by importing it first in a process of its own within IMPORT_TIMEOUT_S
- a lone surrogate written as a YAML escape ("\\ud800") in a value, a template, a reference or a key, and a response
  class whose schema holds one or a NaN default: a traceback (the manifest cannot be UTF-8 or JSON); now one line
  naming the file (and for YAML the line and column)
- a lone surrogate in what a server says of its model (Ollama's digest, details, /api/show, /api/version; an
  OpenAI-compatible /models entry, the probe's system_fingerprint): a traceback writing run.json, the run left
  `running`; now kept as U+FFFD, as in an answer (escapes and NUL shown visibly by `show`)
- a benchmark name (`task.name`) with `/` in it, or too long for a file name: `task.name=../../../x` put the run
  directory outside the date folders (more `../` put it outside outputs, where `list` never looks), 300 characters a
  traceback (file name too long); now the name's slug, at most 64 characters, in the directory's name
- a preflight answer that is not the API's (Ollama's /api/tags, /api/show or /api/version as HTML, invalid JSON, JSON
  nested 10,000 deep or of the wrong shape; an OpenAI-compatible /models nested 10,000 deep): a traceback; now one
  line naming the server, exit 3
- a shared run whose run.lock or responses.jsonl is a symbolic link out of it (`run.lock` -> `~/.bashrc`): `rescore`
  and `resume` wrote through it, truncating the file it named; now refused in one line naming the link, and
  run.json, summary.json and the seal are replaced, never written through
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import zlib

import numpy as np
import pytest

from benchrun.compiler import importprobe
from benchrun.compiler.scoring import metrics
from benchrun.core.errors import EXIT
from benchrun.testing.http_fake import Response, json_response
from benchrun.testing.lab import Lab, Outcome, half_right
from benchrun.testing.ollama_server import FakeOllama, Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import odd_one
from tests.helpers.archives import read_jsonl, synthetic_run
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

LIMIT = 100_000
KEY = "sk-test-0123456789abcdef"
NO_SERVER = "runner.host=http://127.0.0.1:9"
ANSWER = {"model": "llama3.2", "created_at": "2024-01-01T00:00:00Z", "done": True, "done_reason": "stop",
          "message": {"role": "assistant", "content": '{"answer": 21}'}}
"""Ollama's answer to the sample of a = 3, rightly."""



def wire(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    """A whole HTTP response: `status`, `headers`, the body's length, and `body`."""
    head = [f"HTTP/1.1 {status}", *headers, f"Content-Length: {len(body)}", "Connection: close"]
    return "\r\n".join(head).encode() + b"\r\n\r\n" + body


def encoded(body: bytes, coding: str) -> bytes:
    return wire(body, "Content-Type: application/json", f"Content-Encoding: {coding}")


def padded_gzip(padding: int) -> bytes:
    """ANSWER gzipped, with `padding` spaces inside it, compressed as it is made (50 MB make 50 KB)."""
    text = json.dumps(ANSWER).encode()
    squeeze = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    parts = [squeeze.compress(text[:-1])]
    parts += [squeeze.compress(b" " * 2**20) for _ in range(padding // 2**20)]
    return b"".join([*parts, squeeze.compress(b"}"), squeeze.flush()])


def answers_to_three(lab: Lab) -> list[dict]:
    [run_dir] = lab.run_dirs()
    return [r for r in read_jsonl(run_dir / "responses.jsonl") if r["id"] == "times7:a=3"]


BOMB = padded_gzip(50 * 2**20)
ENCODED = {  # a = 3's body -> what is recorded for it (its text, else its error)
    "a gzip bomb": (encoded(BOMB, "gzip"), {"type": "TooLarge", "message": "the answer is longer than "
                                            f"runner.max_response_bytes ({LIMIT:,} bytes); the rest was not read"}),
    "a bomb gzipped twice": (encoded(gzip.compress(BOMB), "gzip, gzip"),
                             {"type": "TooLarge", "message": "the answer is longer than runner.max_response_bytes "
                                                             f"({LIMIT:,} bytes); the rest was not read"}),
    "not gzip": (encoded(b"{}", "gzip"), {"type": "DecodingError", "message": "the answer's body does not decode as "
                                          "its Content-Encoding (gzip) says: Error -3 while decompressing data: "
                                          "incorrect header check"}),
    "gzip": (encoded(gzip.compress(json.dumps(ANSWER).encode()), "gzip"), '{"answer": 21}'),
    "deflate": (encoded(zlib.compress(json.dumps(ANSWER).encode()), "deflate"), '{"answer": 21}'),
}


@pytest.mark.parametrize("body", list(ENCODED))
def test_a_compressed_answer_is_bounded_once_decoded(tmp_path, body):
    data, kept = ENCODED[body]
    with Lab(tmp_path, n=6, responder=odd_one(Reply(wire=data))) as lab:
        result = lab.call(*lab.args(f"runner.max_response_bytes={LIMIT}"))
        [answer] = answers_to_three(lab)
    assert result.returncode == EXIT["ok"], result.stderr
    assert (answer["text"], answer["error"]) == ((kept, None) if isinstance(kept, str) else (None, kept))


def redirect(to: str) -> Reply:
    return Reply(wire=wire(b"", f"Location: {to}", status="307 Temporary Redirect"))


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_a_redirect_is_never_followed(tmp_path, runner):
    """The server redirected to would answer 999 (and, as another model, be recorded as the one the run names)."""
    with FakeOllama(responder=lambda _: json.dumps({"answer": 999})) as other, \
            FakeOpenAI(models=["m"], responder=lambda _: json.dumps({"answer": 999})) as other_openai:
        target = f"{other.url}/api/chat" if runner == "ollama" else f"{other_openai.url}/chat/completions"
        with Lab(tmp_path, n=6, responder=odd_one(redirect(target))) as lab, \
                FakeOpenAI(models=["m"], responder=odd_one(redirect(target))) as openai:
            args = lab.args() if runner == "ollama" else [
                "runner=openai", f"runner.base_url={openai.url}", "runner.model=m", "task.path=bench",
                f"outputs={lab.root / 'outputs'}", "cache=false"]
            result = lab.call(*args)
            [answer] = answers_to_three(lab)
        assert (other.requests, other_openai.requests) == ([], [])
    assert result.returncode == EXIT["ok"], result.stderr
    assert (answer["text"], answer["error"]) == (None, {
        "type": "Redirected", "message": f"HTTP 307: redirected to {target}; benchrun follows no redirect, so that "
                                         "every answer comes from the server the run names: point the runner at the "
                                         "address it redirects to"})


def test_a_redirect_at_preflight_is_one_line(tmp_path):
    moved = Response(307, b"", wire=wire(b"", "Location: http://127.0.0.1:9/api/tags", status="307 Moved"))
    with Lab(tmp_path, n=6) as lab:
        served = lab.server.dispatch
        lab.server.dispatch = lambda request: moved if request.path == "/api/tags" else served(request)
        result = lab.call(*lab.args())
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: Ollama at {lab.server.url} refused the preflight: HTTP 307: redirected to "
        "http://127.0.0.1:9/api/tags; benchrun follows no redirect, so that every answer comes from the server the "
        "run names: point the runner at the address it redirects to\n"))


TASK = "- name: t\n  template: 'say {a}'\n  values:\n    a: [1, 2]\n  reference: ['1', '2']\n"
USER_CODE = {  # benchmark files -> what a dry run says
    "a scorer file not UTF-8": ({"tasks.yml": TASK + "  scorer: s\n",
                                 "custom_scorer.py": b"def s(response, reference):\n    return 1  # \xff\n"},
                                "in 'custom_scorer.py': line 2, column 17: not UTF-8 text (invalid start byte, "
                                "0xff); save it as UTF-8"),
    "a response file not UTF-8": ({"tasks.yml": TASK + "  format: F\n", "custom_response.py":
                                   b"from pydantic import BaseModel\nclass F(BaseModel):\n    x: int  # \xff\n"},
                                  "in 'custom_response.py': line 3, column 15: not UTF-8 text (invalid start byte, "
                                  "0xff); save it as UTF-8"),
    "a scorer made by exec": ({"tasks.yml": TASK + "  scorer: s\n",
                               "custom_scorer.py": "exec('def s(response, reference):\\n    return 1')\n"},
                              "in 'custom_scorer.py': scorer 's': its source code cannot be read (it was compiled from a "
                              "string, <string>, not read from a file), and the manifest records its sha256; define it "
                              "with def in the file"),
}


def dry_run(tmp_path, files: dict[str, str | bytes], benchrun=call_benchrun):
    for rel, data in files.items():
        path = tmp_path / "bench" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return benchrun("dry_run=true", "task.path=bench", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)


@pytest.mark.parametrize("case", list(USER_CODE))
def test_user_code_whose_source_cannot_be_read(tmp_path, case):
    files, message = USER_CODE[case]
    result = dry_run(tmp_path, files)
    assert (result.returncode, result.stderr, result.stdout) == (EXIT["usage"], f"benchrun: error: {message}\n", "")


PASTED = [  # where the key's value is given -> the file and key path named
    (["runner.model=" + KEY], "'config': runner.model"),
    (["runner_file=pasted.yml"], "'pasted.yml': model"),
    (["-m", f"task.name=a,{KEY}"], "'config': task.name"),
    (["runner=openai", f"+runner.options.stop=[x,{KEY}]"], "'config': runner.options.stop"),
]


@pytest.mark.parametrize(("args", "key"), PASTED, ids=[row[1] + " " + row[0][-1][:20] for row in PASTED])
def test_the_api_key_given_as_a_value_is_refused_before_anything_is_written(tmp_path, args, key):
    (tmp_path / "pasted.yml").write_text(f"runner_type: ollama\nmodel: {KEY}\n")
    result = call_benchrun(*args, "dry_run=true", NO_SERVER, cwd=tmp_path, env={"OPENAI_API_KEY": KEY})
    assert (result.returncode, result.stderr, result.stdout) == (EXIT["usage"], (
        f"benchrun: error: in {key}: secrets are never taken from the config, where they would be archived "
        "(the value of $OPENAI_API_KEY); put an API key in an environment variable and name it with "
        "runner.api_key_env, and give URLs without user names or passwords\n"), "")
    assert [p.name for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()] == ["pasted.yml"]


@pytest.mark.parametrize(("tasks", "holder"), [
    ('- name: t\n  template: "say {a}"\n  values: {a: [x, KEY]}\n  reference: [x, y]\n', "sample 2 of task 1"),
    ('- name: KEY\n  template: "say {a} KEY"\n  values: {a: [x]}\n  reference: [x]\n', "task 1"),
])
def test_a_benchmark_holding_the_api_key_is_refused_without_naming_it(tmp_path, tasks, holder):
    """The manifest keeps the benchmark's text as written and is never masked: a key in it would be archived."""
    result = call_benchrun("task.path=bench", NO_SERVER, f"outputs={tmp_path / 'outputs'}", cwd=write_bench(
        tmp_path, {"tasks.yml": tasks.replace("KEY", KEY)}).parent, env={"OPENAI_API_KEY": KEY})
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: {holder} holds the value of $OPENAI_API_KEY, which the manifest would keep as written; "
        "take the key out of the benchmark\n"))
    assert [p.name for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()] == ["tasks.yml"]


@pytest.mark.parametrize("command", ["export", "report"])
def test_an_output_that_is_a_pipe_is_written_into(tmp_path, command):
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    fifo = tmp_path / "rows"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = call_benchrun(command, str(run_dir), "--output", str(fifo), cwd=tmp_path, module="benchrun.audit")
        received = os.read(reader, 1 << 20)
    finally:
        os.close(reader)
    assert result.returncode == EXIT["ok"], result.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    first = b"run_id," if command == "export" else b"<!DOCTYPE html>"
    assert received.startswith(first)


def test_an_output_that_is_a_link_is_written_through(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    (tmp_path / "rows.csv").write_text("old\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "rows.csv")
    result = call_benchrun("export", str(run_dir), "--output", "link.csv", cwd=tmp_path, module="benchrun.audit")
    assert result.returncode == EXIT["ok"], result.stderr
    assert os.readlink(tmp_path / "link.csv") == str(tmp_path / "rows.csv")
    assert (tmp_path / "rows.csv").read_text().startswith("run_id,")


@pytest.mark.parametrize("refused", ["tampered records", "no server"])
def test_a_refused_resume_leaves_the_killed_writers_note(tmp_path, refused):
    with Lab(tmp_path, n=10) as lab:
        with lab.held_after(5, *lab.args()) as (proc, run_dir):
            lab.stop(proc, signal.SIGKILL, Outcome("killed"))
        note = (run_dir / "run.lock").read_text()
        if refused == "tampered records":
            (run_dir / "responses.jsonl").write_bytes((run_dir / "responses.jsonl").read_bytes()[:-20])
        else:
            lab.server.stop()
        resumed = lab.call("resume", str(run_dir), module="benchrun.audit")
        verified = lab.call("verify", str(run_dir), module="benchrun.audit")
    assert resumed.returncode != EXIT["ok"]
    assert (run_dir / "run.lock").read_text() == note
    pid = json.loads(note)["pid"]
    assert f"FAIL  run.json: says 'running', but no live process holds run.lock: its writer (pid {pid} on host " in \
        verified.stdout
    assert f"stopped before the run ended (killed, or its disk failed); finish it with: benchrun-audit resume {run_dir}" \
        in verified.stdout


ENDING = {  # what custom_scorer.py does at import -> how it ended the process importing it
    "import os\nos._exit(0)\n": "os._exit(0) or the like",
    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n": "killed by SIGKILL",
}


@pytest.mark.parametrize("source", list(ENDING), ids=list(ENDING.values()))
@pytest.mark.parametrize("name", ["custom_scorer.py", "custom_response.py"])
def test_user_code_that_ends_its_process_at_import(tmp_path, name, source):
    result = dry_run(tmp_path, {"tasks.yml": TASK, name: source}, run_benchrun)  # a real process: it might end
    assert (result.returncode, result.stderr, result.stdout) == (EXIT["usage"], (
        f"benchrun: error: in '{name}': cannot import: it ended the process importing it ({ENDING[source]}) before "
        "its last line\n"), "")


def test_user_code_that_loops_at_import(tmp_path, monkeypatch):
    monkeypatch.setattr(importprobe, "IMPORT_TIMEOUT_S", 1)
    result = dry_run(tmp_path, {"tasks.yml": TASK + "  scorer: s\n", "custom_scorer.py": "while True:\n    pass\n"})
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'custom_scorer.py': cannot import: still running after 1 s; a benchmark's file must define "
        "its functions and classes, not work at import\n"))


SURROGATE = ("is half of a UTF-16 surrogate pair, not a character; write the character itself (or \\U0001F600 for one "
             "beyond U+FFFF)")
def _nan_refused() -> str:
    """What json says of a NaN it may not write (Python 3.13 adds the value: `...not JSON compliant: nan`)."""
    try:
        json.dumps(float("nan"), allow_nan=False)
    except ValueError as err:
        return str(err)
    raise AssertionError("json wrote a NaN")


NAN_REFUSED = _nan_refused()


NOT_TEXT = {  # benchmark files -> what a dry run says
    "in a value": ({"tasks.yml": TASK.replace("a: [1, 2]", 'a: ["x\\ud800", 2]')},
                   f"in 'tasks.yml': line 4, column 9: \\ud800 {SURROGATE}"),
    "in a template": ({"tasks.yml": TASK.replace("'say {a}'", '"say {a} \\udfff"')},
                      f"in 'tasks.yml': line 2, column 13: \\udfff {SURROGATE}"),
    "in a reference": ({"tasks.yml": TASK.replace("['1', '2']", '["\\ud800", "2"]')},
                       f"in 'tasks.yml': line 5, column 15: \\ud800 {SURROGATE}"),
    "in a key": ({"tasks.yml": TASK.replace("    a: [1, 2]", '    "a\\ud800": [1, 2]')},
                 f"in 'tasks.yml': line 4, column 5: \\ud800 {SURROGATE}"),
    "in a schema": ({"tasks.yml": TASK + "  format: F\n", "custom_response.py": (
        "from pydantic import BaseModel, Field\n\nclass F(BaseModel):\n    x: int = Field(description='\\ud800')\n")},
        "in 'custom_response.py': format 'F' has no JSON schema: UnicodeEncodeError: 'utf-8' codec can't encode "
        "character '\\ud800' in position 38: surrogates not allowed"),
    "a NaN in a schema": ({"tasks.yml": TASK + "  format: F\n", "custom_response.py": (
        "from pydantic import BaseModel\n\nclass F(BaseModel):\n    x: float = float('nan')\n")},
        f"in 'custom_response.py': format 'F' has no JSON schema: ValueError: {NAN_REFUSED}"),
}


@pytest.mark.parametrize("case", list(NOT_TEXT))
def test_what_a_manifest_cannot_hold_is_refused(tmp_path, case):
    files, message = NOT_TEXT[case]
    result = dry_run(tmp_path, files)
    assert (result.returncode, result.stderr, result.stdout) == (EXIT["usage"], f"benchrun: error: {message}\n", "")


ODD = "x\ud800\x1b[2J\x00y"
KEPT = "x\ufffd\x1b[2J\x00y"


def odd_identity(served, path: str, body: dict):
    """The server's dispatch, but `body` as the answer to GET `path`."""
    return lambda request: json_response(body) if request.path == path else served(request)


def test_a_lone_surrogate_in_a_models_identity_is_kept_writable(tmp_path):
    listed = {"name": "llama3.2:latest", "model": "llama3.2:latest", "modified_at": "2024-01-01T00:00:00Z", "size": 1,
              "digest": ODD, "details": {"family": ODD}}
    with Lab(tmp_path / "ollama", n=4) as lab:
        lab.server.dispatch = odd_identity(lab.server.dispatch, "/api/tags", {"models": [listed]})
        result = lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
        verified = lab.call("verify", str(run_dir), module="benchrun.audit")
        shown = lab.call("show", str(run_dir), module="benchrun.audit")
    assert (result.returncode, verified.returncode, shown.returncode) == (EXIT["ok"], EXIT["ok"], EXIT["ok"])
    identity = json.loads((run_dir / "run.json").read_text())["identity"]
    assert (identity["digest"], identity["details"]) == (KEPT, {"family": KEPT})
    assert "digest x\ufffd\\x1b[2J\\x00y" in shown.stdout


def test_a_lone_surrogate_in_an_openai_model_entry_is_kept_writable(tmp_path):
    entry = {"id": "m", "object": "model", "owned_by": ODD, "created": 1, ODD: [ODD]}
    with Lab(tmp_path, n=4) as lab, FakeOpenAI(models=["m"], responder=half_right) as server:
        server.dispatch = odd_identity(server.dispatch, "/v1/models", {"object": "list", "data": [entry]})
        result = lab.call("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "task.path=bench",
                          f"outputs={lab.root / 'outputs'}", "cache=false")
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    identity = json.loads((run_dir / "run.json").read_text())["identity"]
    assert (identity["owned_by"], identity["details"]) == (KEPT, {KEPT: [KEPT]})


@pytest.mark.parametrize(("name", "part"), [
    ("../../../../escaped", "..-..-..-..-escaped"),
    ("x" * 300, "x" * 51 + "~" + hashlib.sha256(b"x" * 300).hexdigest()[:12]),
], ids=["../", "300 characters"])
def test_a_benchmark_name_is_a_slug_in_the_run_directory_name(tmp_path, name, part):
    with Lab(tmp_path, n=2) as lab:
        result = lab.call(*lab.args(f"task.name={name}"))
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    assert run_dir.parent.parent == tmp_path / "outputs"
    assert re.fullmatch(rf"[0-9-]+\.[0-9]+_{re.escape(part)}_llama3\.2", run_dir.name)
    assert json.loads((run_dir / "run.json").read_text())["benchmark"] == name


NOT_THE_API = "answered the preflight with what is not Ollama's answer"
PREFLIGHT = {  # (path, body) -> what the one line says after the server's address
    "HTML": ("/api/tags", b"<html>hi</html>", f"{NOT_THE_API} (not JSON (JSONDecodeError: Expecting value: line 1 "
                                               "column 1 (char 0)): hi ); runner.host must name an Ollama server"),
    "nested 10,000 deep": ("/api/tags", b"[" * 10_000 + b"]" * 10_000,
                           f"{NOT_THE_API} (JSON nested deeper than Python can follow); runner.host must name an "
                           "Ollama server"),
    "the wrong shape": ("/api/tags", b'{"models": "x"}', f"{NOT_THE_API} (ValidationError: models: 'x' is text, "
                        "where a list is taken); runner.host must name an Ollama server"),
    "show as a list": ("/api/show", b"[1, 2]", f"{NOT_THE_API} (TypeError: the answer is a list, not a JSON object); "
                                               "runner.host must name an Ollama server"),
    "version as text": ("/api/version", b"v1", f"{NOT_THE_API} (not JSON (JSONDecodeError: Expecting value: line 1 "
                                               "column 1 (char 0)): v1); runner.host must name an Ollama server"),
}


@pytest.mark.parametrize("case", list(PREFLIGHT))
def test_a_preflight_answer_that_is_not_the_apis_is_one_line(tmp_path, case):
    path, body, said = PREFLIGHT[case]
    with Lab(tmp_path, n=2) as lab:
        served = lab.server.dispatch
        lab.server.dispatch = lambda request: Response(200, body) if request.path == path else served(request)
        result = lab.call(*lab.args())
    assert (result.returncode, result.stderr) == (EXIT["runner"], f"benchrun: error: Ollama at {lab.server.url} {said}\n")


def test_an_openai_model_list_nested_too_deep_is_one_line(tmp_path):
    with Lab(tmp_path, n=2) as lab, FakeOpenAI(models=["m"]) as server:
        served = server.dispatch
        server.dispatch = lambda request: Response(200, b"[" * 10_000 + b"]" * 10_000) \
            if request.path == "/v1/models" else served(request)
        result = lab.call("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "task.path=bench",
                          f"outputs={lab.root / 'outputs'}")
    assert (result.returncode, result.stderr) == (EXIT["runner"], (
        f"benchrun: error: the server at {server.url} answered GET /models without a model list (JSON nested deeper "
        "than Python can follow); runner.base_url is the API root, usually ending in /v1\n"))


@pytest.fixture(scope="module")
def killed_after_three(tmp_path_factory):
    """A lab (its server up) and its run SIGKILLed after 3 of 6 answers; tests copy the run."""
    with Lab(tmp_path_factory.mktemp("killed"), n=6) as lab:
        with lab.held_after(3, *lab.args()) as (proc, run_dir):
            lab.stop(proc, signal.SIGKILL, Outcome("killed"))
        yield lab, run_dir


@pytest.mark.parametrize(("command", "name"), [("rescore", "run.lock"), ("resume", "run.lock"),
                                               ("resume", "responses.jsonl")])
def test_a_run_file_that_is_a_link_out_of_the_run_is_never_written_through(tmp_path, killed_after_three, command,
                                                                            name):
    lab, killed = killed_after_three
    shutil.copytree(lab.root, tmp_path, dirs_exist_ok=True)
    run_dir = tmp_path / killed.relative_to(lab.root)
    victim = tmp_path / "precious"
    victim.write_bytes((run_dir / name).read_bytes())
    before = victim.read_bytes()
    (run_dir / name).unlink()
    (run_dir / name).symlink_to(victim)
    result = call_benchrun(command, str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert (result.returncode, result.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir / name}': a symbolic link (to {victim}), where the run's own file belongs; "
        "benchrun never writes through one: put the file itself there\n"))
    assert victim.read_bytes() == before


def test_token_counts_and_durations_a_server_cannot_have_measured_are_not_reported(tmp_path):
    """A negative count over a negative duration gave 600,000,000 tokens/s, 10**30 tokens 1e32 prompt tokens/s."""
    def odd_counts(req):
        text = half_right(req)
        a = int(req.prompt.split()[4])
        return Reply(content=text, eval_count=-3, eval_duration=-5, prompt_eval_count=10**30,
                     prompt_eval_duration=10**30) if a % 2 else Reply(content=text, eval_count=5,
                                                                      eval_duration=50_000_000)
    with Lab(tmp_path, n=4, responder=odd_counts) as lab:
        result = lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    answers = {r["id"]: r for r in read_jsonl(run_dir / "responses.jsonl")}
    odd = answers["times7:a=1"]
    assert (odd["prompt_tokens"], odd["completion_tokens"]) == (None, None)
    assert "eval" not in odd["durations_ns"] and "prompt_eval" not in odd["durations_ns"]
    speed = json.loads((run_dir / "summary.json").read_text())["speed"]
    assert (speed["tokens_per_s"], speed["tokens_per_s_from"]) == (100.0, "server")


def test_a_scorers_numpy_scalars_are_its_numbers():
    """np.isclose and np.sum return NumPy scalars: np.True_ was refused as not a bool, np.int64(1) kept as 1.0."""
    assert metrics("s", np.bool_(True)) == {"s": 1} and type(metrics("s", np.int64(3))["s"]) is int
    assert metrics("s", {"x": np.float32(0.5), "y": np.False_}) == {"s.x": 0.5, "s.y": 0}
    with pytest.raises(TypeError, match=r"got array\(\[1, 2\]\)"):
        metrics("s", np.array([1, 2]))
