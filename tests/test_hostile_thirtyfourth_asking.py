"""The thirty-fourth hostile pass of issue 19, the asking side.

1. a status below 100 (`HTTP/1.1 099 Odd`), which the HTTP parser refuses, was asked again, where one above 599 is
   not: one rule for a status HTTP does not define (`runners.statuses.defined`, `undefined`), said once, not asked
   again (`runners.base.transport_failure`); an earlier test expected a second try
2. a 205 Reset Content (whose body HTTP says is none) and a 202 Accepted (whose body says how the request stands, not
   its answer) were taken as a whole answer, their JSON parsed and recorded: refused as the 206 is, and asked again
   (`runners.http.NOT_AN_ANSWER`)
3. an Ollama preflight's answer that is no JSON was said in the JSON reader's words alone (`(JSONDecodeError: Expecting
   value: ...)`) where a chat answer says `not JSON (...)` with the body: both say it alike (`runners.ollamaread
   ._as_typed`, `OllamaRunner._not_ollama`); an answer of JSON nested deeper than Python follows, said `not JSON
   (RecursionError: ...): [[[[...` of a chat answer, is said `JSON nested deeper than Python can follow` by every
   runner (`runners.errorbody.not_json`); an OpenAI-compatible server's model list that is no JSON, said `answered GET
   /models without a model list` and nothing of what came, says it by the same rule (`OpenAIRunner._list_body`);
   earlier tests expected the old words
4. a format check's detail quoted the answer's keys as Python writes them (`Additional properties are not allowed ('x'
   was unexpected)`, `'a' is a required property`, `'b' is a dependency of 'a'`; jsonschema-rs's `('b'x' was
   unexpected)`, a quote in a key not even escaped) where its values are said in JSON's: the keys too
   (`execute.formatcheck.json_words`, `_rs_words`), for every keyword whose message names keys; a regex, a schema's
   name, stays as jsonschema says it; so are the items `items: false` refuses past `prefixItems` (`found 2 extra: [True,
   None]`, `formatcheck._beyond`). Nothing reads a detail back (rescore compares metrics, verify counts details):
   older archives verify and rescore as before. Earlier tests expected the old words
5. a format check's explanation of an invalid answer walked every item of it: an item under `anyOf` (pydantic writes it
   for `list[int | str]`) cost ~60 µs, so an answer of 50,000 such items, anything else in it wrong, held the run's
   event loop 3.5 s (a value of `dict[str, int | str]` alike, 4.4 s). jsonschema-rs (1-2 µs an item) says which items
   the `items` schema takes (which values `additionalProperties`'s), and the explanation descends into the others only
   (`execute.formatitems`, `formatcheck._pruned_additional`): the same detail, 0.07 s
6. an answer not in its format whose server said why was said in the JSON reader's words alone: an OpenAI `refusal`
   (content none: `invalid JSON: Expecting value: line 1 column 1 (char 0)`), or a thinking model's text left empty
   while its `thinking` (Ollama) or `reasoning_content` / `reasoning` (OpenAI-compatible) holds what it meant to
   answer. The detail says why, as a judge's reply says a refusal (`execute.formatcheck.said_why`, one rule for the
   answer's format check and the judge's reply, which says the empty reply beside its thinking too); a refusal given
   as a content part (`{"type": "refusal", "refusal": ...}`, OpenAI's) is the answer's refusal as a message's
   `refusal` is (`runners.openaianswer._refused`), its parts kept as they came
7. an answer whose head (status line and headers) is longer than the HTTP client reads (a header of 1 MB) was said in
   the HTTP parser's words alone, `Receive buffer too long`: said `the answer's head (its status line and headers) is
   longer than 100 KiB, the most the HTTP client reads` (`runners.base.transport_failure`), asked again as before
8. an error status whose phrase holds a byte past ASCII (`HTTP/1.1 400 B\xe4d`, Latin-1; or UTF-8), its body saying
   nothing, was said `HTTP 400: Bd`, a word the server did not write (httpx's `reason_phrase` leaves such bytes out):
   the phrase is read from the status line's bytes, as UTF-8 where it is, else Latin-1 (`runners.errorbody.reason_of`)
9. an Ollama chat answer whose `done` is no JSON bool (`"false"`, `0`, `"no"`) was read by the official client's lax
   reader as false, and refused as `the answer says it is not done (done: false)`, words the server did not write:
   `done` is read as the API gives it, a JSON bool, else not read, as every field beside the text is
   (`runners.ollamaread._TYPED`, `_flag`); a `done: false` is refused as before
10. a preflight answered with a status below 100 was said in the HTTP parser's words (`(RemoteProtocolError:
   InformationalResponse status_code should be in range [100, 200), not 99)`), a 101 as `Received server
   _SWITCH_UPGRADE event without a pending proposal`, a head too long as `Receive buffer too long`, where a chat
   answer says each in benchrun's words; and an OpenAI-compatible server's preflight said a 600 `HTTP 600: Odd`, where
   Ollama's says `HTTP 600 (a status HTTP does not define): Odd`. Each preflight says them as a chat answer does
   (`OllamaRunner._call`, `OpenAIRunner._listing`, `_preflight_refusal` through `status_said`)
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.formatcheck import Explainer, FormatCheck, said_why
from benchrun.testing.http_fake import Response
from tests.helpers.p34_asking import (
    CHAT,
    CLOSED,
    KEYED,
    MATCHED,
    PATTERNED,
    RS_EXPLAINED,
    TAGGED,
    UNEVALUATED,
    first_answered,
    format_said,
    preflight_answered,
)
from tests.helpers.wire import wire

ANY_OF = Explainer.VALIDATORS["anyOf"]


@pytest.mark.parametrize(("check", "answer", "detail"), [
    (KEYED, {"a": 1, "b\"q": 2, "it's": 3, "x\n": 4}, 'Additional properties are not allowed ("it\'s", "x\\n" were '
                                                      'unexpected)'),
    (KEYED, {"b\"q": 1}, '"a" is a required property'), (KEYED, {"a": 1}, '"b\\"q" is a dependency of "a"'),
    (MATCHED, {"a": 1, "b\u00e9": 2}, '"b\u00e9" does not match any of the regexes: \'^a\''),
    (MATCHED, {"abcd": 1}, '"abcd" is too long'),
    (PATTERNED, {"b not match any of the regexes: 'x": 1, "c": 2},
     '"b not match any of the regexes: \'x", "c" do not match any of the regexes: \'^a\''),
    (CLOSED, [1, True, None], "Expected at most 1 item but found 2 extra: [true, null]"),
    (CLOSED, [1, "x"], 'Expected at most 1 item but found 1 extra: "x"'),
    (UNEVALUATED, {"a": 1, "q'": 2, "r": 3}, 'Unevaluated properties are not allowed ("q\'", "r" were unexpected)'),
    (RS_EXPLAINED, {"b'x": 1, "\u00e9": 2}, 'Unevaluated properties are not allowed ("b\'x", "\u00e9" were '
                                            'unexpected)')])
def test_a_format_checks_detail_says_the_answers_keys_in_jsons_words(check, answer, detail):
    assert check.problem(json.dumps(answer)) == detail


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_a_status_below_100_is_said_once_not_asked_again(tmp_path, runner):
    recorded = first_answered(tmp_path, runner, wire(b'{"error": "odd"}', status="099 Odd"))
    said = "HTTP 99 (a status HTTP does not define)"
    assert recorded == (None, {"type": "RemoteProtocolError", "message": said}, 1, [said])


@pytest.mark.parametrize(("runner", "status", "said"), [
    ("ollama", "205 Reset Content", "HTTP 205: an answer that has no body (Reset Content), which HTTP says of a 205"),
    ("openai", "205 Reset Content", "HTTP 205: an answer that has no body (Reset Content), which HTTP says of a 205"),
    ("openai", "202 Accepted", "HTTP 202: accepted, not yet answered (Accepted), whose body says how the request "
                               "stands, not its answer")])
def test_a_success_whose_body_is_no_answer_is_not_taken_as_one(tmp_path, runner, status, said):
    recorded = first_answered(tmp_path, runner, wire(CHAT[runner], status=status))
    assert recorded == ('{"answer": 6}', None, 2, [f"{said}: not taken as a whole answer"])


NOT_OLLAMAS = "benchrun: error: Ollama at {url} answered the preflight with what is not Ollama's answer"


@pytest.mark.parametrize(("path", "body", "said"), [
    ("/api/tags", b"", "not JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0)): an empty body"),
    ("/api/show", b"Not Found", "not JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0)): Not Found"),
    ("/api/version", b"[" * 5000 + b"]" * 5000, "JSON nested deeper than Python can follow")])
def test_a_preflight_answer_that_is_no_json_says_what_came_as_a_chat_answer_does(tmp_path, path, body, said):
    assert preflight_answered(tmp_path, "ollama", path, Response(200, body)) == (EXIT["runner"], (
        f"{NOT_OLLAMAS} ({said}); runner.host must name an Ollama server\n"))


def test_a_model_list_that_is_no_json_says_what_came(tmp_path):
    assert preflight_answered(tmp_path, "openai", "/v1/models", Response(200, b"<p>busy</p>")) == (EXIT["runner"], (
        "benchrun: error: the server at {url} answered GET /models without a model list (not JSON (JSONDecodeError: "
        "Expecting value: line 1 column 1 (char 0)): <p>busy</p>); runner.base_url is the API root, usually ending in "
        "/v1\n"))


@pytest.mark.parametrize(("runner", "kind", "said"), [("ollama", "NotJSON", "not Ollama's chat answer"),
                                                      ("openai", "APIError", "not a chat completion")])
def test_a_chat_answer_nested_deeper_than_python_follows_is_said_so(tmp_path, runner, kind, said):
    said = f"{said}: JSON nested deeper than Python can follow"
    recorded = first_answered(tmp_path, runner, wire(b"[" * 5000 + b"]" * 5000))
    assert recorded == (None, {"type": kind, "message": said}, 1, [said])


@pytest.mark.parametrize(("answer", "detail", "explained"), [
    ({"tags": [1, "a", None, 2], "n": 1}, "tags/2: null is not valid under any of the given schemas", 1),
    ({"tags": [1, "a"], "points": [{"x": 1}, {"x": "1"}, {"x": None}], "n": 1},
     'points/1/x: "1" is not valid under any of the given schemas', 1),
    ({"tags": list(range(50)), "n": "x"}, "n: \"x\" is not of type 'integer'", 0),
    ({"named": {f"k{each}": each for each in range(50)} | {"z": None}, "n": 1},
     "named/z: null is not valid under any of the given schemas", 1)])
def test_a_formats_explanation_walks_only_the_items_it_does_not_take(monkeypatch, answer, detail, explained):
    walked = []

    def any_of(validator, any_of, instance, schema):
        walked.append(instance)
        yield from ANY_OF(validator, any_of, instance, schema)

    monkeypatch.setitem(Explainer.VALIDATORS, "anyOf", any_of)
    assert (FormatCheck(TAGGED).problem(json.dumps(answer)), len(walked)) == (detail, explained)


EXPECTING = "invalid JSON: Expecting value: line 1 column 1 (char 0)"


@pytest.mark.parametrize(("runner", "message", "why"), [
    ("ollama", {"content": "", "thinking": '{"answer": 6}'},
     "the answer is empty, where its thinking (kept in the record's extra) holds 13 characters"),
    ("openai", {"content": "", "reasoning_content": '{"answer": 6}'},
     "the answer is empty, where its reasoning_content (kept in the record's extra) holds 13 characters"),
    ("openai", {"content": None, "refusal": "I cannot"}, 'the model refused: "I cannot"'),
    ("openai", {"content": [{"type": "refusal", "refusal": "I cannot"}]}, 'the model refused: "I cannot"')])
def test_an_answer_not_in_its_format_says_why_its_server_said(tmp_path, runner, message, why):
    assert format_said(tmp_path, runner, message) == ({"format_valid": 0}, f"{EXPECTING} ({why})")


def test_a_judges_reply_left_empty_beside_its_thinking_says_so():
    assert said_why("stop", {"reasoning": "x" * 2000}, "", "the reply", "the judge's token limit", "the judge") == (
        "the reply is empty, where its reasoning (kept in the record's extra) holds 2,000 characters")


@pytest.mark.parametrize("runner", ["ollama", "openai"])
def test_an_answers_head_longer_than_the_client_reads_says_so(tmp_path, runner):
    head = wire(CHAT[runner]).replace(b"\r\n\r\n", b"\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n", 1)
    assert first_answered(tmp_path, runner, head) == ('{"answer": 6}', None, 2, [
        "the answer's head (its status line and headers) is longer than 100 KiB, the most the HTTP client reads"])


@pytest.mark.parametrize(("runner", "kind", "phrase"), [("ollama", "ResponseError", "Bäd".encode("latin-1")),
                                                        ("openai", "APIError", "Bäd".encode())])
def test_a_status_phrase_past_ascii_is_quoted_whole(tmp_path, runner, kind, phrase):
    answer = b"HTTP/1.1 400 " + phrase + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    assert first_answered(tmp_path, runner, answer) == (None, {"type": kind, "message": "HTTP 400: Bäd"}, 1,
                                                        ["HTTP 400: Bäd"])


@pytest.mark.parametrize("done", ['"false"', "0", '"no"'])
def test_an_ollama_answers_done_that_is_no_json_bool_is_not_read_as_false(tmp_path, done):
    body = CHAT["ollama"].replace(b'"done": true', b'"done": ' + done.encode())
    assert first_answered(tmp_path, "ollama", wire(body)) == ('{"answer": 1}', None, 1, [])


@pytest.mark.parametrize(("runner", "status", "said"), [
    ("ollama", "099 Odd", "Ollama at {url} refused the preflight: HTTP 99 (a status HTTP does not define)"),
    ("openai", "099 Odd", "the server at {url} refused the preflight: HTTP 99 (a status HTTP does not define)"),
    ("openai", "600 Odd", "the server at {url} refused the preflight: HTTP 600 (a status HTTP does not define): Odd"),
    ("ollama", "101 Switching Protocols", "Ollama at {url} answered the preflight with what is not Ollama's answer "
                                          "(RemoteProtocolError: HTTP 101: the server switched to another protocol, "
                                          "which benchrun never asks for (it sends no Upgrade)); runner.host must "
                                          "name an Ollama server")])
def test_a_preflight_answered_with_a_status_a_chat_answer_would_say_so_says_it_as_a_chat_answer(tmp_path, runner,
                                                                                                 status, said):
    path = "/api/tags" if runner == "ollama" else "/v1/models"
    answer = Response(200, b"", wire=f"HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
    assert preflight_answered(tmp_path, runner, path, answer) == (EXIT["runner"], f"benchrun: error: {said}\n")
