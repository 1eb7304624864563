"""Hostile input, eleventh pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- an answer (or a judge's reply) failing a format whose regex backtracks (`pattern: ^(a+)+$`, a pydantic
  `Field(pattern=...)`, or a `dict` whose keys have one, which pydantic writes as `patternProperties`) with a string
  of 64 characters: jsonschema-rs settled that it is invalid at once, but jsonschema, asked to say what is wrong,
  matched the regex with Python's `re`, in time exponential in the string's length, in the event loop: the run hung
  on that one answer for good (40 characters: hours), no other answer asked or recorded; now every regex of a
  format is matched by jsonschema-rs's engine, linear in the text (`execute.formatcheck.search`), and the answer's
  detail is jsonschema's words as before
- runner=local's `options.num_ctx` negative (`-1`): taken, and llama.cpp's refusal told as memory (`cannot make a
  context of -1 tokens (runner.options.num_ctx): the memory it needs could not be had; lower
  runner.options.num_ctx`, advice that cannot be followed); `options.num_thread` below 1 (`-5`, `0`): taken, and
  llama.cpp silently used its default while run.json kept `-5`; now refused naming the option, before anything is
  made (`core.settings.LOCAL_OPTIONS`: a context of 0 or more tokens, 0 being the model's own; 1 thread or more,
  null for every core)
- a judge whose every request fails (its server answering 500, its model gone, each call past timeout_s): each
  answer's judge call failed after its retries and was recorded as that answer's judge error, the run went on
  through every sample and ended `completed_with_errors` (exit 0), and as a run with every score line written it
  was never graded again (`resume`: nothing to resume); fail-fast counted only the model's answers. Now the judge's
  requests count as the model's do (`execute.judging`): the judge runner's `max_consecutive_failures` different
  answers in a row whose judge request failed the same kind of way (no reply between) stop the run as `failed`
  (FailFast, exit 3), the answers from that one on left ungraded, and `resume` grades them once the judge is mended

What held (tried, nothing new): per-answer cost: Ollama counts of 0, -5, 2^60 and 10**30, durations of 0, -1 and
10**30, a load of 10**30 ns (each out of range not reported; an eval duration of 0 leaves that answer out of the
server's tokens/s, so no division by zero and no Infinity in summary.json); cached and carried answers are left out
of the speed and failed requests count only in `failed`. The answer path: `\r\n`, U+2028/U+2029, a BOM at the
start and a lone zero-width joiner kept byte for byte in responses.jsonl (the BOM's and the joiner's format_valid 0,
`invalid JSON`); 1 MiB of trailing whitespace within runner.max_response_bytes kept; an answer nested 1,000 deep, an
integer of 5,000 digits and a key given twice (format_valid 0, one line each). The judge: the answer is put into
the rubric by `str.format_map` as a value, never read as a template, so `{prompt}`, `{response}` or Jinja markup in
an answer reaches the judge as text; an answer writing `GRADE: 10` grades nothing (the grade is the reply's field
in the judge's format); a judge's own server lost mid-run (not a list): interrupted, `resume` grades the answers left
ungraded. Servers: a list of 100 loopback addresses (127.0.0.1 to .100, one listening: the preflight's one line,
exit 3); one address 100 times (listed twice, refused); a server of a list whose model is pulled again mid-run (the
digests asked again at the end, the run failed naming the server). Shards: `0/0`, `5/3`, `-1/3`, `1/0`, `1/-2`,
`1/3/3`, a full-width digit (refused, one line naming `shard`), `1/1000000000` (a shard of one sample). The
embedded llama.cpp runner: an empty file (not a GGUF file), the GGUF's first 4 bytes, 100 KB, 60 MB, or all but
its last 432 bytes (llama.cpp cannot load it, one line, exit 3); num_ctx 0 (the model's own, a warning) and
10**9 (the context cannot be made, one line).
"""

from __future__ import annotations

import gc
import json

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from benchrun.core.errors import EXIT
from benchrun.execute.formatcheck import FormatCheck, json_words
from benchrun.testing.ollama_server import FakeOllama, Reply
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.wire import GRADES, judge_grades

pytestmark = pytest.mark.slow

WORDS = '''from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class Word(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str = Field(pattern=r"^(a+)+$")
    tags: dict[Annotated[str, Field(pattern=r"^(b+)+$")], int] = {}
'''
BACKTRACKS = {"1": {"answer": "a" * 64 + "!"}, "2": {"answer": "aa", "tags": {"b" * 64 + "!": 1}, "x": 1},
              "3": {"answer": "aa", "tags": {"bb": "x"}}}


