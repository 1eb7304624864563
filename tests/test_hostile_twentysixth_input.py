"""The twenty-sixth hostile pass of issue 19, the side of what goes in: the items the twenty-fifth pass left, then a
fresh pass. /work/notes/p26/result-input.md has the whole list, what held and what was left.

Fixed:
1. Another tool's folder in tasks/ (Jupyter's `.ipynb_checkpoints`, `.git`, Python's `__pycache__`) was read as a task
   and refused: a folder holding no template.txt whose name is hidden or `__pycache__` is not a task
   (compiler.sources.task_folders).
"""

from __future__ import annotations

from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import folder_task, write_bench
from tests.helpers.commands import call_benchrun

HOST = "runner.host=http://127.0.0.1:9"


def test_another_tools_folder_in_tasks_is_not_a_task(tmp_path):
    """Before: `in 'tasks/.ipynb_checkpoints': '.ipynb_checkpoints' is not a task name (...)`, exit 2."""
    write_bench(tmp_path, {**folder_task("t", "say {a}", "a,reference\n1,1\n"),
                           "tasks/.ipynb_checkpoints/notes-checkpoint.ipynb": "{}",
                           "tasks/.git/HEAD": "ref: refs/heads/main\n", "tasks/__pycache__/x.cpython-311.pyc": ""})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr, "1 task, 1 sample -> 1 model call" in done.stdout) == (EXIT["ok"], "", True)


def test_a_hidden_folder_holding_a_template_is_still_refused(tmp_path):
    write_bench(tmp_path, {**folder_task("t", "say {a}", "a,reference\n1,1\n"),
                           **folder_task(".x", "say {a}", "a,reference\n1,1\n")})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks/.x': '.x' is not a task name (letters, digits, _ . - ; not starting with . or -): "
        "rename the folder\n"))
