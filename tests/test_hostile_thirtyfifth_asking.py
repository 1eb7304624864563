"""The thirty-fifth hostile pass of issue 19, the asking side.

1. a format check's detail quoted the values `unevaluatedItems` refuses (`Unevaluated items are not allowed (True, None
   were unexpected)`) and the schemas `oneOf` finds more than one of (`1 is valid under each of {'type': 'number'},
   {'type': 'integer'}`) mid-message in Python's words: each message is rebuilt from the error's own values, in JSON's
   words (`execute.formatcheck.LISTED`, `core.jsonwords.listed`); a value in JSON's words is said by one function for
   the format check and the compiler (`core.jsonwords.respelled`, which `compiler.schemas._json_spelled` and
   `execute.formatcheck.json_words` both use)
2. a scorer that forks (`os.fork()`, its copy returning from the call as the scorer does) left the copy going on as a
   second scorer process, reading calls and writing replies on the same pipes: its reply to the call it forked in was
   the next sample's `ScorerProtocolError` (`the scorer wrote b'[0, {"s": 0.5}, null]\\n' to the scorer process's
   reply pipe`), and a later sample's score was the copy's (0.5 of 1.0, whichever copy read the call). The copy now
   ends as it returns from its call, as one forked at import does (`execute.scorer_worker.main`)
3. a busy answer (503, 429) whose Retry-After is a date of a year or a zone Python's date cannot hold (`Mon, 01 Jan
   99999999999 00:00:00 GMT`, a zone `+99999999999999999999`; no HTTP date has either) raised OverflowError: a chat
   answer's sample failed `OverflowError: signed integer is greater than maximum`, never asked again; a preflight's
   ended the run in a traceback (exit 1). The value is no ask, as a Retry-After of neither form is (RFC 9110 lets a
   client ignore it): the answer is asked again as any busy one is (`runners.retryafter.retry_after_s`)
4. an answer whose Content-Type names its charset in RFC 2231's spelling as a text holding a NUL (`charset*=utf-8''
   a%00b`), which Python's codec registry refuses rather than not knowing: httpx's lookup raised ValueError, so the
   answer was the sample's error `ValueError: embedded null character` (a chat answer, never asked again; an error
   status's, its status and message lost), and an Ollama preflight refused the server as `not Ollama's answer
   (ValueError: embedded null character)`. Such a name is read as UTF-8, as a name Python does not know is
   (`runners.http._utf8`, `_text_read`)
5. what a scorer changed of its process reached every later call of the scorer process (the README promises each call
   starts in the state the first found): a signal it blocked (`signal.pthread_sigmask(SIG_BLOCK, {SIGALRM})`: their
   own `signal.alarm` never went off), put back with a timer's signal it left pending there dropped with its timer
   (`core.interrupts.handling_now`, a shared module); a locale (`locale.setlocale(LC_NUMERIC, ...)`: their
   `locale.atof` read numbers by it), a trace or profile function (`sys.settrace`, a profiler left enabled), a
   default socket timeout, a switch interval, the garbage collector off or retuned, a recursion limit, a bound on an
   int's digits (`sys.set_int_max_str_digits(640)`), `sys.path`, the CPUs it may run on
   (`execute.scorer_worker.SETTINGS`), the warnings filters (`warnings.simplefilter("error")`: each call under
   `warnings.catch_warnings`), a standard descriptor it replaced (`os.dup2(devnull, 2)` to quiet a library: nothing
   a later call printed reached benchrun.log) and a time zone set past os.environ (`os.putenv("TZ", ...)`, then
   `time.tzset()`), each put back as found (`scorer_worker._Found`); `sys.path` or `os.environ` bound to another
   value (None, a plain dict) is put back too, where the put-back had failed (the process's end, that call's
   `ScorerProcessDied`); so are the standard streams (`sys.stdin = io.StringIO(...)`: a later call's `input()` read
   what an earlier one left there, where it reads nothing)
6. a gzip answer whose Content-Encoding list has empty elements (`, gzip ,`, which RFC 9110 5.6.1 says a recipient
   ignores) was refused as in codings benchrun does not read, said `(, )`, and asked again: read as gzip
   (`runners.http._codings`)
7. a 226 IM Used (whose body is an answer's changes since an earlier one, RFC 3229, answering a request naming A-IM,
   which benchrun never sends) and a 207 Multi-Status (WebDAV's statuses of several resources) were taken as a whole
   answer, their JSON parsed and recorded: refused as the 206 is, and asked again (`runners.http.NOT_AN_ANSWER`)
8. a line a scorer wrote to the scorer process's reply pipe was quoted in Python's bytes repr (`the scorer wrote
   b'caf\\xc3\\xa9 \\xff\\n' to ...`), where an HTTP parser's buffer is quoted as JSON text: both as JSON text,
   by one function (`core.jsonwords.bytes_said`, in `execute.scorerprocess._foreign` and `runners.base`); earlier
   tests expected the old words
9. a benchmark file that blocks signals as it is imported (`signal.pthread_sigmask(SIG_BLOCK, {SIGINT, SIGTERM})` in
   a custom_*.py) left them blocked in the run's main thread, so that neither reached the run's handlers: put back
   after the import by the rule of 5 (`compiler.runstate.kept`, through `core.interrupts.handling_now`)
"""

from __future__ import annotations

import gzip
import json
import signal

import pytest

