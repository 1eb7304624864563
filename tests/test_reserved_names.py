"""benchrun's own scores have names no scorer function may take: a task naming one is refused at compile, and a
scorer file's function of that name is never applied (it would merge with benchrun's own check)."""

from __future__ import annotations

import pytest

from benchrun import TaskError, compile_plan
from benchrun.testing.lab import Lab
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import config, task, tasks_yml, write_bench

IMPOSTOR = "def format_valid(response, reference):\n    return 1\n\n\ndef fine(response, reference):\n    return 1\n"


def test_a_task_naming_format_valid_as_its_scorer_is_refused_at_compile(tmp_path):
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorer=["fine", "format_valid"])),
                                   "custom_scorer.py": IMPOSTOR})
    with pytest.raises(TaskError) as caught:
        compile_plan(config(bench), tmp_path)
    assert str(caught.value) == ("in 'tasks.yml': task 't': tasks[0].scorer: 'format_valid' is benchrun's own score "
                                 "(each answer checked against its format, always recorded): name the scorer "
                                 "otherwise")


def test_a_rescore_with_a_file_defining_format_valid_keeps_benchruns_own(tmp_path):
    (tmp_path / "extra.py").write_text(IMPOSTOR)
    with Lab(tmp_path, n=4) as lab:
        assert lab.call(*lab.args()).returncode == 0
        [run_dir] = lab.run_dirs()
        rescored = lab.call("rescore", str(run_dir), "--scorers", str(tmp_path / "extra.py"), module="benchrun.audit")
    assert rescored.returncode == 0, rescored.stderr
    scores = read_jsonl(run_dir / "rescores" / "001" / "scores.jsonl")
    assert [s["scorer"] for s in scores if s["id"] == "times7:a=1"] == ["format_valid", "times7", "fine"]
    assert [s["metrics"] for s in scores if s["scorer"] == "format_valid"] == [{"format_valid": 1}] * 4
