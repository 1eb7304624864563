"""The thirty-second hostile pass of issue 19, the asking side.

1. Ollama's /api/ps (the context length the model is loaded with, asked beside the run after its first answer) went
   through the preflight's calls: answered busy with a Retry-After mid-run, it was asked again (runner.retries times)
   and said on the console `... the preflight is asked again then (try 2 of 3)`, of a preflight long done. A
   best-effort read whose wait the run's end would not wait out (`runners.ollama.LOADED_WAIT_S`), it is asked once
   and says nothing (`runners.ollama.OllamaRunner._loaded_with`)
2. a list of Ollama servers (`runner.host=[a,b]`) that loaded the model with different context lengths (each kept in
   its entry of run.json's `identity.hosts`) said nothing of it: a run's answers came from differently-configured
   servers. The end of the run warns of it (`execute.hosts.HostPool.loaded`), and `show`'s servers row says each
   server's context (`audit.heading.parts`); of a list of OpenAI-compatible servers whose model entries say
   different `max_model_len` (vLLM's, kept in `identity.details`), alike (`execute.hosts._context_of`)
3. an integer of more digits than Python converts (4,300) in a server's answer was read as its text (the
   twenty-third pass, for a token count): an OpenAI-compatible answer whose content was such a number was taken as
   the model's text, a served model's name of it kept; in Ollama's, anywhere the response hook left as it came (its
   content, a field benchrun reads nothing of, /api/show's model_info), it cost the whole answer, or refused the run,
   with Python's advice `use sys.set_int_max_str_digits() to increase the limit`. It is read as Python reads `1e999`,
   a number too large to hold, an infinity (`core.text.server_reading`: a shared module), and an Ollama answer read so
   is handed to the official client as read (`runners.ollamaread._as_typed`): a content of it is refused as a number
   is, a model's name of it not kept, a model_info value of it kept as null; a structured-output probe's answer
   holding one lost the name it gave the model (`answers_as`, which pins it) and its system_fingerprint: read as
   its completion is (`runners.openaianswer.said_of`)
4. an error body holding such an integer (`{"error": {"message": "bad thing", "code": 1000...}}`) was read as no JSON:
   the error said its body's text, cut (`HTTP 400: {"error":{"message":"bad [...] 1111...`), not its message; and an
   answer streamed in JSON lines holding one was not told as streamed (`not Ollama's chat answer: Exceeds the limit
   (4300 digits) ... use sys.set_int_max_str_digits()`, `not a chat completion: not JSON (JSONDecodeError: Extra
   data ...)`). An error body is read as an answer is (`runners.errorbody.server_message`: `server_json`), and a
   stream's lines with their integers as floats (`errorbody._json_lines`)
5. Ollama's /api/show giving `details` of another shape (a list, a string) refused the run (`not Ollama's answer
   (ValidationError: details: ...)`), though run.json keeps the model's details from its model list entry, never
   /api/show's: never read (`runners.ollamaread._SHOWN`), as its license and modelfile are not
6. Ollama's model list, /api/show or /api/ps answered with JSON that is no object (`[1]`, `null`) was said in the
   client's Python words (`TypeError: ollama._types.ListResponse() argument after ** must be a mapping, not list`),
   as a chat answer was until the twenty-sixth pass: `TypeError: the answer is a list, not a JSON object`
   (`runners.ollamaread._as_typed`, of every answer the client reads); an earlier test expected the old words
7. an OpenAI-compatible server's model list whose entry's id is no string was listed among what it serves as
   Python writes it: `model '5' is not served at ... (it serves: 5, x); pick one of those`, of an id 5 (which no model
   asked by name is), `None`, `['m']`, `{'a': 1}`, `inf`. An entry naming no model by a string is left out of the
   list, as Ollama's are (`runners.openai._named`)
8. an Ollama answer missing a key the client requires (a message without its role, an answer without its message)
   was said `message.role: Field required (an object was given)`, as if an object had been given for the role: the
   object is the one the key is missing from; said `message.role: Field required` (`runners.ollama._said`)
9. a list of Ollama servers one of which said its version as an object (`{"version": {"major": 0}}`) ended the run
   in a traceback (`TypeError: unhashable type: 'dict'`, comparing the servers' versions): a version that is no text
   (or empty) is none (`runners.ollama.OllamaRunner._version`), as a served model's name that is none is not kept;
   and servers whose versions differ, one saying none, were warned of in Python's words (`http://a None, http://b
   0.12.6`), one saying `""` as nothing (`http://a , ...`): `-` (`execute.hosts._said`, which the context lengths'
   warning of 2. says them by too); a server saying none had `server_version: null` kept, which `show` said
   `server None`: not kept, as an unsaid context length is not (`show` says `server -`)
10. the check as a run ends that the server serves the model by the digest it began with (its model list asked again,
   Ollama's, or an OpenAI-compatible one saying what weights are behind the name) answered busy with a Retry-After
   said `... is busy and asks to be asked again after Retry-After: 1 s: the preflight is asked again then (try 2 of
   3)`, of a preflight long done, as 1. did: it says what is asked (`runners.retryafter.heeding`'s `asking`,
   `DIGEST_CHECK`)
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.runners import ollama
from benchrun.testing.chat import Reply
from tests.helpers.commands import run_dir_of
from tests.helpers.p24_execute import asked, ollama_run, once
from tests.helpers.p31_asking import busy_listing
from tests.helpers.p32_asking import (
    busy_at_the_end,
    huge_answered,
    listed_ids,
    pooled_warned,
    preflight_answered,
    probed_huge,
    shown_huge,
    unversioned,
    versions_warned,
    vllm_pooled,
)
from tests.helpers.wire import wire


@pytest.mark.parametrize("after", ["0", "1"])
def test_ollamas_loaded_models_answered_busy_mid_run_are_asked_once_and_said_nothing_of(tmp_path, monkeypatch, after):
    monkeypatch.setattr(ollama, "LOADED_WAIT_S", 0.1)
    _, done, times = busy_listing(tmp_path, "ollama", after, times=9, path="/api/ps")
    assert (done.returncode, done.stderr, times) == (EXIT["ok"], "", 1)


def test_servers_of_a_list_that_loaded_the_model_with_different_context_lengths_are_warned_of(tmp_path):
    (first, second, third), said, shown = pooled_warned(tmp_path, 4096, 8192, None)
    assert said == (f"benchrun: warning: the servers of runner.host loaded the model with different context lengths: "
                    f"{first} 4096, {second} 8192, {third} -; the same model may answer differently on each "
                    "(recorded)\n")
    assert (f" servers {first} 45b1c9806e74 0.12.6 context 4096 {second} 45b1c9806e74 0.12.6 context 8192 {third} "
            "45b1c9806e74 0.12.6 metrics ") in shown


def test_openai_compatible_servers_of_a_list_saying_different_max_model_lens_are_warned_of(tmp_path):
    (first, second), said = vllm_pooled(tmp_path, 4096, 32768)
    assert said == (f"benchrun: warning: the servers of runner.base_url loaded the model with different context "
                    f"lengths: {first} 4096, {second} 32768; the same model may answer differently on each "
                    "(recorded)\n")



NUMBER = {"ollama": {"type": "ValidationError",
                     "message": "not Ollama's chat answer: message.content: a number, where text is taken"},
          "openai": {"type": "APIError", "message": "not a chat completion: choices[0].message.content is a number, "
                                                    "not a string"}}


@pytest.mark.parametrize(("case", "recorded"), [
    ("ollama content", (None, NUMBER["ollama"], {})), ("ollama other", ('{"answer": 6}', None, {})),
    ("openai content", (None, NUMBER["openai"], {})),
    ("openai model", ('{"answer": 6}', None, {"model": None, "system_fingerprint": None}))])
def test_an_integer_of_more_digits_than_python_converts_is_a_number_too_large_to_hold(tmp_path, case, recorded):
    assert huge_answered(tmp_path, case) == recorded


STREAMED = ("the server streamed the answer in parts (JSON lines) where one whole answer was asked: set the server (or "
            "the proxy before it) not to stream")


@pytest.mark.parametrize(("case", "status", "error"), [
    ("ollama error", "400 Bad Request", {"type": "ResponseError", "message": "HTTP 400: bad thing"}),
    ("openai error", "400 Bad Request", {"type": "APIError", "message": "HTTP 400: bad thing"}),
    ("ollama lines", "200 OK", {"type": "Refused", "message": STREAMED}),
    ("openai lines", "200 OK", {"type": "APIError", "message": f"not a chat completion: {STREAMED}"})])
def test_an_error_or_a_stream_holding_an_integer_of_more_digits_than_python_converts_is_read_as_such(tmp_path, case,
                                                                                                     status, error):
    assert huge_answered(tmp_path, case, status) == (None, error, {})


def test_a_probe_answer_holding_an_integer_of_more_digits_than_python_converts_keeps_the_name_it_gave(tmp_path):
    assert probed_huge(tmp_path) == {"answers_as": "m-2024-08-06", "system_fingerprint": "fp_1"}


def test_an_integer_of_more_digits_than_python_converts_in_ollamas_model_info_is_kept_as_null(tmp_path):
    assert shown_huge(tmp_path) == {"general.parameter_count": None}


def test_ollamas_show_giving_details_of_another_shape_costs_nothing_for_they_are_never_read(tmp_path):
    _, done = preflight_answered(tmp_path, "/api/show", lambda shown: {**shown, "details": ["gguf"]})
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert json.loads(run_dir_of(done.stdout).joinpath("run.json").read_text())["identity"]["details"] == {
        "parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"], "parameter_size": "3.2B",
        "quantization_level": "Q4_K_M"}


@pytest.mark.parametrize(("path", "answer", "kind"), [("/api/tags", [1], "a list"), ("/api/tags", None, "null"),
                                                      ("/api/show", 5, "a number")])
def test_an_ollama_preflight_answer_that_is_no_json_object_is_said_in_benchruns_words(tmp_path, path, answer, kind):
    url, done = preflight_answered(tmp_path, path, lambda _: answer)
    assert (done.returncode, done.stderr) == (EXIT["runner"], (
        f"benchrun: error: Ollama at {url} answered the preflight with what is not Ollama's answer (TypeError: the "
        f"answer is {kind}, not a JSON object); runner.host must name an Ollama server\n"))


@pytest.mark.parametrize(("model", "ids", "serves"), [("5", [5, "x"], "x"), ("m", [None, ["m"], {"a": 1}], "none")])
def test_a_model_list_entry_whose_id_is_no_string_is_not_listed_as_a_model_served(tmp_path, model, ids, serves):
    url, done = listed_ids(tmp_path, model, *ids)
    assert (done.returncode, done.stderr) == (EXIT["runner"], (
        f"benchrun: error: model '{model}' is not served at {url} (it serves: {serves}); pick one of those for "
        "runner.model, or start the server with it\n"))


@pytest.mark.parametrize(("answer", "said"), [
    ({"model": "llama3.2", "done": True, "message": {"content": '{"answer": 6}'}}, "message.role: Field required"),
    ({"model": "llama3.2", "done": True}, "message: Field required")])
def test_an_ollama_answer_missing_a_key_says_the_key_not_what_held_it(tmp_path, answer, said):
    done = ollama_run(tmp_path, once(Reply(wire=wire(json.dumps(answer).encode()))))
    error = {"type": "ValidationError", "message": f"not Ollama's chat answer: {said}"}
    assert asked(done.stdout) == (None, error, 1, [error["message"]])


def test_servers_of_a_list_one_of_which_says_its_version_as_no_text_are_warned_of_as_saying_none(tmp_path):
    (first, second, third), said = versions_warned(tmp_path, {"major": 0}, "0.12.6", "")
    assert said == (f"benchrun: warning: the servers run different versions: {first} -, {second} 0.12.6, {third} -; "
                    "the same model may answer differently on each (recorded)\n")


@pytest.mark.parametrize(("runner", "server"), [("ollama", "Ollama at {url}"), ("openai", "the server at {url}")])
def test_the_model_list_asked_as_the_run_ends_and_answered_busy_is_not_said_to_be_the_preflight(tmp_path, runner,
                                                                                                server):
    url, done = busy_at_the_end(tmp_path, runner)
    assert (done.returncode, done.stderr) == (EXIT["ok"], (
        f"benchrun: warning: {server.format(url=url)} is busy and asks to be asked again after Retry-After: 1 s: its "
        "model list, which says whether the model is the one the run began with, is asked again then (try 2 of 3)\n"))


def test_a_server_saying_no_version_has_none_kept_and_show_says_so_without_pythons_none(tmp_path):
    identity, shown = unversioned(tmp_path)
    assert "server_version" not in identity
    assert shown.startswith(f"model llama3.2 name llama3.2:latest digest {identity['digest']} server - details ")
