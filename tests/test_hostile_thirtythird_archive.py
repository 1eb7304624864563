"""Hostile input, thirty-third pass, the archive and audit side (what the thirty-second left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. a record line (sealed over) giving a JSON type no writer writes where a field is a count or a whole number
   (`"eval": "5"`, `"completion_tokens": 2.0`, `"prompt_tokens": true`, a metric's `true`), or a summary.json giving
   one (`speed.n` 2.0): pydantic's lax mode read them as 5, 2 and 1, and verify said intact; what is read from the
   archive is read with JSON's own types (pydantic's strict mode: `archive.reader.Run._records`,
   `archive.jsononce.as_model`), an integer still a float (`"seconds": 1`)
2. a summary.json (sealed over) whose wall time is shrunk below its longest answer, samples/s made to match: verify
   said intact; a wall time is at least the longest answer its sessions' clock timed (`audit.speedcheck._clocked`;
   `tests.helpers.archives.synthetic_run` now writes a wall time of its answers' 0.1 s, where it wrote 0.0)
3. a run.json (an earlier benchrun's) whose model's or judge's `server_version` is null or not text: show, the
   judge's line and the report said `server None` and `server {'major': 0}` in Python's words; said `-` (none said)
   or `unknown` (`audit.provenance.server_version`, the one reading of it)
4. a retry killed (SIGKILL) after carrying 4 answers and asking 1, a carried line then edited, `resume --force`: the
   edited line was dropped and asked again, yet run.json still said 4 carried over and 2 asked again, and verify
   said `line 4 gives no carried_from, where run.json's parent says the retry carried over its first 4 answers`; the
   carried lines a forced resume keeps are what the retry carried (`archive.sessions.carry_cut`, given the lines
   dropped)

A fresh pass:

5. a merge killed (SIGKILL) after its run's files were written but before the seal: verify of the hidden folder it
   left (`.merged.merging-<id>`) said `seal it with: benchrun-audit resume .merged.merging-<id>`, resume sealed it,
   and the next merge into `merged` removed that sealed run; the folder a merge makes its run in is no run of its
   own, said as what it is by every command (`archive.reader.load_run`, the name owned by `archive.atomic`)
6. a judge call (sealed over) giving a grade its reply does not give (`"zzz"` where the reply says `right`):
   verify said intact and `show --samples` showed `zzz -> 1`; a call's grade is its reply's grade field, as its writer
   copied it (`audit.judgegrades.JudgeGrades.misread`)
"""
from __future__ import annotations

import json

import pytest

from benchrun.archive.reader import load_run
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p29_archive import failed
from tests.helpers.p31_archive import summary_rewritten
from tests.helpers.p32_archive import sealed_fields
from tests.helpers.p33_archive import judged_run, killed_retry, merge_left

# -- what the thirty-second pass left ----------------------------------------------------------------------------------

INTEGER = "where a whole number is taken"


@pytest.mark.parametrize(("name", "fields", "said"), [
    ("responses.jsonl", {"durations_ns": {"eval": "5"}}, f"durations_ns.eval: '5' is text, {INTEGER}"),
    ("responses.jsonl", {"completion_tokens": 2.0}, f"completion_tokens: 2.0 is a number, {INTEGER}"),
    ("responses.jsonl", {"prompt_tokens": True}, f"prompt_tokens: true is a boolean, {INTEGER}"),
    ("scores.jsonl", {"metrics": {"closeness": True}}, f"metrics.closeness.int: true is a boolean, {INTEGER}"),
])
def test_a_record_line_of_a_json_type_no_writer_writes_is_said_by_verify(tmp_path, name, fields, said):
    run_dir = sealed_fields(synthetic_run(tmp_path / "r", [1, 0]), name, 1, **fields)
    assert failed(tmp_path, run_dir) == [f"FAIL  {name}: line 1: not a valid record: {said}"]


