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
from tests.helpers.commands import call_benchrun, run_benchrun
from tests.helpers.p29_input import dry_run as _dry_run

BLANK = "which fills {a} with nothing visible; give the value, or leave the sample out"
CONTROL = ("a control character, which no text asks (it would be sent as written, and a terminal showing it takes it "
           "as a command); remove it (a tab, a line break or a form feed is kept)")


def _ended(done) -> tuple[int, str, str]:
    return done.returncode, done.stdout, done.stderr


def _refusal(said: str) -> tuple[int, str, str]:
    """How a run refused in one line ends: exit 2, nothing printed but `said`."""
    return EXIT["usage"], "", f"benchrun: error: {said}\n"


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
    assert _ended(_dry_run(tmp_path, files)) == _refusal(said)


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
    assert _ended(call_benchrun("dry_run=true", *overrides, cwd=tmp_path)) == _refusal(
        f"in 'config': {key}: the override '{set_}' sets a key that the override '{deleted}' deletes; give one or "
        "the other")


@pytest.mark.parametrize(("header", "said"), [("a;reference", "';'"), ("a\treference", "tabs"), ("a|reference", "'|'")])
def test_a_csv_of_another_separator_is_said_so(tmp_path, header, said):
    """Before: `header: column 1 has an invalid name 'a;reference'`, which did not say what the file is."""
    row = header.replace("a", "1").replace("reference", "1")
    done = _dry_run(tmp_path, {"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": f"{header}\n{row}\n"})
    assert _ended(done) == _refusal(
        f"in 'tasks/t/values.csv': task 't': header: one column named {header!r}: separated by {said}? "
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
                   "  fewshot: {file: s.jsonl, n: 1, seed: 0}\n",
      "s.jsonl": '{"user": "q\\u000b", "assistant": "a"}\n'},
     "in 's.jsonl': task 't': line 1: '\\x0b', ")])
def test_a_control_character_in_a_benchmarks_text_is_refused(tmp_path, files, said):
    """Before: taken, and asked as written (`say \\x1b[31m1`), while a NUL in the same places was refused."""
    assert _ended(_dry_run(tmp_path, files)) == _refusal(f"{said}{CONTROL}")


def test_a_control_character_in_the_system_prompt_override_is_refused(tmp_path):
    done = _dry_run(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n"},
                    "task.system='be \x07brief'")
    assert _ended(done) == _refusal(f"in 'config': task.system: '\\x07', {CONTROL}")


def test_a_tab_a_form_feed_and_a_carriage_return_are_kept(tmp_path):
    bench = write_bench(tmp_path, {"tasks/t/template.txt": "say\t{a}\x0c\rnext\n",
                                   "tasks/t/values.csv": "a,reference\np\x0cq,1\n"})
    assert [s.prompt for s in compile_plan(config(bench)).manifest.samples] == ["say\tp\x0cq\x0c\nnext"]


def test_a_plain_equals_sign_or_merge_sign_value_is_the_text_it_is(tmp_path):
    """Before: `line 3, column 20: YAML syntax error: could not determine a constructor for the tag
    'tag:yaml.org,2002:value'` (YAML 1.1's tag of a plain `=`, which no loader constructs; `<<` so too)."""
    bench = write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'a {op} b'\n  values: {op: [+, =, <<]}\n"
                                                "  reference: ['1', '2', '3']\n"})
    assert [s.prompt for s in compile_plan(config(bench)).manifest.samples] == ["a + b", "a = b", "a << b"]


@pytest.mark.parametrize(("schema", "shown"), [("True", "true"), ("False", "false")])
def test_a_custom_format_whose_schema_is_no_object_is_refused(tmp_path, schema, shown):
    """Before: a traceback, `ValidationError: 1 validation error for FormatSpec json_schema Input should be a valid
    dictionary` (exit 1): JSON Schema's own `true` passed the check of a schema."""
    done = _dry_run(tmp_path, {
        "tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n  format: F\n",
        "custom_response.py": "from pydantic import BaseModel\n\n\nclass F(BaseModel):\n    answer: str\n\n"
                              "    @classmethod\n    def model_json_schema(cls, *args, **kwargs):\n"
                              f"        return {schema}\n"})
    assert _ended(done) == _refusal(
        f"in 'custom_response.py': format 'F': its JSON schema is {shown}, not an object: a format is the "
        "schema of an answer's fields; let pydantic make it from the class's fields")


@pytest.mark.parametrize(("path", "why"), [
    ("~/d.jsonl", "~ is not expanded, and a file of the home directory is outside the benchmark"),
    ("$HOME/d.jsonl", "environment variables are not expanded: name the file as it is"),
    ("https://example.com/d.jsonl", "benchrun fetches no URL: download the file into it")])
