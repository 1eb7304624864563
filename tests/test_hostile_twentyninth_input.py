"""The twenty-ninth hostile pass of issue 19, the side of what goes in: the items the twenty-eighth pass left, then a
fresh pass. /work/notes/p29/result-input.md has the whole list, what held and what was left.

Fixed:
1. A value filling a template's field with nothing visible (an empty or blank CSV cell, a JSONL `" "`, a grid's
   `"\\u200b"`) refused naming the column and the sample (compiler.blanks.refuse_blank_values); a value no field
   shows may still be blank.
2. An override setting a key that another deletes before it, or with its whole group (`~task task.path=b`), said in
   benchrun's words, not Hydra's `Could not override ... use +task.path=b` (compose.commandline).
3. A CSV header of one column holding `;`, a tab or `|` said as a file of another separator
   (compiler.files._one_separated).
4. A C0 control character but tab, line feed, carriage return and form feed (ESC, BEL, a backspace) in a benchmark's
   text, raw or as an escape, refused as a NUL is (core.filebytes.UNASKED: utf8_text, yamlfile._given_text,
   files._parsed, tasksettings._some_text for task.system).
"""

from __future__ import annotations

import pytest

from benchrun import compile_plan
from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import config, write_bench
from tests.helpers.commands import call_benchrun

HOST = "runner.host=http://127.0.0.1:9"
BLANK = "which fills {a} with nothing visible; give the value, or leave the sample out"
CONTROL = ("a control character, which no text asks (it would be sent as written, and a terminal showing it takes it "
           "as a command); remove it (a tab, a line break or a form feed is kept)")


def _dry_run(root, files: dict[str, str], *args: str):
    """A dry run (in this process) of the benchmark made of `files`."""
    write_bench(root, files)
    return call_benchrun("task.path=bench", HOST, "dry_run=true", *args, cwd=root)


def _refused(done, said: str) -> None:
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: {said}\n")


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,reference\n1,1\n   ,2\n"},
     f"in 'tasks/t/values.csv': task 't': column 'a': the value of sample 2 is empty, {BLANK}"),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.jsonl\n",
      "d.jsonl": '{"a": "\\t ", "reference": "1"}\n'},
     f"in 'd.jsonl': task 't': column 'a': the value of sample 1 is '\\t ', only whitespace and invisible "
     f"characters, {BLANK}"),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [x, \"\\u200b\"]}\n  reference: ['1', '2']\n"},
     f"in 'tasks.yml': task 't': tasks[0].values.a: the value of item 2 of the list is '\\u200b', only whitespace "
     f"and invisible characters, {BLANK}")])
def test_a_value_filling_a_field_with_nothing_visible_is_refused(tmp_path, files, said):
    """Before: taken, and asked as `say ` (the template with a hole in it), without a word."""
    _refused(_dry_run(tmp_path, files), said)


def test_a_blank_value_no_field_shows_is_taken(tmp_path):
    done = _dry_run(tmp_path, {"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,unit,reference\n1,,1\n"})
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert "1 task, 1 sample" in done.stdout


@pytest.mark.parametrize(("overrides", "key", "set_", "deleted"), [
    (("~task", "task.path=bench"), "task.path", "task.path=bench", "~task"),
    (("task.path=bench", "~task"), "task.path", "task.path=bench", "~task"),
    (("task.path=bench", "~runner.model", "runner.model=x"), "runner.model", "runner.model=x", "~runner.model"),
    (("task.path=bench", "runner.model=x", "~runner"), "runner.model", "runner.model=x", "~runner")])
def test_an_override_setting_a_key_another_deletes_is_said_in_benchruns_words(tmp_path, overrides, key, set_,
                                                                              deleted):
    """Before: Hydra's `Could not override 'task.path'. To append to your config use +task.path=bench`, advice to add
    a key the config has."""
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n"})
    _refused(call_benchrun("dry_run=true", *overrides, cwd=tmp_path),
             f"in 'config': {key}: the override '{set_}' sets a key that the override '{deleted}' deletes; give one or "
             "the other")


@pytest.mark.parametrize(("header", "said"), [("a;reference", "';'"), ("a\treference", "tabs"), ("a|reference", "'|'")])
def test_a_csv_of_another_separator_is_said_so(tmp_path, header, said):
    """Before: `header: column 1 has an invalid name 'a;reference'`, which did not say what the file is."""
    row = header.replace("a", "1").replace("reference", "1")
    done = _dry_run(tmp_path, {"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": f"{header}\n{row}\n"})
    _refused(done, f"in 'tasks/t/values.csv': task 't': header: one column named {header!r}: separated by {said}? "
                   "benchrun reads CSV separated by ','")


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks/t/template.txt": "say \x1b[31m{a}\n", "tasks/t/values.csv": "a,reference\n1,1\n"},
     "in 'tasks/t/template.txt': task 't': line 1, column 5: '\\x1b', "),
    ({"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,reference\n1,1\nx\x07y,2\n"},
     "in 'tasks/t/values.csv': task 't': line 3, column 2: '\\x07', "),
    ({"tasks.yml": "- name: t\n  template: \"say \\e{a}\"\n  values: {a: [1]}\n  reference: ['1']\n"},
     "in 'tasks.yml': line 2, column 13: '\\x1b', "),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.jsonl\n",
      "d.jsonl": '{"a": "x\\u0008", "reference": "1"}\n'},
     "in 'd.jsonl': task 't': line 1: '\\x08', "),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n"
                   "  fewshot: {file: s.jsonl, n: 1, seed: 0}\n", "s.jsonl": '{"user": "q\\u000b", "assistant": "a"}\n'},
     "in 's.jsonl': task 't': line 1: '\\x0b', ")])
def test_a_control_character_in_a_benchmarks_text_is_refused(tmp_path, files, said):
    """Before: taken, and asked as written (`say \\x1b[31m1`), while a NUL in the same places was refused."""
    _refused(_dry_run(tmp_path, files), f"{said}{CONTROL}")


def test_a_control_character_in_the_system_prompt_override_is_refused(tmp_path):
    done = _dry_run(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n"},
                    "task.system='be \x07brief'")
    _refused(done, f"in 'config': task.system: '\\x07', {CONTROL}")


def test_a_tab_a_form_feed_and_a_carriage_return_are_kept(tmp_path):
    bench = write_bench(tmp_path, {"tasks/t/template.txt": "say\t{a}\x0c\rnext\n",
                                   "tasks/t/values.csv": "a,reference\np\x0cq,1\n"})
    assert [s.prompt for s in compile_plan(config(bench)).manifest.samples] == ["say\tp\x0cq\x0c\nnext"]
