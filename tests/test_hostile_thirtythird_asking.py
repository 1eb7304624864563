"""The thirty-third hostile pass of issue 19, the asking side.

1. a format check's detail quoted the answer's values as Python writes them (jsonschema's messages): `grade: True is
   not of type 'number'` of JSON's `true`, `None` of `null`, `{'a': 1}` of `{"a": 1}`, `'3'` of `"3"`. The values of
   the answer (and a schema's value a message quotes: an enum's, a const's, a `not`'s) are said in JSON's words
   (`execute.formatcheck.json_words`); the schema's names (a type, a pattern, a required key) stay quoted as before.
   Nothing reads a detail back (rescore compares metrics): older archives verify and rescore as before. Earlier tests
   expected the old words
2. an OpenAI-compatible server's model list (or Ollama's) holding a name with white space at an end or a character
   that does not print was listed bare (`it serves: m , x`), the space unseen: a name a list would not tell apart
   (empty, white space at an end, a character that does not print, a comma) is quoted and escaped, `'m '`
   (`core.text.names_listed`, which the compiler's lists share: a shared module)
3. an error whose body (or its `error`, its `message`) is a number too large to hold (`1e999`, an integer of more
   digits than Python converts) was said `HTTP 400: Infinity`, `HTTP 400: {"code": Infinity}`, a word the server did
   not write: a short body is quoted as its own text (`HTTP 400: {"error": 1e999}`), and where the error is quoted
   from its JSON (a 200 saying an error, a long body), the number is said `a number too large to hold`
   (`runners.errorbody.server_message`, `quoted`)
4. an Ollama chat answer that is no JSON was said in the JSON reader's words alone: an empty body (a 200, a 204 No
   Content) `not Ollama's chat answer: Expecting value: line 1 column 1 (char 0)`, not what came, where an
   OpenAI-compatible one says `not JSON (JSONDecodeError: ...): an empty body`. Both say it alike, the body quoted
   (`runners.errorbody.not_json`, `runners.ollamaread._as_typed`); an earlier test expected the old words
5. a status below 100 (`HTTP/1.1 099 Odd`, `000`) was said in the HTTP parser's class's words: `InformationalResponse
   status_code should be in range [100, 200), not 99`; said `HTTP 99 (a status HTTP does not define)`, as one above
   599 is (`runners.base.transport_failure`)
6. a list of servers one of which says its version with white space at an end (`"0.12.6 "`) or a line break in it
   was warned of as running another version than `0.12.6` in words that could not tell the two apart (`http://a
   0.12.6 , http://b 0.12.6`), a line break as a space: said as a list says a name (`'0.12.6 '`, `'0.1\\nx'`:
   `execute.hosts._said` through `core.text.name_listed`, the rule of 2.)
7. a 206 Partial Content (a part of a body, which only a request for a range is answered with; benchrun sends
   none) was taken as a whole answer, its JSON parsed and recorded: refused as a part of an answer and asked again
   (`runners.http.bounded`, every runner's response hook; the preflight says it as not Ollama's answer)
8. a format's `uniqueItems` (pydantic writes it for a `set[...]`) over items jsonschema cannot sort (`[1, "2", 3,
   ...]`, objects) was explained by comparing each pair: an answer of 8,000 such items, anything else in it wrong,
   held the run's event loop 10 s, 20,000 a minute (as a backtracking regex did until the eleventh pass). Items are
   compared by jsonschema-rs, in linear time, the error in jsonschema's words (`execute.formatcheck._unique_items`)
9. an error status whose line gives no phrase (`HTTP/1.1 500`) and whose body is empty (or white space) was said
   `HTTP 500:`, nothing after the colon: `HTTP 500: an empty body` (`runners.errorbody._unsaid`)
"""

from __future__ import annotations

import json
import math

import jsonschema._keywords
import pytest

from benchrun.core.errors import EXIT
from benchrun.execute import hosts
from benchrun.execute.runners.errorbody import Said, error_said, server_message
from benchrun.testing.chat import Reply
from tests.helpers.p24_execute import asked, ollama_run, once, openai_run
from tests.helpers.p32_asking import listed_ids, versions_warned
from tests.helpers.p33_asking import GRADED, UNIQUE_TAGS, errored
from tests.helpers.wire import wire


@pytest.mark.parametrize(("answer", "detail"), [
    ('{"grade": true}', "grade: true is not of type 'number'"),
    ('{"grade": null}', "grade: null is not of type 'number'"),
    ('{"grade": {"a": 1}}', "grade: {\"a\": 1} is not of type 'number'"),
    ('{"grade": "3"}', "grade: \"3\" is not of type 'number'"),
    ('{"grade": 1, "verdict": "x"}', 'verdict: "x" is not one of ["right", "wrong"]'),
    ('{"grade": 1, "pair": {"a": false}}', 'pair: {"a": null} was expected'),
    ('{"grade": 1, "word": "no"}', 'word: "yes" was expected'),
    ('{"grade": 1, "flag": false}', 'flag: false should not be valid under {"type": "boolean"}'),
    ('[true]', "[true] is not of type 'object'"),
    ("{}", '"grade" is a required property')])
def test_a_format_checks_detail_says_the_answers_values_in_jsons_words(answer, detail):
    assert GRADED.problem(answer) == detail


