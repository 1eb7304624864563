"""The twenty-fifth hostile pass of issue 19, the asking side: a review of the twenty-fourth's asking code.

- an answer streamed in parts whose body is events but whose media type is JSON's (a proxy's relabelling) was told
  as streamed only where its first line is `data:` or `event:`: one opening with a comment (`: OPENROUTER
  PROCESSING`, a keep-alive `:ok`), an `id:` or `retry:` field, or a BOM was `not JSON (JSONDecodeError ...)`; and
  Ollama's JSON lines relabelled `application/json` were `Extra data: line 2 column 1`. Now a body is events when its
  first line is any field or comment of an event stream, and JSON lines when its first line is a JSON object and
  more lines follow (`runners.errorbody.streamed`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
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
