"""The twenty-eighth hostile pass of issue 19, the side of what goes in: the items the twenty-seventh pass left, then a
fresh pass. /work/notes/p28/result-input.md has the whole list, what held and what was left.

Fixed:
1. A byte-order mark (U+FEFF) past a file's start, raw or written as an escape, refused naming where
   (core.filebytes.MARK_INSIDE: utf8_text, yamlfile._given_text, compiler.files._parsed).
2. The embedded runner's advice under resume and retry names only what they take: the run's model file put back, memory
   freed, never runner.model_path or runner.options.num_ctx, which are the run's (execute.runners.localadvice).
3. Two value names of one task that print alike (`a` beside Cyrillic `а`, `ａ` beside `a`) refused
   (compiler.alike.look_alike, called where compiler.grid._names_apart refused two forms of one name); so is one that
   prints as `reference` or `id` (compiler.grid.RESERVED).
4. `~task.path` or `~runner`, deleting a key the run directory's name is made of, said as the override that did it
   (compose.config.unresolvable: a deletion of the key, of a section holding it, or the key named relative).
5. A YAML merge key (`<<: {...}`) said as what it is, not as a syntax error for want of a constructor
   (core.yamlfile._mapping).
9. A task folder's name refused with a look-alike letter in it (`tаsk`, a Cyrillic а) said with its escapes, and as
   of ASCII letters (compiler.sources._folder_tasks, core.text.name_said); so is a name a file's pattern refuses
   (a task's name, a value's in tasks.yml: compiler.schemas.describe), and a JSONL record's key that is not a column
   (compiler.data._add_record); the names listed beside such a refusal too (core.text.names_listed).
6. A template, a task's system prompt or an example's turn of invisible characters alone (a zero-width space) refused as one of only
   whitespace is: it asks nothing (compiler.grid._says_something, by scoring.trimmed's notion of what is unseen).
"""

from __future__ import annotations

import llama_cpp
import pytest

from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_benchrun
from tests.helpers.p29_input import dry_run as _dry_run

MARK = ("a byte-order mark (U+FEFF), which marks only a file's start: inside its text it is invisible and would be "
        "asked as it is (two files joined?); remove it")


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks/t/template.txt": "\ufeffsay \ufeff{a}\n", "tasks/t/values.csv": "a,reference\n1,1\n"},
     "in 'tasks/t/template.txt': task 't': line 1, column 5: "),
    ({"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "\ufeffa,reference\n1,1\nx\ufeffy,2\n"},
     "in 'tasks/t/values.csv': task 't': line 3, column 2: "),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.jsonl\n",
      "d.jsonl": '{"a": 1, "reference": "1"}\n{"a": "x\\uFEFFy", "reference": "2"}\n'},
     "in 'd.jsonl': task 't': line 2: "),
    ({"tasks.yml": "- name: t\n  template: \"say \\ufeff{a}\"\n  values: {a: [1]}\n  reference: ['1']\n"},
     "in 'tasks.yml': line 2, column 13: "),
    ({"tasks.yml": "- name: t\n  template: say \ufeff{a}\n  values: {a: [1]}\n  reference: ['1']\n"},
     "in 'tasks.yml': line 2, column 13: ")])
def test_a_byte_order_mark_inside_a_files_text_is_refused(tmp_path, files, said):
    """Before: a mark inside a template or a cell (`cat` of two files saved with one, a copy from a web page) was
    kept, invisible, and asked (`say \\ufeff1`)."""
    done = _dry_run(tmp_path, files)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: {said}{MARK}\n")


def test_a_byte_order_mark_first_is_still_read_without_it(tmp_path):
    done = _dry_run(tmp_path, {"tasks/t/template.txt": "\ufeffsay {a}\n", "tasks/t/values.csv": "\ufeffa,reference\n1,1\n"})
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert "say 1" in done.stdout


def test_a_local_runs_advice_under_resume_names_only_what_resume_takes(tmp_path):
    """Before: `model file '...' not found; set runner.model_path to a GGUF file` (and llama.cpp's load failure so), a
    key resume does not take: it loads the run's model_path."""
    made = call_benchrun("runner=local", "runner.model_path=m.gguf", "outputs=out", cwd=tmp_path)
    [run_dir] = (tmp_path / "out").glob("*/*")
    model = tmp_path / "m.gguf"
    missing = run_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    model.write_bytes(b"GGUF" + bytes(60))
    cut = run_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit", timeout=300)
    back = "put the run's model file back there (resume and retry load the run's runner.model_path)"
    assert made.stderr == f"benchrun: error: model file '{model}' not found; set runner.model_path to a GGUF file\n"
    assert (missing.returncode, missing.stderr) == (EXIT["runner"], f"benchrun: error: model file '{model}' not found; "
                                                                    f"{back}\n")
    assert (cut.returncode, cut.stderr) == (EXIT["runner"], (
        f"benchrun: error: llama.cpp {llama_cpp.__version__} cannot load model file '{model}' (cut short, or a model "
        f"architecture it does not know); {back}\n"))