@pytest.mark.parametrize(("ids", "serves"), [(["m ", "x"], "'m ', x"), (["m\u200b", "a, b"], "'a, b', 'm\\u200b'")])
def test_a_listed_model_name_that_could_not_be_told_apart_is_quoted(tmp_path, ids, serves):
    url, done = listed_ids(tmp_path, "m", *ids)
    assert (done.returncode, done.stderr) == (EXIT["runner"], (
        f"benchrun: error: model 'm' is not served at {url} (it serves: {serves}); pick one of those for "
        "runner.model, or start the server with it\n"))


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_an_error_body_that_is_a_number_too_large_to_hold_is_quoted_as_the_server_wrote_it(tmp_path, runner):
    kind = "ResponseError" if runner == "ollama" else "APIError"
    assert errored(tmp_path, runner, b"1e999", "400 Bad Request") == {"type": kind, "message": "HTTP 400: 1e999"}


@pytest.mark.parametrize(("body", "said"), [
    (b'{"error": {"code": 1e999}}', '{"error": {"code": 1e999}}'), (b'{"error": {"message": -1e999}}',
                                                                     '{"error": {"message": -1e999}}'),
    (b'{"error": {"code": ' + b"1" * 5000 + b"}}", "an object holding a number too large to hold")])
def test_an_error_bodys_number_too_large_to_hold_is_said_in_the_servers_words_or_as_what_it_is(body, said):
    assert server_message(body, None, "Bad Request") == said


@pytest.mark.parametrize(("body", "said"), [
    ({"error": -math.inf}, "HTTP 200 saying an error: a number too large to hold"),
    ({"error": {"code": math.inf}}, "HTTP 200 saying an error: an object holding a number too large to hold")])
def test_a_200_saying_an_error_of_a_number_too_large_to_hold_says_what_it_is(body, said):
    assert error_said(body) == Said(False, said)


@pytest.mark.parametrize("status", ["200 OK", "204 No Content"])
def test_an_ollama_chat_answer_of_an_empty_body_says_so(tmp_path, status):
    said = ("not Ollama's chat answer: not JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0)): an "
            "empty body")
    assert errored(tmp_path, "ollama", b"", status) == {"type": "NotJSON", "message": said}


def test_a_status_below_100_is_said_as_a_status_http_does_not_define(tmp_path):
    done = ollama_run(tmp_path, once(Reply(wire=wire(b'{"error": "odd"}', status="099 Odd"))))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    said = "HTTP 99 (a status HTTP does not define)"
    assert asked(done.stdout) == (None, {"type": "RemoteProtocolError", "message": said}, 1, [said])


def test_servers_versions_that_a_warning_could_not_tell_apart_are_quoted(tmp_path):
    (first, second), warned = versions_warned(tmp_path, "0.12.6 ", "0.12.6")
    assert warned == (f"benchrun: warning: the servers run different versions: {first} '0.12.6 ', {second} 0.12.6; "
                      "the same model may answer differently on each (recorded)\n")


@pytest.mark.parametrize(("said", "listed"), [("0.1\nx", "'0.1\\nx'"), ("0.1\x1b[31m", "'0.1\\x1b[31m'"),
                                              (None, "-"), ("0.12.6", "0.12.6"), (4096, "4096")])
def test_what_a_server_says_of_itself_is_warned_of_as_a_list_says_a_name(said, listed):
    assert hosts._said(said) == listed


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_a_206_partial_content_is_not_taken_as_a_whole_answer(tmp_path, runner):
    body = b'{"model": "m", "done": true, "message": {"role": "assistant", "content": "{\\"answer\\": 1}"}}'
    if runner == "openai":
        body = b'{"choices": [{"message": {"role": "assistant", "content": "{\\"answer\\": 1}"}}]}'
    answer = once(Reply(wire=wire(body, status="206 Partial Content")))
    done = ollama_run(tmp_path, answer) if runner == "ollama" else openai_run(tmp_path, answer)[1]
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert asked(done.stdout) == ('{"answer": 6}', None, 2, [
        "HTTP 206: a part of an answer (Partial Content), which only a request for a range is answered with and "
        "benchrun sends none: not taken as a whole answer"])


def test_a_formats_unique_items_are_not_compared_pair_by_pair(monkeypatch):
    def pairwise(container):
        raise AssertionError("jsonschema's pairwise comparison of items")

    monkeypatch.setattr(jsonschema._keywords, "uniq", pairwise)
    items = [each if each % 2 else str(each) for each in range(6)]
    assert UNIQUE_TAGS.problem(json.dumps({"tags": items, "n": "x"})) == "n: \"x\" is not of type 'integer'"
    assert UNIQUE_TAGS.problem(json.dumps({"tags": [1, "a", 1.0], "n": 1})) == (
        'tags: [1, "a", 1.0] has non-unique elements')


@pytest.mark.parametrize(("body", "reason", "said"), [(b"", "", "an empty body"), (b" \t\n", " ", "an empty body"),
                                                      (b'{"error": ""}', "", "an empty body"),
                                                      (b"", "Bad Gateway", "Bad Gateway")])
def test_an_error_that_says_nothing_on_a_status_line_without_a_phrase_says_its_body_is_empty(body, reason, said):
    assert server_message(body, None, reason) == said


def test_a_status_line_without_a_phrase_and_an_empty_body_is_said_so(tmp_path):
    answer = once(Reply(wire=b"HTTP/1.1 400\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
    done = openai_run(tmp_path, answer)[1]
    assert asked(done.stdout) == (None, {"type": "APIError", "message": "HTTP 400: an empty body"}, 1,
                                  ["HTTP 400: an empty body"])