def test_a_format_regex_that_backtracks_is_matched_in_linear_time(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values": {"a": [1, 2, 3]},
                                                   "reference": ["aa", "aa", "aa"], "format": "Word", "scorer": "exact_match"}),
                           "custom_response.py": WORDS})
    with FakeOllama(models=["llama3.2"], responder=lambda req: json.dumps(BACKTRACKS[req.prompt[-1]])) as server:
        result = run_benchrun(f"runner.host={server.url}", "task.path=bench", "cache=false",
                              f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    [scores] = (tmp_path / "outputs").rglob("scores.jsonl")
    assert sorted((s["id"], s["metrics"], s["detail"]) for s in read_jsonl(scores) if s["scorer"] == "format_valid") == [
        ("t:a=1", {"format_valid": 0}, f"answer: \"{'a' * 64}!\" does not match '^(a+)+$'"),
        ("t:a=2", {"format_valid": 0}, "Additional properties are not allowed (\"x\" was unexpected)"),
        ("t:a=3", {"format_valid": 0}, "tags/bb: \"x\" is not of type 'integer'")]


KEYED = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}, "^c": {}},
         "additionalProperties": False}


@pytest.mark.parametrize("schema, data", [
    (KEYED, {"aa": "x"}), (KEYED, {"aa": 1, "q": 2, "r": 3}), (KEYED, {"aa!": 1}), (KEYED, {"cc": 1, "aa": "x", "zz": 1}),
    ({**KEYED, "additionalProperties": {"type": "string"}}, {"q": 2}),
    ({"type": "object", "properties": {"w": {"type": "string", "pattern": "^(a+)+$"}}}, {"w": "ab"}),
    ({"type": "object", "propertyNames": {"pattern": "^(a+)+$"}}, {"ab": 1}),
])
def test_a_format_regex_is_explained_in_jsonschemas_words(schema, data):
    error = best_match(Draft202012Validator(schema).iter_errors(data))
    where = "/".join(map(str, error.absolute_path))
    said = json_words(error)  # jsonschema's words, the answer's values in JSON's (the thirty-third pass)
    assert FormatCheck(schema).problem(json.dumps(data)) == (f"{where}: {said}" if where else said)


def test_a_format_of_unevaluated_and_pattern_properties_is_explained_by_jsonschema_rs():
    schema = {"type": "object", "patternProperties": KEYED["patternProperties"], "unevaluatedProperties": False}
    assert FormatCheck(schema).problem(json.dumps({"a" * 64 + "!": 1})) == (
        f"Unevaluated properties are not allowed (\"{'a' * 64}!\" was unexpected)")


@pytest.mark.parametrize("option, said", [
    ("num_ctx=-1", "-1 is no context's size (0 is the model's own): give 0 or more"),
    ("num_thread=-5", "-5 is out of bounds: give at least 1"),
    ("num_thread=0", "0 is out of bounds: give at least 1")])
def test_a_local_context_or_thread_count_below_its_least_is_refused(tmp_path, option, said):
    result = call_benchrun("runner=local", f"runner.options.{option}", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': runner.options.{option.split('=')[0]}: {said}\n"))
    assert list(tmp_path.rglob("run.json")) == []


def test_a_judge_whose_requests_fail_answer_after_answer_stops_the_run_for_resume(tmp_path, caplog):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=answer) as model, \
            FakeOllama(models=["qwen2.5"], responder=lambda req: Reply(status=500, error="boom")) as judge:
        result = call_benchrun(f"runner.host={model.url}", "task.path=bench", "judge.model=qwen2.5",
                               f"judge.host={judge.url}", "+judge.backoff_s=0", "+judge.max_consecutive_failures=1",
                               "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        gc.collect()  # asyncio tells of a task's unretrieved failure when the task is collected
        [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
        info = json.loads((run_dir / "run.json").read_text())
        judge.responder = answer
        resumed = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    line = ("the judge's requests failed the same way for answer after answer (1 in a row), so the judge's setup is "
            "broken, not the benchmark: ResponseError: HTTP 500: boom (judge.max_consecutive_failures)")
    assert (result.returncode, info["status"], info["reason"]) == (EXIT["runner"], "failed", line)
    assert result.stderr.startswith(f"benchrun: error: {line}; run {info['run_id']} is recorded as 'failed' with ")
    assert result.stderr.endswith(f"finish it once the setup is mended with: benchrun-audit resume {run_dir}\n")
    assert (resumed.returncode, judge_grades(run_dir)) == (EXIT["ok"], sorted(GRADES))
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
