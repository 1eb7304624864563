"""The forty-first hostile pass of issue 19, the side of what goes in: the item the fortieth pass left, then a fresh
pass. /work/notes/p41/result-input.md has the whole list, what held and what was left.

Fixed:
1. Two tasks whose names differ only in their case (`t` in tasks.yml and a folder `tasks/T`, two folders `t` and
   `T`) refused naming both (compiler.tasknames): a case-blind file system (macOS's, Windows's) reads them as one
   name, two such folders as one folder, so a copy of the benchmark there had one task in place of two.
2. A judge's rubric that is no str.format template (a stray `}`) refused in one line naming judges.yml, the judge and
   the key (compiler.judges): it ended in a traceback, exit 1, the check of its fences reading it before the check
   that says why.
3. A judge's number grade whose bounds let in no grade (`Field(ge=5, le=1)`, `gt=1, lt=2` of an int) refused at
   compile (compiler.gradebounds): the whole run was asked, then every judge reply refused (`verdict: 3 is greater
   than the maximum of 1`), the judge's metric empty; one whose bounds let in one grade (`ge=1, le=1`, an int's
   `ge=0, le=1, multiple_of=2`) too: its metric was that grade whatever the judge answered, as an Enum's grades all
   scored alike are refused.
4. A judge's grade it scores that its format's own bounds refuse (an Enum field's `max_length=2`, a string's
   `pattern='^r'` beside scores for `wrong`) refused at compile (compiler.gradebounds): the judge could never give
   it.
5. Two few-shot examples asking one question (an examples file's line copied twice, two files joined; the same
   question answered two ways inline) refused naming the second (compiler.shots): every sample was sent both.
6. A sample's value named `system` that the template never shows (a data file's `system` column, empty in some rows
   or not; a grid's) refused naming the column (compiler.chatcolumns): it was kept as metadata, every sample asked
   without the system prompt written for it.
7. An empty model's name (`judge.model=`, `runner.model=" "`) said as itself (core.modelnames): it was `a model
   name, or a list of different model names`, where judge.model takes no list.
8. A judge's grade that says nothing (`scores: {"": 1, no: 0}` of a string grade, `" "`, an Enum's `''`) refused
   (compiler.judges): a judge's empty reply (`{"verdict": ""}`) was graded, scored 1.
9. A field naming a value of the task (`{a}`) in a system prompt (a task's, an info.yml's, `task.system`) or in an
   example's user text refused naming the text (compiler.unfilled): those are sent as written, so the braces
   reached the model as they were, before every sample.
10. A task folder's file named as one benchrun reads at the benchmark's top alone (`tasks/t/judges.yml`,
    `tasks/t/tasks.yml`, `tasks/t/custom_scorer.py`) refused naming it (compiler.lookalikes): it was read by
    nothing, the top judges.yml's judge of that name grading the task with another rubric, the folder's tasks.yml's
    tasks never asked.
"""

from __future__ import annotations

import pytest

from benchrun.compiler.gradebounds import number_bounds_fault, refused_grade
from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p41_input import compile_refusal, compiled_tasks, judged, verdict

FOLDER = {"tasks/T/template.txt": "say {a}\n", "tasks/T/values.csv": "a,reference\n1,1\n"}
TWICE = ("duplicate task name: {} differs from {} (in {}) only in its case, which a case-blind file "
         "system (macOS's, Windows's) reads as one name (two such folders are one there): rename one")


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks.yml": TASK, **FOLDER}, "in 'tasks/T': task 'T': " + TWICE.format("'T'", "'t'", "tasks.yml")),
    ({"tasks.yml": TASK + TASK.replace("name: t", "name: T")},
     "in 'tasks.yml': task 'T': tasks[1].name: " + TWICE.format("'T'", "'t'", "tasks.yml")),
    ({**FOLDER, "tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,reference\n1,1\n"},
     "in 'tasks/t': task 't': " + TWICE.format("'t'", "'T'", "tasks/T"))])
def test_tasks_named_alike_but_for_case_are_refused(tmp_path, files, said):
    """Before: a dry run of two tasks, `t` and `T`, one task on macOS."""
    assert compile_refusal(tmp_path, files) == said


def test_a_rubric_that_is_no_template_is_refused_in_one_line(tmp_path):
    """Before: `ValueError: Single '}' encountered in format string`, a traceback, exit 1."""
    assert ended(dry_run(tmp_path, judged(rubric="grade {response} }"), "judge.model=m")) == refusal(
        "in 'judges.yml': judges[0].rubric: not a valid str.format template: Single '}' encountered in format string")
    assert compile_refusal(tmp_path / "b", judged(rubric="grade {response} {")) == (
        "in 'judges.yml': judges[0].rubric: not a valid str.format template: Single '{' encountered in format string")


