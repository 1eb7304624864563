"""The twenty-fifth hostile pass of issue 19, the asking side: a review of the twenty-fourth's asking code.

- an answer streamed in parts whose body is events but whose media type is JSON's (a proxy's relabelling) was told
  as streamed only where its first line is `data:` or `event:`: one opening with a comment (`: OPENROUTER
  PROCESSING`, a keep-alive `:ok`), an `id:` or `retry:` field, or a BOM was `not JSON (JSONDecodeError ...)`; and
  Ollama's JSON lines relabelled `application/json` were `Extra data: line 2 column 1`. Now a body is events when its
  first line is any field or comment of an event stream, and JSON lines when its first line is a JSON object and
  more lines follow (`runners.errorbody.streamed`)
- a 3xx that is no redirect (`304 Not Modified`, `300`, `399`) naming no address was said to be `a redirect that names
  no address ...: point the runner at the server's own address`, the server's own words dropped: httpx's `is_redirect`
  is every 3xx. Now a redirect is a 3xx naming an address or of a redirect's status (301, 302, 303, 307, 308); any
  other 3xx is an error status said as any is, `HTTP 304: Not Modified` (`runners.http._redirects`)
- a redirect with an empty Location (`Location: `) was said `HTTP 307: redirected to ; ... point the runner at the
  address it redirects to`: it names no address, and is said so (`runners.http._redirected`)
- `+judge.type=openai` (the judge's runner type is `judge.runner`) replaced judge.runner's type unsaid: the run was
  refused `judge.host: unknown key 'host'`, a key the user never wrote (the model's server, inherited for a judge of
  its type); `+judge.type=ollama` was taken and archived; and a judge's key mistyped (`+judge.typo=1`) was told `did
  you mean 'type'?`, the allowed keys listing `type` but neither `runner`, `repeats` nor `allow_self`. Now a judge's
  keys are said as the judge takes them: `type` is no key of its (`judge.type: unknown key 'type' (the judge's
  runner type is judge.runner: judge.runner=openai)`), the allowed keys are the judge's (`core.judgekeys`, read by `compose.config.judge_keys` and
  `describe_validation`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run
from tests.helpers.judgedruns import CAPITALS
from tests.helpers.p24_execute import asked, ollama_run, once, openai_run
from tests.helpers.wire import wire

EVENT = 'data: {"choices": [{"delta": {"content": "{\\"answer\\": 6}"}, "finish_reason": null}]}\n\ndata: [DONE]\n\n'
LINES = ('{"model": "llama3.2", "done": false, "message": {"role": "assistant", "content": "{\\"answer\\": 6}"}}\n'
         '{"model": "llama3.2", "done": true, "message": {"role": "assistant", "content": ""}}\n')
STREAMED = ("the server streamed the answer in parts ({}) where one whole answer was asked: set the server (or the "
            "proxy before it) not to stream")


@pytest.mark.parametrize("opening", ["", ": OPENROUTER PROCESSING\n\n", ":ok\n\n", "id: 1\n", "retry: 3000\n\n", "\ufeff"])
def test_an_event_stream_labelled_json_opening_otherwise_than_data_is_said_streamed(tmp_path, opening):
    _, done = openai_run(tmp_path, once(Reply(wire=wire((opening + EVENT).encode()))))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = "not a chat completion: " + STREAMED.format("an event stream")
    assert asked(done.stdout) == (None, {"type": "APIError", "message": said}, 1, [said])


def test_ollama_json_lines_labelled_json_are_said_streamed(tmp_path):
    done = ollama_run(tmp_path, once(Reply(wire=wire(LINES.encode()))))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = STREAMED.format("JSON lines")
    assert asked(done.stdout) == (None, {"type": "Refused", "message": said}, 1, [said])


@pytest.mark.parametrize(("ask", "status", "body", "said"), [
    ("openai", "304 Not Modified", b"", "HTTP 304: Not Modified"),
    ("openai", "399 Odd", b'{"error": {"message": "no such route"}}', "HTTP 399: no such route"),
    ("ollama", "300 Multiple Choices", b'{"error": "pick one"}', "HTTP 300: pick one")])
def test_a_3xx_that_is_no_redirect_is_said_as_the_server_says_it(tmp_path, ask, status, body, said):
    answer = once(Reply(wire=wire(body, status=status)))
    done = openai_run(tmp_path, answer)[1] if ask == "openai" else ollama_run(tmp_path, answer)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    error = {"type": "APIError" if ask == "openai" else "ResponseError", "message": said}
    assert asked(done.stdout) == (None, error, 1, [said])


def test_a_json_object_followed_by_other_text_is_not_said_streamed(tmp_path):
    done = ollama_run(tmp_path, once(Reply(wire=wire(LINES.splitlines()[1].encode() + b"\nxyz"))))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = ("not Ollama's chat answer: not JSON (JSONDecodeError: Extra data: line 2 column 1 (char 85)): "
            f"{LINES.splitlines()[1]} xyz")  # the body quoted since the thirty-third pass
    assert asked(done.stdout) == (None, {"type": "NotJSON", "message": said}, 1, [said])


TYPED = "judge.type: unknown key 'type' (the judge's runner type is judge.runner: judge.runner="
ALLOWED = ("(allowed: runner, model, host, options, repeats, allow_self, concurrency, timeout_s, retries, backoff_s, "
           "max_consecutive_failures, max_response_bytes, keep_alive, think)")


@pytest.mark.parametrize(("given", "said"), [
    ("+judge.type=openai", f"{TYPED}openai)"), ("+judge.type=ollama", f"{TYPED}ollama)"),
    ("+judge.typo=1", f"judge.typo: unknown key 'typo' {ALLOWED}"),
    ("+judge.zzz=1", f"judge.zzz: unknown key 'zzz' {ALLOWED}"),
    ("+judge.repeat=2", "judge.repeat: unknown key 'repeat' (did you mean 'repeats'?)")])
def test_a_judges_keys_are_said_as_the_judge_takes_them(tmp_path, given, said):
    write_bench(tmp_path, CAPITALS)
    done = bench_run(tmp_path, "http://127.0.0.1:9", "task.path=bench", "judge.model=qwen2.5", given)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'config': {said}\n")


@pytest.mark.parametrize("location", [b"", b"   "])
def test_a_redirect_naming_an_empty_address_names_none(tmp_path, location):
    moved = wire(b"{}", status="307 Temporary Redirect").replace(b"\r\n\r\n", b"\r\nLocation: %s\r\n\r\n" % location, 1)
    _, done = openai_run(tmp_path, once(Reply(wire=moved)))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = ("HTTP 307: a redirect that names no address (an empty Location header); benchrun follows no redirect: "
            "point the runner at the server's own address")
    assert asked(done.stdout) == (None, {"type": "Redirected", "message": said}, 1, [said])