def test_a_summary_of_a_json_type_no_writer_writes_is_said_by_verify(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    summary_rewritten(run_dir, lambda summary: summary["speed"].update(n=2.0))
    assert failed(tmp_path, run_dir) == [f"FAIL  summary.json: unreadable: speed.n: 2.0 is a number, {INTEGER}"]


def test_an_integer_is_read_as_a_float(tmp_path):
    run_dir = sealed_fields(synthetic_run(tmp_path / "r", [1, 0]), "responses.jsonl", 1, seconds=1)
    assert [response.seconds for response in load_run(run_dir).responses()] == [1.0, 0.1]


def test_a_wall_time_shrunk_below_the_longest_answer_is_said_by_verify(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    assert audit(tmp_path, "verify", "r").stdout.splitlines()[-1] == "intact"
    summary_rewritten(run_dir, lambda summary: summary["speed"].update(wall_s=0.01, samples_per_s=200.0))
    assert failed(tmp_path, run_dir) == [
        "FAIL  summary.json: speed.wall_s: summary.json's is 0.01 s, less than its longest answer (0.1 s), which its "
        "clock timed: show, list and compare read it, export and report read the records"]


@pytest.mark.parametrize(("version", "said"), [(None, "-"), ({"major": 0}, "unknown")])
def test_a_server_version_that_is_no_text_is_said_as_none_or_unknown(tmp_path, version, said):
    identity = {"name": "m", "server_version": version}
    synthetic_run(tmp_path / "r", [1, 0], identity=identity, judge={"identity": identity, "runner": {"model": "j"}})
    shown = [" ".join(line.split()) for line in audit(tmp_path, "show", "r").stdout.splitlines()]
    assert [line for line in shown if " server " in line] == [f"model m name m digest - server {said}",
                                                              f"judge j name m digest - server {said}"]
    assert audit(tmp_path, "report", "r", "--output", "r.html").returncode == 0
    page = (tmp_path / "r.html").read_text()
    assert (f"server version</td><td><pre>{said}</pre>" in page, page.count(f"server {said}</pre>")) == (True, 1)


@pytest.mark.slow
def test_a_carried_line_a_forced_resume_of_a_killed_retry_drops_is_asked_not_carried(tmp_path):
    parent, retry = killed_retry(tmp_path)
    lines = (retry / "responses.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == 5
    lines[1] = lines[1].replace('"text":"', '"text":" ')
    (retry / "responses.jsonl").write_text("".join(lines))
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        resumed = audit(tmp_path, "resume", str(retry), "--force", "--host", server.url)
    assert (resumed.returncode, resumed.stderr) == (0, "")
    info = json.loads((retry / "run.json").read_text())
    parent_id = json.loads((parent / "run.json").read_text())["run_id"]
    responses = [json.loads(line) for line in (retry / "responses.jsonl").read_text().splitlines()]
    assert [line.get("carried_from") for line in responses] == [parent_id] * 3 + [None] * 3
    assert (info["parent"]["carried"], info["parent"]["asked"]) == (3, 3)
    note = info["history"][0]
    assert ([session["answers"] for session in note["carried_by"]], note["carry_cut"]) == (
        [3], {"planned": 4, "carried": 3})
    assert audit(tmp_path, "verify", str(retry)).stdout.splitlines()[-1] == "intact"


# -- a fresh pass ------------------------------------------------------------------------------------------------------

MERGING = ("benchrun: error: in '{}': the hidden folder in which a merge into merged makes its run, renamed to "
           "merged as the merge ends (one left by a merge that was stopped, the next merge into merged removes): no run of "
           "its own to read or resume; merge the shards again\n")


@pytest.mark.parametrize("command", ["verify", "show", "resume", "retry", "export"])
def test_the_folder_a_killed_merge_left_is_said_as_no_run(tmp_path, command):
    left = merge_left(tmp_path)
    done = audit(tmp_path, command, left.name)
    assert (done.returncode, done.stdout, done.stderr) == (4, "", MERGING.format(left.name))
    assert sorted(path.name for path in left.iterdir()) == ["config.yaml", "manifest.json", "records.sha256",
                                                            "responses.jsonl", "run.json", "run.lock", "scores.jsonl",
                                                            "seal.json", "summary.json"]


@pytest.mark.parametrize(("grade", "said"), [("zzz", '"zzz", where its reply gives "right"'),
                                            (1, '1, where its reply gives "right"')])
def test_a_judge_calls_grade_its_reply_does_not_give_is_said_by_verify(tmp_path, grade, said):
    run_dir = sealed_fields(judged_run(tmp_path), "judgements.jsonl", 1, grade=grade)
    assert failed(tmp_path, run_dir) == [f"FAIL  judgements.jsonl: line 1 gives grade {said} ('verdict')"]