@pytest.mark.parametrize(("header", "template", "said"), [
    ("a,\u0430,reference", "say {a} {\u0430}", "the value names 'a' and '\u0430' (\\u0430) may print alike: they differ only "
     "in letters of other scripts (Latin 'a', Cyrillic '\u0430' at character 1)"),
    ("t\u0430sk,task,reference", "say {task} {t\u0430sk}", "the value names 't\u0430sk' (t\\u0430sk) and 'task' may print "
     "alike: they differ only in letters of other scripts (Cyrillic '\u0430', Latin 'a' at character 2)"),
    ("a,\uff41,reference", "say {a} {\uff41}", "the value names 'a' and '\uff41' (\\uff41) may print alike: one name in "
     "two forms, one of compatibility characters (Unicode's NFKC: '\uff41' is 'a')")])
def test_two_value_names_that_print_alike_are_refused(tmp_path, header, template, said):
    """Before: `a` beside a Cyrillic `а` in one header were two values, printed (a sample id `t:a=1,а=2`, a table's
    columns, an export's) as two of one name."""
    second = header.split(",")[1]
    done = _dry_run(tmp_path, {"tasks/t/template.txt": template, "tasks/t/values.csv": f"{header}\n1,2,1\n"})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'tasks/t/values.csv': task 't': column '{second}': {said}; give each its own name\n"))


def test_value_names_of_other_scripts_apart_are_taken(tmp_path):
    done = _dry_run(tmp_path, {"tasks/t/template.txt": "{\u0432\u043e\u043f\u0440\u043e\u0441} {context} {x1}",
                               "tasks/t/values.csv": "\u0432\u043e\u043f\u0440\u043e\u0441,context,x1,reference\n"
                                                     "q,c,1,1\n"})
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


@pytest.mark.parametrize(("deleted", "said"), [
    ("~task.path", "task.path: cannot resolve: Interpolation key 'path' not found (resolving hydra.run.dir, from the "
                   "override '~task.path')"),
    ("~runner", "runner: cannot resolve: Interpolation key 'runner.model' not found (resolving hydra.run.dir, from the "
                "override '~runner')")])
def test_a_deleted_key_the_run_directory_is_named_of_names_its_override(tmp_path, deleted, said):
    """Before: `hydra.run.dir: cannot resolve: Interpolation key 'path' not found`, the override not named (as it was
    for `~runner.model`)."""
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n"})
    done = call_benchrun("task.path=bench", "dry_run=true", deleted, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'config': {said}\n")


def test_a_yaml_merge_key_is_said_as_what_it_is(tmp_path):
    """Before: `line 4, column 5: YAML syntax error: could not determine a constructor for the tag
    'tag:yaml.org,2002:merge'` (valid YAML 1.1, refused as benchrun refuses aliases)."""
    done = _dry_run(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values:\n    <<: {a: [1]}\n"})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks.yml': line 4, column 5: a merge key (<<), which copies keys from elsewhere (YAML "
        "1.1's, not YAML 1.2's), is not allowed in benchmark files; write the keys out (or quote '<<' for a key of "
        "that name)\n"))


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks.yml": "- name: t\n  template: \"\\u200b\\u2060\"\n  values: {a: [1]}\n"},
     "in 'tasks.yml': task 't': tasks[0].template: '\\u200b\\u2060' is only "),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  system: \"\\u200b\"\n  values: {a: [1]}\n"},
     "in 'tasks.yml': task 't': tasks[0].system: '\\u200b' is only "),
    ({"tasks/t/template.txt": "\u200b\n", "tasks/t/values.csv": "a\n1\n"},
     "in 'tasks/t/template.txt': task 't': '\\u200b' is only "),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n  fewshot:\n    - {user: \"\\u200b\", assistant: x}\n"},
     "in 'tasks.yml': task 't': tasks[0].fewshot[0].user: '\\u200b' is only "),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n  fewshot: {file: s.jsonl, n: 1, seed: null}\n",
      "s.jsonl": '{"user": "q", "assistant": "\\u2060"}\n'}, "in 's.jsonl': task 't': line 1.assistant: '\\u2060' is only ")])
