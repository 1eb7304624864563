"""Hostile input, thirty-third pass, the archive and audit side (what the thirty-second left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. a record line (sealed over) giving a JSON type no writer writes where a field is a count or a whole number
   (`"eval": "5"`, `"completion_tokens": 2.0`, `"prompt_tokens": true`, a metric's `true`), or a summary.json giving
   one (`speed.n` 2.0): pydantic's lax mode read them as 5, 2 and 1, and verify said intact; what is read from the
   archive is read with JSON's own types (pydantic's strict mode: `archive.reader.Run._records`,
   `archive.jsononce.as_model`), an integer still a float (`"seconds": 1`)
"""
from __future__ import annotations

import pytest

from benchrun.archive.reader import load_run
from tests.helpers.archives import synthetic_run
from tests.helpers.p29_archive import failed
from tests.helpers.p31_archive import summary_rewritten
from tests.helpers.p32_archive import sealed_fields

# -- what the thirty-second pass left ----------------------------------------------------------------------------------

INTEGER = "Input should be a valid integer"


@pytest.mark.parametrize(("name", "fields", "said"), [
    ("responses.jsonl", {"durations_ns": {"eval": "5"}}, f"durations_ns.eval: {INTEGER}"),
    ("responses.jsonl", {"completion_tokens": 2.0}, f"completion_tokens: {INTEGER}"),
    ("responses.jsonl", {"prompt_tokens": True}, f"prompt_tokens: {INTEGER}"),
    ("scores.jsonl", {"metrics": {"closeness": True}}, f"metrics.closeness.int: {INTEGER}"),
])
def test_a_record_line_of_a_json_type_no_writer_writes_is_said_by_verify(tmp_path, name, fields, said):
    run_dir = sealed_fields(synthetic_run(tmp_path / "r", [1, 0]), name, 1, **fields)
    assert failed(tmp_path, run_dir) == [f"FAIL  {name}: line 1: not a valid record: {said}"]


def test_a_summary_of_a_json_type_no_writer_writes_is_said_by_verify(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    summary_rewritten(run_dir, lambda summary: summary["speed"].update(n=2.0))
    assert failed(tmp_path, run_dir) == [f"FAIL  summary.json: unreadable: speed.n: {INTEGER}"]


def test_an_integer_is_read_as_a_float(tmp_path):
    run_dir = sealed_fields(synthetic_run(tmp_path / "r", [1, 0]), "responses.jsonl", 1, seconds=1)
    assert [response.seconds for response in load_run(run_dir).responses()] == [1.0, 0.1]
