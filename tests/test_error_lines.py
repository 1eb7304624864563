"""Every error benchrun records or prints is one line of bounded length: where an error becomes data (ErrorInfo, a
run's reason) and where a line is printed (benchrun.console.output.error). A proxy's whole HTML error page is kept as
its title and text, a message of several lines as one (benchrun called in this process)."""

from __future__ import annotations

import json

import pytest

from benchrun.console import output
from benchrun.core.errors import EXIT
from benchrun.core.records import ErrorInfo
from benchrun.core.text import LINE_CHARS, MESSAGE_CHARS, one_line
from benchrun.testing.http_fake import Request, Response
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun

NGINX = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>"
         "\r\n<hr><center>nginx/1.18.0 (Ubuntu)</center>\r\n</body>\r\n</html>\r\n")
PAGE = ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>example.com | 502: Bad gateway</title>"
        "<style>body { color: red }</style><script>var x = '<b>';</script></head>\n<body><div><h1>Bad gateway</h1>"
        "<p>The web server reported a bad gateway error.</p>\n<p>Ray ID: 8f2a &amp; more</p></div></body></html>")
FOUR_LINES = "invalid options:\n  temprature: unknown\n  top_kk: unknown\nsee the docs"


@pytest.mark.parametrize(("text", "line"), [
    (FOUR_LINES, "invalid options: temprature: unknown top_kk: unknown see the docs"),
    (f"HTTP 502: {NGINX}", "HTTP 502: 502 Bad Gateway nginx/1.18.0 (Ubuntu)"),
    (PAGE, "example.com | 502: Bad gateway: Bad gateway The web server reported a bad gateway error. Ray ID: 8f2a & more"),
    ("tab\there, form\x0cfeed, line\u2028separator, esc\x1b[2Kape, nul\x00", "tab here, form feed, line separator, "
                                                                              "esc\ufffd[2Kape, nul\ufffd"),
    ('caf\u00e9 \ud800 and "<b>" and x < 3', 'caf\u00e9 \ufffd and "<b>" and x < 3'),
    ("HTTP 502: <html>\n<body><script>x()</script></body></html>", "HTTP 502: an HTML page of no text"),
])
def test_an_error_message_becomes_one_line(text, line):
    assert one_line(text) == line


def test_a_long_message_keeps_its_head_and_tail_and_cuts_no_word():
    words = [f"w{i}" for i in range(1000)]
    line = one_line(" ".join(words))
    head, tail = line.split(" [...] ")
    assert len(line) <= MESSAGE_CHARS and head.split() == words[:len(head.split())]
    assert tail.split() == words[len(words) - len(tail.split()):] and len(line) > MESSAGE_CHARS - 10
    assert one_line("y" * 5_000, LINE_CHARS) == "y" * 996 + " [...] " + "y" * 997
    huge = one_line(f"HTTP 502: <html><body><p>{'z ' * 1_000_000}</p></body></html>")  # read only at its ends
    assert huge.startswith("HTTP 502: z z ") and huge.endswith(" z z") and huge.count("[...]") == 1
    assert len(huge) <= MESSAGE_CHARS and set(huge.removeprefix("HTTP 502: ").split()) == {"z", "[...]"}


def test_an_error_kept_as_data_is_one_line():
    error = ErrorInfo(type="Bad\nType", message=f"HTTP 502: {NGINX}")
    assert (error.type, error.message) == ("Bad Type", "HTTP 502: 502 Bad Gateway nginx/1.18.0 (Ubuntu)")
    assert ErrorInfo.model_validate_json(json.dumps({"type": "E", "message": FOUR_LINES})).message == one_line(FOUR_LINES)


def test_a_proxy_page_and_a_message_of_lines_are_recorded_as_one_line(tmp_path):
    def proxied(req):
        if req.prompt.split()[4] == "1":
            return Reply(status=502, error=NGINX)
        return Reply(status=400, error=FOUR_LINES) if req.prompt.split()[4] == "2" else half_right(req)

    with Lab(tmp_path, n=4, responder=proxied) as lab:
        result = lab.call(*lab.args("runner.retries=0"))
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    errors = {r["id"]: r["error"] for r in read_jsonl(run_dir / "responses.jsonl") if r["error"]}
    assert errors == {
        "times7:a=1": {"type": "ResponseError", "message": "HTTP 502: 502 Bad Gateway nginx/1.18.0 (Ubuntu)"},
        "times7:a=2": {"type": "ResponseError", "message": f"HTTP 400: {one_line(FOUR_LINES)}"}}
    assert lab.verified(run_dir)


def test_a_fail_fast_message_of_four_lines_is_printed_and_kept_as_one(tmp_path):
    with Lab(tmp_path, n=6, responder=lambda req: Reply(status=400, error=FOUR_LINES)) as lab:
        result = lab.call(*lab.args("runner.max_consecutive_failures=3"))
        [run_dir] = lab.run_dirs()
    info = json.loads((run_dir / "run.json").read_text())
    why = (f"3 samples in a row failed the same way, so the setup is broken, not the benchmark: ResponseError: "
           f"HTTP 400: {one_line(FOUR_LINES)} (runner.max_consecutive_failures)")
    assert (result.returncode, info["status"], info["reason"]) == (EXIT["runner"], "failed", why)
    assert result.stderr == (f"benchrun: error: {why}; run {info['run_id']} is recorded as 'failed' with 0 of 6 "
                             f"samples in {run_dir}; finish it once the setup is mended with: benchrun-audit resume "
                             f"{run_dir}\n")


class ProxiedOpenAI(FakeOpenAI):
    """An OpenAI-compatible server behind a proxy that answers GET /models with its own HTML error page."""

    def _models(self, request: Request) -> Response:
        return Response(502, NGINX.encode(), "text/html")


def test_a_proxy_page_at_preflight_is_one_line_printed_and_kept(tmp_path):
    with ProxiedOpenAI() as server:
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", f"outputs={tmp_path / 'outputs'}",
                               cwd=tmp_path)
    [run_json] = (tmp_path / "outputs").glob("*/*/run.json")
    message = f"the server at {server.url} refused the preflight: HTTP 502: 502 Bad Gateway nginx/1.18.0 (Ubuntu)"
    assert (result.returncode, result.stderr) == (EXIT["runner"], f"benchrun: error: {message}\n")
    assert json.loads(run_json.read_text())["reason"] == message


def test_a_printed_error_is_one_line(capsys):
    output.error(f"Hydra said:\n  {FOUR_LINES}\n{NGINX}")
    assert capsys.readouterr().err == (f"benchrun: error: Hydra said: {one_line(FOUR_LINES)} 502 Bad Gateway "
                                       "nginx/1.18.0 (Ubuntu)\n")
