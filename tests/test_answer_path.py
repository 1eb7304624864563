"""What a server sends is normalised or refused where it enters (benchrun.execute.runners.base.received and the HTTP
runners' bounded bodies): one sample's odd answer is that sample's problem, never the run's."""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import Reply
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import odd_one
from tests.helpers.archives import read_jsonl
from tests.helpers.sqlitefile import sqlite_db

LIMIT = 100_000



def six(lab: Lab, *extra: str):
    return lab.call(*lab.args(*extra))


def records(lab: Lab) -> tuple[dict, list[dict], list[dict]]:
    [run_dir] = lab.run_dirs()
    return (json.loads((run_dir / "run.json").read_text()), read_jsonl(run_dir / "responses.jsonl"),
            read_jsonl(run_dir / "scores.jsonl"))


def test_a_lone_surrogate_in_an_answer_is_kept_as_the_replacement_character(tmp_path):
    with Lab(tmp_path, n=6, responder=odd_one('{"answer": 21, "note": "\ud800"}')) as lab:
        result = six(lab)
        info, responses, _ = records(lab)
        resumed = lab.call("verify", str(lab.run_dirs()[0]), module="benchrun.audit")
    assert result.returncode == EXIT["ok"], result.stderr
    assert (info["status"], info["counts"]["responses"]) == ("completed", 6)
    assert [r["text"] for r in responses if r["id"] == "times7:a=3"] == ['{"answer": 21, "note": "\ufffd"}']
    assert resumed.returncode == EXIT["ok"]


@pytest.mark.parametrize("reply", [Reply(content='{"answer": 21}', endless=True),
                                   Reply(content='{"answer": "' + "x" * (2 * LIMIT) + '"}')],
                         ids=["endless", "too long"])
def test_an_answer_over_max_response_bytes_is_that_samples_error(tmp_path, reply):
    """A body that never ends is read up to runner.max_response_bytes, not buffered whole; the run goes on."""
    with Lab(tmp_path, n=6, responder=odd_one(reply)) as lab:
        result = six(lab, f"runner.max_response_bytes={LIMIT}")
        info, responses, scores = records(lab)
    assert result.returncode == EXIT["ok"], result.stderr
    assert info["status"] == "completed_with_errors"
    assert info["counts"] | {"samples": 6} == {"samples": 6, "responses": 6, "request_errors": 1, "scorer_errors": 0,
                                             "format_invalid": 0, "cached": 0}
    [failed] = [r for r in responses if r["error"]]
    assert (failed["id"], failed["text"], failed["attempts"]) == ("times7:a=3", None, 1)
    assert failed["error"] == {"type": "TooLarge", "message": "the answer is longer than runner.max_response_bytes "
                                                              "(100,000 bytes); the rest was not read"}


def test_an_endless_body_from_an_openai_compatible_server_is_cut_off_too(tmp_path):
    endless = odd_one(Reply(content='{"answer": 21}', endless=True))
    with Lab(tmp_path, n=6) as lab, FakeOpenAI(models=["m"], responder=endless) as server:
        result = lab.call("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "task.path=bench",
                          f"outputs={lab.root / 'outputs'}", "cache=false", f"runner.max_response_bytes={LIMIT}")
        _, responses, _ = records(lab)
    assert result.returncode == EXIT["ok"], result.stderr
    assert [(r["id"], r["error"]["type"]) for r in responses if r["error"]] == [("times7:a=3", "TooLarge")]


KEY = "sk-test-0123456789abcdef"