NO_GRADE = "which no grade is, so every reply of the judge would be refused; give it a range of grades"
ONE = "which only {0} is, so the judge's metric would be {0} whatever its model answers; give it a range of grades"
REFUSED = "of field 'verdict' is one its format refuses ({}), so the judge never gives it; take the bound off the " \
          "field, or the grade out"


@pytest.mark.parametrize(("grade", "scores", "said"), [
    ("int = Field(ge=5, le=1)", None, f"field 'verdict' is an integer with minimum 5, maximum 1, {NO_GRADE}"),
    ("int = Field(gt=1, lt=2)", None, "field 'verdict' is an integer with exclusiveMinimum 1, exclusiveMaximum 2, "
     + NO_GRADE),
    ("int = Field(ge=1, le=1)", None, "field 'verdict' is an integer with minimum 1, maximum 1, " + ONE.format(1)),
    ("float = Field(ge=0.5, le=0.5)", None, "field 'verdict' is a number with minimum 0.5, maximum 0.5, "
     + ONE.format(0.5)),
    ("int = Field(ge=0, le=1, multiple_of=2)", None, "field 'verdict' is an integer with minimum 0, maximum 1, "
     "multipleOf 2, " + ONE.format(0)),
    ("Grade = Field(max_length=2)", {"right": 1, "wrong": 0},
     'grade "right" ' + REFUSED.format('{"$ref": "#/$defs/Grade", "maxLength": 2}')),
    ("str = Field(pattern='^r')", {"right": 1, "wrong": 0},
     'grade "wrong" ' + REFUSED.format('{"pattern": "^r", "type": "string"}'))])
def test_a_judge_grade_its_bounds_let_in_once_or_never_is_refused(tmp_path, grade, scores, said):
    """Before: a run asked whole, then every judge reply refused (`verdict: 3 is greater than the maximum of 1`), or a
    metric of 1 whatever the judge said, or a grade scored that never came."""
    files = judged(response=verdict(grade), scores=scores)
    assert compile_refusal(tmp_path, files) == f"in 'judges.yml': judges[0].score: {said}"


@pytest.mark.parametrize("bounds", [
    {"type": "integer", "minimum": 1, "maximum": 2}, {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    {"type": "integer", "minimum": 1}, {"type": "integer", "exclusiveMinimum": 0.5, "maximum": 2},
    {"type": "integer", "minimum": -4, "maximum": -1, "multipleOf": 2}])
def test_a_number_grade_its_bounds_let_in_twice_is_taken(bounds):
    assert number_bounds_fault(bounds) is None


@pytest.mark.parametrize(("prop", "grades"), [
    ({"type": "string", "maxLength": 3}, ["yes", "no"]), ({"enum": ["a", "bb"], "type": "string"}, ["a", "bb"]),
    ({"$ref": "#/$defs/G"}, ["right", "wrong"])])
def test_a_grade_its_bounds_let_in_is_taken(prop, grades):
    assert refused_grade(prop, {"G": {"enum": ["right", "wrong"], "type": "string"}}, grades) is None


SHOT = '{"user": "say 9", "assistant": "{\\"answer\\": \\"9\\"}"}\n'
TWO_ASKS = "example 2 asks \"say 9\", as example 1 does, {}: every sample of the task would be sent both; leave one out"


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks.yml": TASK + "  fewshot: {file: s.jsonl}\n", "s.jsonl": SHOT + SHOT},
     "in 's.jsonl': task 't': line 2: " + TWO_ASKS.format("with the same answer")),
    ({"tasks.yml": TASK + "  fewshot:\n    - {user: say 9, assistant: '9'}\n    - {user: ' say 9', assistant: '8'}\n"},
     "in 'tasks.yml': task 't': tasks[0].fewshot[1]: " + TWO_ASKS.format("answered otherwise"))])
def test_two_examples_asking_one_question_are_refused(tmp_path, files, said):
    """Before: a dry run, every sample to be sent the question twice."""
    assert compile_refusal(tmp_path, files) == said


UNSENT = ("a value named 'system' is not sent as the sample's system prompt: a task sends its own 'system' (one for "
          "all its samples), and a value the template never shows is kept as metadata, unsent; give the task "
          "'system', show the value in the template, or rename it")
