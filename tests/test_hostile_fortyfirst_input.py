"""The forty-first hostile pass of issue 19, the side of what goes in: the item the fortieth pass left, then a fresh
pass. /work/notes/p41/result-input.md has the whole list, what held and what was left.

Fixed:
1. Two tasks whose names differ only in their case (`t` in tasks.yml and a folder `tasks/T`, two folders `t` and
   `T`) refused naming both (compiler.tasknames): a case-blind file system (macOS's, Windows's) reads them as one
   name, two such folders as one folder, so a copy of the benchmark there had one task in place of two.
2. A judge's rubric that is no str.format template (a stray `}`) refused in one line naming judges.yml, the judge and
   the key (compiler.judges): it ended in a traceback, exit 1, the check of its fences reading it before the check
   that says why.
"""

from __future__ import annotations

import pytest

from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p41_input import judged

FOLDER = {"tasks/T/template.txt": "say {a}\n", "tasks/T/values.csv": "a,reference\n1,1\n"}
TWICE = ("duplicate task name: {} differs from {} (in {}) only in its case, which a case-blind file "
         "system (macOS's, Windows's) reads as one name (two such folders are one there): rename one")


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks.yml": TASK, **FOLDER}, "in 'tasks/T': task 'T': " + TWICE.format("'T'", "'t'", "tasks.yml")),
    ({"tasks.yml": TASK + TASK.replace("name: t", "name: T")},
     "in 'tasks.yml': task 'T': tasks[1].name: " + TWICE.format("'T'", "'t'", "tasks.yml")),
    ({**FOLDER, "tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,reference\n1,1\n"},
     "in 'tasks/t': task 't': " + TWICE.format("'t'", "'T'", "tasks/T"))])
def test_tasks_named_alike_but_for_case_or_unicode_form_are_refused(tmp_path, files, said):
    """Before: a dry run of two tasks, `t` and `T`, one task on macOS."""
    assert ended(dry_run(tmp_path, files)) == refusal(said)


@pytest.mark.parametrize(("rubric", "why"), [
    ("grade {response} }", "Single '}' encountered in format string"),
    ("grade {response} {", "Single '{' encountered in format string")])
def test_a_rubric_that_is_no_template_is_refused_in_one_line(tmp_path, rubric, why):
    """Before: `ValueError: Single '}' encountered in format string`, a traceback, exit 1."""
    assert ended(dry_run(tmp_path, judged(rubric=rubric), "judge.model=m")) == refusal(
        f"in 'judges.yml': judges[0].rubric: not a valid str.format template: {why}")