def test_a_server_echoing_the_key_cannot_put_it_in_the_response_cache(tmp_path):
    echo = odd_one(json.dumps({"answer": 21, "echo": f"Bearer {KEY}"}))
    with Lab(tmp_path, n=6) as lab, FakeOpenAI(models=["m"], responder=echo) as server:
        result = cli("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "task.path=bench",
                     f"outputs={lab.root / 'outputs'}", "cache=true", f"cache_dir={tmp_path / 'cache'}",
                     cwd=lab.root, env={"OPENAI_API_KEY": KEY})
        _, responses, _ = records(lab)
    assert result.returncode == EXIT["ok"], result.stderr
    with sqlite_db(tmp_path / "cache" / "responses.sqlite3") as db:
        stored = [answer for (answer,) in db.execute("SELECT answer FROM answers")]
    assert len(stored) == 6 and not [a for a in stored if KEY in a]
    assert [json.loads(a)["text"] for a in stored if "echo" in a] == ['{"answer": 21, "echo": "Bearer ***"}']
    assert [r["text"] for r in responses if r["id"] == "times7:a=3"] == ['{"answer": 21, "echo": "Bearer ***"}']


ODD_SCORES = {  # what the scorer returns for a = 3 -> the error recorded for that sample
    "1e200": "TypeError: scorer result odd must be a finite number of magnitude at most 1e+100, or a bool; got 1e+200",
    "float('inf')": "TypeError: scorer result odd must be a finite number of magnitude at most 1e+100, or a bool; got inf",
    "10 ** 400": "TypeError: scorer result odd must be a finite number of magnitude at most 1e+100, or a bool; got an "
                 "int of 1,329 bits",
    "'0.5'": "TypeError: scorer result odd must be a finite number of magnitude at most 1e+100, or a bool; got '0.5'",
    "{1: 1}": "TypeError: scorer odd gave a metric named 1: a name is a string of 1 to 200 characters, none of them a "
              "control character (a line break, a tab, ...)",
    "{str(i): 1 for i in range(300)}": "TypeError: scorer result odd has 300 metrics, more than 256",
}


@pytest.mark.parametrize("odd", ODD_SCORES)
def test_an_odd_score_is_that_samples_scorer_error_and_the_run_ends_whole(tmp_path, odd):
    scorer = f"import json\n\ndef odd(response, values):\n    return {odd} if values['a'] == 3 else 1\n"
    with Lab(tmp_path, n=6, scorer=scorer) as lab:
        result = six(lab)
        info, _, scores = records(lab)
        shown = lab.call("show", str(lab.run_dirs()[0]), module="benchrun.audit")
    assert result.returncode == EXIT["ok"], result.stderr
    assert (info["status"], info["counts"]["scorer_errors"]) == ("completed_with_errors", 1)
    [error] = [s["error"] for s in scores if s["error"]]
    assert f"{error['type']}: {error['message']}" == ODD_SCORES[odd]
    assert shown.returncode == EXIT["ok"], shown.stderr


def test_a_metric_name_with_a_lone_surrogate_is_written_with_the_replacement_character(tmp_path):
    scorer = "import json\n\ndef odd(response, values):\n    return {'caf\\ud800': 1}\n"
    with Lab(tmp_path, n=6, scorer=scorer) as lab:
        result = six(lab)
        _, _, scores = records(lab)
    assert result.returncode == EXIT["ok"], result.stderr
    assert {tuple(s["metrics"]) for s in scores if s["scorer"] == "odd"} == {("odd.caf\ufffd",)}


def test_the_key_the_ollama_client_sends_is_masked_too(tmp_path):
    """The official client sends $OLLAMA_API_KEY as a bearer token: a server echoing it cannot put it in the archive."""
    echo = odd_one(json.dumps({"answer": 21, "echo": f"Bearer {KEY}"}))
    with Lab(tmp_path, n=6, responder=echo) as lab:
        result = cli(*lab.args(), cwd=lab.root, env={"OLLAMA_API_KEY": KEY})
        [run_dir] = lab.run_dirs()
    assert result.returncode == EXIT["ok"], result.stderr
    assert not [p for p in run_dir.rglob("*") if p.is_file() and KEY in p.read_text(errors="replace")]
    assert [r["text"] for r in read_jsonl(run_dir / "responses.jsonl") if r["id"] == "times7:a=3"] == \
        ['{"answer": 21, "echo": "Bearer ***"}']