def test_a_template_or_system_prompt_of_invisible_characters_is_refused(tmp_path, files, said):
    """Before: refused when only whitespace, taken when only a zero-width space, which asks as much."""
    done = _dry_run(tmp_path, files)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {said}whitespace and invisible characters (a zero-width space, a word joiner), which ask or "
        "say nothing: give the text\n"))


def test_a_system_prompt_of_invisible_characters_on_the_command_line_is_refused(tmp_path):
    done = _dry_run(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n"},
                    "task.system='\u200b'")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': task.system: only whitespace and invisible characters, which say nothing: give "
        "the system prompt's text, or leave task.system out for the tasks' own\n"))


@pytest.mark.parametrize(("header", "reserved", "what", "at"), [
    ("a,\u0440eference", "reference", "the references", "(Latin 'r', Cyrillic '\u0440' at character 1)"),
    ("\u0456d,a,reference", "id", "the sample ids", "(Latin 'i', Cyrillic '\u0456' at character 1)")])
def test_a_value_name_that_prints_as_a_reserved_one_is_refused(tmp_path, header, reserved, what, at):
    """Before: `a,рeference` (a Cyrillic р) was a task without references (`exact_match compares with a reference, but
    the task has none`), its column metadata; `іd` a value, the ids made of the values."""
    name = header.split(",")[1 if reserved == "reference" else 0]
    done = _dry_run(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.csv\n",
                               "d.csv": f"{header}\n1,1,1\n" if reserved == "id" else f"{header}\n1,1\n"})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'd.csv': task 't': column '{name}': '{name}' ({ascii(name)[1:-1]}) may print as "
        f"'{reserved}', the column of {what}: they differ only in letters of other scripts {at}; write '{reserved}', or "
        "another name\n"))


def test_a_task_folder_named_with_a_look_alike_letter_is_said_with_its_escapes(tmp_path):
    """Before: `'tаsk' is not a task name (letters, digits, ...)`: a name that reads `task`, of letters."""
    done = _dry_run(tmp_path, {"tasks/t\u0430sk/template.txt": "say {a}\n", "tasks/t\u0430sk/values.csv": "a\n1\n"})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks/t\u0430sk': 't\u0430sk' (t\\u0430sk) is not a task name (ASCII letters, digits, _ "
        ". - ; not starting with . or -): rename the folder\n"))


@pytest.mark.parametrize(("tasks", "said"), [
    ('- name: "t\\u0430sk"\n  template: say {a}\n  values: {a: [1]}\n',
     "task 't\u0430sk': tasks[0].name: 't\u0430sk' (t\\u0430sk) does not match '^[A-Za-z0-9_][A-Za-z0-9_.-]*$'"),
    ('- name: t\n  template: say {a}\n  values: {"\\u0430": [1]}\n',
     "task 't': tasks[0].values: '\u0430' (\\u0430) does not match '^[A-Za-z_][A-Za-z0-9_]*$'")])
def test_a_name_a_pattern_refuses_is_said_with_its_escapes(tmp_path, tasks, said):
    """Before: `'tаsk' does not match '^[A-Za-z0-9_]...'`, a name that reads as one the pattern takes."""
    done = _dry_run(tmp_path, {"tasks.yml": tasks})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'tasks.yml': {said}\n")


def test_a_jsonl_key_that_is_not_a_column_is_said_with_its_escapes(tmp_path):
    """Before: `'а' is not a column (the first record's keys: a, reference)`, a key that reads as one listed."""
    done = _dry_run(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.jsonl\n",
                               "d.jsonl": '{"a": 1, "reference": "1"}\n{"a": 2, "\\u0430": 3, "reference": "2"}\n'})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'd.jsonl': task 't': line 2: '\u0430' (\\u0430) is not a column (the first record's keys: "
        "a, reference)\n"))


def test_the_values_listed_beside_an_unknown_field_are_said_with_their_escapes(tmp_path):
    """Before: `field '{a}' is not in values (values: а)`, a Cyrillic а listed as the name refused."""
    done = _dry_run(tmp_path, {"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "\u0430,reference\n1,1\n"})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks/t/template.txt': task 't': field '{a}' is not in values (values: \u0430 (\\u0430))\n"))