DATA = "- name: t\n  template: say {a}\n  values_file: d.EXT\n"


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks.yml": DATA.replace("EXT", "jsonl"), "d.jsonl": '{"a": 1, "reference": "1", "system": "Be terse."}\n'
      '{"a": 2, "reference": "2", "system": ""}\n'}, f"in 'd.jsonl': task 't': column 'system': {UNSENT}"),
    ({"tasks.yml": DATA.replace("EXT", "csv"), "d.csv": "a,reference,system\n1,1,Be terse.\n"},
     f"in 'd.csv': task 't': column 'system': {UNSENT}"),
    ({"tasks.yml": TASK.replace("{a: [1]}", "{a: [1], system: [x]}")},
     f"in 'tasks.yml': task 't': tasks[0].values.system: {UNSENT}")])
def test_a_value_named_system_the_template_never_shows_is_refused(tmp_path, files, said):
    """Before: a dry run, the column kept as metadata and no system prompt sent."""
    assert compile_refusal(tmp_path, files) == said


def test_a_value_named_system_the_template_shows_is_taken(tmp_path):
    files = {"tasks.yml": TASK.replace("{a: [1]}", "{a: [1], system: [x]}").replace("say {a}", "'{system}: {a}'")}
    assert compiled_tasks(tmp_path, files) == ["t"]


def test_an_empty_model_name_is_said_as_itself(tmp_path):
    """Before: `judge.model: a model name, or a list of different model names`, a list it takes none of."""
    assert ended(dry_run(tmp_path, judged(), "judge.model=")) == refusal(
        "in 'config': judge.model: '', where a model's name is taken: give the model's name")
    assert compile_refusal(tmp_path / "b", judged(), model=" ") == (
        "in 'config': runner.model: ' ', where a model's name is taken: give the model's name")


@pytest.mark.parametrize(("grade", "scores", "blank"), [
    ("str", {"": 1, "no": 0}, '""'), ("str", {"yes": 0, " ": 1}, '" "'), ("Literal['', 'no']", {"": 1, "no": 0}, '""')])
def test_a_judge_grade_that_says_nothing_is_refused(tmp_path, grade, scores, blank):
    """Before: a judge's reply `{"verdict": ""}` graded "", scored 1."""
    assert compile_refusal(tmp_path, judged(response=verdict(grade), scores=scores)) == (
        f"in 'judges.yml': judges[0].scores: grade {blank} of field 'verdict' says nothing, so a reply that says "
        "nothing (an empty grade, a judge cut short) would score 1: give each grade a word")


AS_WRITTEN = "{{a}} names a value of the task, but {}, so the braces would reach the model as they are: {}, or write " \
             "the text without braces"
SYSTEM = AS_WRITTEN.format("a system prompt is sent as written, the same before every sample",
                           "write the field in the template")


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks.yml": TASK + "  system: 'You answer about {a}.'\n"}, "in 'tasks.yml': task 't': tasks[0].system: "
     + SYSTEM),
    ({"tasks.yml": TASK + "  fewshot:\n    - {user: 'say {a}', assistant: '1'}\n"},
     "in 'tasks.yml': task 't': tasks[0].fewshot[0].user: " + AS_WRITTEN.format(
         "an example's user text is sent as written", "give the example as {values: ..., assistant: ...}, which fill "
         "the template"))])
def test_a_value_field_in_text_sent_as_written_is_refused(tmp_path, files, said):
    """Before: a dry run, `{a}` to be sent to the model as written."""
    assert compile_refusal(tmp_path, files) == said


def test_a_value_field_in_task_system_is_refused(tmp_path):
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "task.system='About {a}.'")) == refusal(
        f"in 'config': task.system: {SYSTEM} (task 't' has a value 'a')")


def test_braces_naming_no_value_are_sent_as_written(tmp_path):
    system = "  system: 'Answer as {\"answer\": 5}, about {b}.'\n"
    assert compiled_tasks(tmp_path, {"tasks.yml": TASK + system}) == ["t"]


TOP_ALONE = ("{0} is read at the benchmark's top alone ({0}, beside tasks/), so a task folder's is read by nothing, "
             "and its task run without it: move it to the benchmark's folder, or its content into the one there")


@pytest.mark.parametrize(("name", "files"), [
    ("judges.yml", {**judged(), "tasks/t/info.yml": "judge: j\n",
                    "tasks/t/judges.yml": judged(rubric="mine {response}")["judges.yml"]}),
    ("tasks.yml", {"tasks/t/tasks.yml": TASK.replace("name: t", "name: u")})])
def test_a_task_folders_file_read_at_the_top_alone_is_refused(tmp_path, name, files):
    """Before: a dry run, the folder's file read by nothing (the top judges.yml's rubric grading, task u never
    asked)."""
    files = {**files, "tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,reference\n1,1\n"}
    files.pop("tasks.yml", None)
    assert compile_refusal(tmp_path, files) == f"in 'tasks/t/{name}': task 't': " + TOP_ALONE.format(name)
