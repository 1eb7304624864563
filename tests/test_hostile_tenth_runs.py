"""Hostile input, tenth pass, the process side (issue 19's fresh pass of the same kinds): real `python -m benchrun`
processes under abuse, the cases it found bad, each with the rule it now obeys.

- a JSONL values or examples file holding half of a UTF-16 surrogate pair as an escape (`"a": "x\\ud800"`, as a
  writer that splits an emoji's pair writes it): taken as a value, then a UnicodeEncodeError's traceback when the
  manifest was written (exit 1), though tasks.yml refuses the same escape naming its line. Now refused where the line
  is read (`compiler.files`), naming the file, the task and the line; a pair of escapes (`\\ud83d\\ude00`) is the
  character it spells

What held
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import tasks_yml, write_bench
from tests.helpers.commands import call_benchrun

pytestmark = pytest.mark.slow

TASK = {"name": "t", "template": "say {a}", "values_file": "v.jsonl"}


@pytest.mark.parametrize("files, file", [
    ({"tasks.yml": tasks_yml(TASK), "v.jsonl": '{"a": "x\\ud800", "reference": "1"}\n'}, "v.jsonl"),
    ({"tasks.yml": tasks_yml({**TASK, "fewshot": {"file": "ex.jsonl"}}), "v.jsonl": '{"a": 1, "reference": "1"}\n',
      "ex.jsonl": '{"user": "hi", "assistant": "ok"}\n{"user": "x", "assistant": ["\\ud800"]}\n'}, "ex.jsonl"),
])
def test_a_lone_surrogate_escape_in_a_jsonl_file_is_refused_naming_its_line(tmp_path, files, file):
    write_bench(tmp_path, files)
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    line = 1 if file == "v.jsonl" else 2
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{file}': task 't': line {line}: \\ud800 is half of a UTF-16 surrogate pair, not a "
        "character; write the character itself (or both halves of its pair, \\ud83d\\ude00)\n"))


def test_a_pair_of_surrogate_escapes_in_a_jsonl_file_is_the_character_it_spells(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(TASK), "v.jsonl": '{"a": "\\ud83d\\ude00", "reference": "1"}\n'})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, "say \U0001F600" in done.stdout) == (EXIT["ok"], True)