def test_a_data_file_written_as_a_home_path_a_variable_or_a_url_is_said_so(tmp_path, path, why):
    """Before: `file '~/d.jsonl' is missing (paths are relative to the benchmark directory)`, not saying why a file
    that is there was not found."""
    done = _dry_run(tmp_path, {"tasks.yml": f"- name: t\n  template: say {{a}}\n  values_file: '{path}'\n"})
    assert _ended(done) == _refusal(
        f"in 'tasks.yml': task 't': tasks[0].values_file: file '{path}' is missing (paths are relative to "
        f"the benchmark directory: {why})")


@pytest.mark.parametrize(("files", "chosen", "loop"), [
    ({"self": "defaults:\n  - self\n  - _self_\npath: demo:listbench\n"}, "self", "task/self -> task/self"),
    ({"a": "defaults:\n  - b\n  - _self_\npath: demo:listbench\n", "b": "defaults:\n  - a\n"}, "a",
     "task/a -> task/b -> task/a")])
def test_a_config_whose_defaults_include_itself_is_one_line(tmp_path, files, chosen, loop):
    """Before: a RecursionError's traceback of 2,500 lines (exit 1)."""
    for name, text in files.items():
        write_bench(tmp_path, {f"task/{name}.yaml": text}, name="mine")
    done = run_benchrun("--config-dir", "mine", f"task={chosen}", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'task/{chosen}': its defaults list includes it again ({loop}), which Hydra would follow "
        "for ever; take it out of the defaults\n"))


def test_a_runner_preset_giving_no_model_names_the_override_that_chose_it(tmp_path):
    """Before: `in 'config': hydra.run.dir: cannot resolve: Interpolation key 'runner.model' not found`, naming
    neither the preset (a pod spec's YAML in a --config-dir folder) nor the override."""
    write_bench(tmp_path, {"runner/pod.yaml": "apiVersion: v1\nkind: Pod\n"}, name="other")
    done = call_benchrun("--config-dir", "other", "task=listbench", "runner=pod", "dry_run=true", cwd=tmp_path)
    assert _ended(done) == _refusal(
        "in 'config': runner: cannot resolve: Interpolation key 'runner.model' not found (resolving "
        "hydra.run.dir, from the override 'runner=pod')")


def test_a_config_dir_that_is_a_file_is_said_so(tmp_path):
    """Before: `Additional config directory '.../presets.yaml' not found`, of a file that is there."""
    (tmp_path / "presets.yaml").write_text("runner: {model: m}\n")
    done = run_benchrun("--config-dir", "presets.yaml", "task=listbench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: --config-dir: '{tmp_path / 'presets.yaml'}' is a file, not a folder: name the folder that "
        "holds your presets (runner/mine.yaml)\n"))


def test_a_jsonl_key_that_is_no_value_name_names_its_line(tmp_path):
    """Before: `in 'd.jsonl': task 't': header: column 3 has an invalid name 'a b'`, of a file with no header."""
    done = _dry_run(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.jsonl\n",
                               "d.jsonl": '\n{"a": 1, "reference": "1", "a b": 2}\n'})
    assert _ended(done) == _refusal("in 'd.jsonl': task 't': line 2: key 3 has an invalid name 'a b'")


@pytest.mark.parametrize("column", ["Reference", "refrence"])
def test_a_column_named_nearly_reference_is_named_where_references_are_missing(tmp_path, column):
    """Before: `scorer 'exact_match' compares with a reference, but the task has none (reference: calculated)`, of a
    values.csv whose `Reference` column was read as a value."""
    done = _dry_run(tmp_path, {"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": f"a,{column}\n1,1\n"})
    assert _ended(done) == _refusal(
        "in 'tasks/t/info.yml': task 't': scorer: scorer 'exact_match' compares with a reference, but the "
        f"task has none (reference: calculated; its '{column}' is a value: the references' column is named "
        "'reference'); give references or a custom scorer")


def test_an_examples_value_filling_a_field_with_nothing_visible_is_refused(tmp_path):
    """Before: taken, and the example asked as `say  ` before every sample."""
    done = _dry_run(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n"
                                            "  fewshot:\n    - {values: {a: ' '}, assistant: x}\n"})
    assert _ended(done) == _refusal(
        "in 'tasks.yml': task 't': tasks[0].fewshot[0].values: the value 'a' is ' ', only whitespace and "
        "invisible characters, which fills {a} with nothing visible; give the value, or leave the example out")
