"""The twenty-fourth hostile pass of issue 19, the side of what goes in (compose): the items the last pass left, then
what this pass found. /work/notes/p24/result-compose.md has the whole list, what held and what was left."""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun

HOST = "runner.host=http://127.0.0.1:9"


def _bench(tmp_path, files: dict[str, str]) -> None:
    """The benchmark `tmp_path/bench` holding `files` (relative path -> text)."""
    for name, text in files.items():
        path = tmp_path / "bench" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(("keys", "said"), [
    ("limit: 1.0", "tasks[0].limit: 1.0 is not an integer: write the whole number (1)"),
    ("sample: {n: 2.0, seed: 0}", "tasks[0].sample.n: 2.0 is not an integer: write the whole number (2)"),
    ("sample: {n: 2, seed: 1.0}", "tasks[0].sample.seed: 1.0 is not an integer: write the whole number (1)")])
def test_a_float_where_a_task_file_means_a_count_is_refused(tmp_path, keys, said):
    """Before: `limit: 1.0` was taken as 1 (JSON Schema's integer takes 1.0), and the manifest kept 1.0."""
    _bench(tmp_path, {"tasks.yml": f'- name: t\n  template: "say {{a}}"\n  values: {{a: [1, 2, 3]}}\n  {keys}\n'})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'tasks.yml': task 't': {said}\n")


@pytest.mark.parametrize(("given", "said"), [
    ("repeats=2.0", "repeats: Input should be a valid integer, not 2.0"),
    ("task.max_samples=1e3", "task.max_samples: Input should be a valid integer, not 1000.0"),
    ("runner.concurrency=2.0", "runner.concurrency: Input should be a valid integer, not 2.0")])
def test_a_float_given_for_a_count_setting_is_refused(tmp_path, given, said):
    """Before: taken as 2 (pydantic's lax int), config.yaml keeping the 2.0 given; options were refused so already."""
    done = call_benchrun("task=listbench", HOST, "dry_run=true", given, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'config': {said}\n")


def test_a_float_for_a_number_setting_is_taken(tmp_path):
    done = call_benchrun("task=listbench", HOST, "dry_run=true", "runner.timeout_s=2.5", "scorer_timeout_s=3", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