from benchrun.compiler.runstate import kept
from benchrun.testing.http_fake import Response
from tests.helpers.p34_asking import CHAT, first_answered, preflight_answered
from tests.helpers.p35_asking import (
    FORKING,
    NUL_CHARSET,
    ONE_OF,
    PAST_HOLDING,
    STATEFUL,
    UNEVALUATED_ITEMS,
    WRITING,
    busy,
    busy_response,
    labelled,
    scores_of,
)
from tests.helpers.wire import coded, wire


@pytest.mark.parametrize(("check", "answer", "detail"), [
    (UNEVALUATED_ITEMS, '[1, true, null]', "Unevaluated items are not allowed (true, null were unexpected)"),
    (UNEVALUATED_ITEMS, '[1, {"a": false}]', 'Unevaluated items are not allowed ({"a": false} was unexpected)'),
    (UNEVALUATED_ITEMS, '[1, "it\'s", "x, y"]', 'Unevaluated items are not allowed ("it\'s", "x, y" were unexpected)'),
    (ONE_OF, "1", '1 is valid under each of {"type": "number"}, {"type": "integer"}'),
    (ONE_OF, "true", 'true is valid under each of {"type": "boolean"}, {"const": true}'),
    (ONE_OF, '"x"', '"x" is valid under each of {"type": "string"}, {"enum": [null, "x"]}'),
])
def test_values_listed_mid_message_are_in_jsons_words(check, answer, detail):
    assert check.problem(answer) == detail


@pytest.mark.slow  # the scorer process is a real subprocess
def test_a_copy_a_scorer_forks_ends_as_it_returns_from_its_call(tmp_path):
    assert scores_of(tmp_path, FORKING, n=2) == [(f"times7:a={a}", {"s": 1.0}, None) for a in range(2)]


@pytest.mark.parametrize(("runner", "status", "after"), [("ollama", "503 Service Unavailable", PAST_HOLDING[0]),
                                                         ("openai", "429 Too Many Requests", PAST_HOLDING[1])])
def test_a_retry_after_date_past_what_python_holds_is_no_ask(tmp_path, runner, status, after):
    assert first_answered(tmp_path, runner, busy(status, after)) == (
        '{"answer": 6}', None, 2, [f"HTTP {status.split()[0]}: busy"])


def test_a_preflight_asked_to_wait_till_a_date_past_what_python_holds_is_refused_in_one_line(tmp_path):
    assert preflight_answered(tmp_path, "ollama", "/api/tags", busy_response(PAST_HOLDING[0])) == (
        3, "benchrun: error: Ollama at {url} refused the preflight: HTTP 503: busy\n")


@pytest.mark.parametrize(("runner", "status", "taken"), [
    ("ollama", "200 OK", ('{"answer": 1}', None, 1, [])),
    ("openai", "500 Internal Server Error", ('{"answer": 6}', None, 2, ["HTTP 500: boom"]))])
def test_a_charset_python_cannot_look_up_is_read_as_utf8(tmp_path, runner, status, taken):
    body = CHAT[runner] if status == "200 OK" else b'{"error": "boom"}'
    assert first_answered(tmp_path, runner, labelled(body, NUL_CHARSET, status)) == taken


def test_a_preflight_answer_of_a_charset_python_cannot_look_up_is_read_as_utf8(tmp_path):
    tags = json.dumps({"models": [{"name": "llama3.2", "model": "llama3.2", "digest": "a" * 64, "size": 1}]})
    assert preflight_answered(tmp_path, "ollama", "/api/tags", Response(200, tags.encode(), NUL_CHARSET)) == (0, "")


@pytest.mark.slow  # the scorer process is a real subprocess
def test_the_signals_a_scorer_blocks_and_the_settings_it_changes_do_not_reach_the_next_call(tmp_path):
    began = {"s.fed": 0, "s.blocked": 0, "s.locale": 0, "s.traced": 0, "s.timeout": 0, "s.collecting": 1, "s.quiet": 0,
             "s.zoned": 0, "s.bounded": 0, "s.strict": 0, "s.pathed": 0,
             "s.rebound": 0}
    assert scores_of(tmp_path, STATEFUL, n=2) == [(f"times7:a={a}", began, None) for a in range(2)]


def test_empty_elements_of_a_content_encoding_list_are_ignored(tmp_path):
    assert first_answered(tmp_path, "ollama", coded(gzip.compress(CHAT["ollama"]), ", gzip ,")) == (
        '{"answer": 1}', None, 1, [])


@pytest.mark.parametrize(("runner", "status", "said"), [
    ("openai", "226 IM Used",
     "HTTP 226: an answer's changes since an earlier one (IM Used), which only a request naming A-IM is answered with "
     "and benchrun sends none"),
    ("ollama", "207 Multi-Status",
     "HTTP 207: the statuses of several resources (Multi-Status), which WebDAV answers with")])
def test_a_success_whose_body_is_no_whole_answer_is_asked_again(tmp_path, runner, status, said):
    assert first_answered(tmp_path, runner, wire(CHAT[runner], status=status)) == (
        '{"answer": 6}', None, 2, [f"{said}: not taken as a whole answer"])


@pytest.mark.slow  # the scorer process is a real subprocess
def test_a_line_a_scorer_writes_to_the_reply_pipe_is_quoted_as_json_text(tmp_path):
    assert scores_of(tmp_path, WRITING, n=1) == [("times7:a=0", None, {"type": "ScorerProtocolError", "message": (
        "the scorer wrote \"café \\\\xff\\n\" to the scorer process's reply pipe, a file descriptor of benchrun's: "
        "what a scorer prints goes to stdout or stderr (benchrun.log); a file it writes, it opens")})]


def test_the_signals_a_benchmark_file_blocks_as_it_is_imported_are_put_back():
    found = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        with kept():
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == found
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, found)
