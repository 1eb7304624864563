"""Every user mistake the compiler catches, each with its exact one-line message.

Messages that contain a temporary directory are compared after replacing it with `<tmp>`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchrun import BenchrunError, ConfigError, TaskError, compile_plan
from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import config, folder_task, task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

BUILTIN_SCORERS = "built-in: contains, exact_match"
BUILTIN_FORMATS = ("built-in: BoolAnswer, FloatAnswer, FloatJustification, IntAnswer, IntJustification, "
                   "StringAnswer, StringJustification, YesNoAnswer, YesNoJustification")


def compile_error(tmp_path: Path, files: dict[str, str], kind: type[BenchrunError] = TaskError, **cfg: Any) -> str:
    """Write a benchmark, compile it, and return the message of the error it must raise."""
    bench = write_bench(tmp_path, files)
    return config_error(tmp_path, config(bench, **cfg), kind)


def config_error(tmp_path: Path, cfg: dict[str, Any], kind: type[BenchrunError] = ConfigError) -> str:
    """Compile `cfg` in `tmp_path`; the message of the error it must raise, with tmp_path shown as <tmp>."""
    with pytest.raises(kind) as caught:
        compile_plan(cfg, tmp_path)
    return str(caught.value).replace(str(tmp_path.resolve()), "<tmp>").replace(str(tmp_path), "<tmp>")


def test_yaml_syntax_error_names_line_and_column(tmp_path):
    files = {"tasks.yml": "- name: t\n  template: 'say {a}\n  values: {a: [1]}\n"}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': line 4, column 1: YAML syntax error: found unexpected end of stream "
        "(while scanning a quoted scalar at line 2, column 13)")


def test_yaml_indentation_error_names_line_and_column(tmp_path):
    files = {"tasks.yml": "- name: t\n  template: say {a}\n   values: {a: [1]}\n"}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': line 3, column 10: YAML syntax error: mapping values are not allowed here")


def test_yaml_control_character_names_line_and_column(tmp_path):
    files = {"tasks.yml": "- name: t\n  template: say\x01 {a}\n  values: {a: [1]}\n"}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': line 2, column 16: '\\x01', a control character, which no text asks (it would be sent as "
        "written, and a terminal showing it takes it as a command); remove it (a tab, a line break or a form feed is "
        "kept)")


def test_tasks_yml_that_is_not_utf8(tmp_path):
    bench = write_bench(tmp_path, {})
    (bench / "tasks.yml").write_bytes("- name: caf\u00e9\n".encode("latin-1"))
    assert config_error(tmp_path, config(bench), TaskError) == (
        "in 'tasks.yml': line 1, column 12: not UTF-8 text (invalid continuation byte, 0xe9); save it as UTF-8")


def test_unknown_task_key_suggests_the_right_one(tmp_path):
    files = {"tasks.yml": tasks_yml(task(), task("typo", scorrer="contains"))}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': task 'typo': tasks[1].scorrer: unknown key 'scorrer' (did you mean 'scorer'?)")


def test_missing_template(tmp_path):
    files = {"tasks.yml": tasks_yml({"name": "t", "values": {"a": [1]}})}
    assert compile_error(tmp_path, files) == "in 'tasks.yml': task 't': tasks[0]: 'template' is required"


def test_template_field_not_in_values(tmp_path):
    files = {"tasks.yml": tasks_yml(task(template="say {a} to {who}"))}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': task 't': tasks[0].template: field '{who}' is not in values (values: a)")


def test_folder_template_field_not_in_values(tmp_path):
    files = folder_task("add", "what is {a} + {c}?\n", "a,b,reference\n2,3,5\n")
    assert compile_error(tmp_path, files) == (
        "in 'tasks/add/template.txt': task 'add': field '{c}' is not in values (values: a, b)")


def test_invalid_template(tmp_path):
    files = {"tasks.yml": tasks_yml(task(template="say {a"))}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': task 't': tasks[0].template: not a valid str.format template: "
        "expected '}' before end of string")


@pytest.mark.parametrize("template", ["say {} and {a}", "say {0}"])
def test_positional_template_field(tmp_path, template):
    files = {"tasks.yml": tasks_yml(task(template=template))}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': task 't': tasks[0].template: positional fields like {} are not allowed; name a value")


def test_tuple_lists_of_unequal_length(tmp_path):
    files = {"tasks.yml": tasks_yml(task(template="{a}{b}", values={"a": [1, 2], "b": [1, 2, 3]}))}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': task 't': tasks[0].values: value lists differ in length (a=2, b=3); "
        "value_combinations: tuple needs equal lengths")


def test_reference_that_is_neither_a_list_nor_calculated(tmp_path):
    files = {"tasks.yml": tasks_yml(task(reference="calc"))}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': task 't': tasks[0].reference: \"calc\" is not valid here "
        "(One reference per sample (a list of acceptable answers is allowed), or `calculated`.)")


def test_reference_count_differs_from_sample_count(tmp_path):
    files = {"tasks.yml": tasks_yml(task(values={"a": [1, 2]}, value_combinations="combinations",
                                         reference=["1", "2", "3"]))}
    assert compile_error(tmp_path, files) == "in 'tasks.yml': task 't': tasks[0].reference: 3 references for 2 samples"


def test_unknown_scorer_lists_builtins_and_custom_functions(tmp_path):
    custom = ("from json import loads\n\n\ndef mine(response, reference):\n    return 1\n\n\n"
              "def also_mine(response, reference):\n    return 0\n\n\n"
              "def _helper(response, reference):\n    return 0\n")
    files = {"tasks.yml": tasks_yml(task(scorer=["contains", "mein"])), "custom_scorer.py": custom}
    assert compile_error(tmp_path, files) == (
        f"in 'tasks.yml': task 't': tasks[0].scorer: unknown scorer 'mein' "
        f"({BUILTIN_SCORERS}; in custom_scorer.py: also_mine, mine)")


def test_unknown_scorer_without_custom_scorer_file(tmp_path):
    files = folder_task("add", "{a}", "a,reference\n1,1\n", info_yml="scorer: exact\n")
    assert compile_error(tmp_path, files) == (
        f"in 'tasks/add/info.yml': task 'add': scorer: unknown scorer 'exact' ({BUILTIN_SCORERS}; "
        "custom_scorer.py: none)")


def test_unknown_format_lists_builtins_and_custom_classes(tmp_path):
    custom = ("from enum import Enum\n\nfrom pydantic import BaseModel\n\n\n"
              "class Colour(str, Enum):\n    red = 'red'\n\n\n"
              "class ColourAnswer(BaseModel):\n    answer: Colour\n")
    files = {"tasks.yml": tasks_yml(task(format="ColorAnswer")), "custom_response.py": custom}
    assert compile_error(tmp_path, files) == (
        f"in 'tasks.yml': task 't': tasks[0].format: unknown format 'ColorAnswer' "
        f"({BUILTIN_FORMATS}; in custom_response.py: ColourAnswer)")


@pytest.mark.parametrize(("source", "message"), [
    ("import json\n\n\ndef ok(response, reference):\n    return 1\n\n\nTABLE = 1 / 0\n",
     "cannot import: ZeroDivisionError: division by zero (line 8)"),
    ("def broken(response, reference:\n    return 1\n", "cannot import: SyntaxError: '(' was never closed (line 1)"),
    ("import json\nimport not_a_module_benchrun_knows\n",
     "cannot import: ModuleNotFoundError: No module named 'not_a_module_benchrun_knows' (line 2)"),
])
def test_custom_scorer_that_fails_to_import(tmp_path, source, message):
    files = {"tasks.yml": tasks_yml(task()), "custom_scorer.py": source}
    assert compile_error(tmp_path, files) == f"in 'custom_scorer.py': {message}"


def test_custom_response_that_fails_to_import(tmp_path):
    files = {"tasks.yml": tasks_yml(task()), "custom_response.py": "\n\nclass Answer(BaseModel):\n    answer: int\n"}
    assert compile_error(tmp_path, files) == (
        "in 'custom_response.py': cannot import: NameError: name 'BaseModel' is not defined (line 3)")


def test_malformed_csv_row_names_the_line(tmp_path):
    files = folder_task("add", "{a} + {b}", "a,b,reference\n2,3,5\n\n4,5\n8,9,17\n")
    assert compile_error(tmp_path, files) == (
        "in 'tasks/add/values.csv': task 'add': line 4: malformed row: 2 cells where the header has 3")


def test_duplicate_task_names_in_tasks_yml(tmp_path):
    files = {"tasks.yml": tasks_yml(task("add"), task("sub"), task("add"))}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': task 'add': tasks[2].name: duplicate task name (also in tasks.yml)")


def test_duplicate_task_names_across_tasks_yml_and_a_folder(tmp_path):
    files = {"tasks.yml": tasks_yml(task("add")), **folder_task("add", "{a}", "a,reference\n1,1\n")}
    assert compile_error(tmp_path, files) == "in 'tasks/add': task 'add': duplicate task name (also in tasks.yml)"


def test_duplicate_sample_ids_from_repeated_rows(tmp_path):
    files = {"tasks.yml": tasks_yml(task(template="{a}{b}", values={"a": [1, 2, 1], "b": ["x", "y", "x"]},
                                         reference=["1", "2", "3"]))}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': task 't': tasks[0].values: duplicate sample id 't:a=1,b=x' (samples 1 and 3); "
        "make the values unique or add an 'id' column")


def test_duplicate_sample_ids_from_the_id_values(tmp_path):
    files = {"tasks.yml": tasks_yml(task(values={"id": ["q1", "q1"], "a": [1, 2]}))}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': task 't': tasks[0].values.id: duplicate sample id 't:q1' (samples 1 and 2); "
        "make the ids unique")


def test_duplicate_sample_ids_from_the_id_column(tmp_path):
    files = folder_task("add", "{a}", "id,a,reference\nq1,1,1\nq2,2,2\nq1,3,3\n")
    assert compile_error(tmp_path, files) == (
        "in 'tasks/add/values.csv': task 'add': column 'id': duplicate sample id 'add:q1' (samples 1 and 3); "
        "make the ids unique")


@pytest.mark.parametrize(("values", "message"), [
    ({}, "tasks[0].values: an empty mapping, where one of at least 1 item is taken"),
    ({"a": []}, "tasks[0].values.a: an empty list, where one of at least 1 item is taken"),
])
def test_empty_values_in_tasks_yml(tmp_path, values, message):
    files = {"tasks.yml": tasks_yml(task(values=values))}
    assert compile_error(tmp_path, files) == f"in 'tasks.yml': task 't': {message}"


@pytest.mark.parametrize(("values_csv", "message"), [
    ("a,reference\n", "empty values: a header but no rows"),
    ("a,reference\n\n , \n", "empty values: a header but no rows"),
    ("", "empty values: no header and no rows"),
])
def test_empty_values_csv(tmp_path, values_csv, message):
    files = folder_task("add", "{a}", values_csv)
    assert compile_error(tmp_path, files) == f"in 'tasks/add/values.csv': task 'add': {message}"


def test_task_path_that_does_not_exist(tmp_path):
    cfg = config(tmp_path / "nowhere")
    assert config_error(tmp_path, cfg) == "task.path: '<tmp>/nowhere' is not a directory (looked in <tmp>/nowhere)"


def test_relative_task_path_that_does_not_exist(tmp_path):
    cfg = config("benches/nowhere")
    assert config_error(tmp_path, cfg) == (
        "task.path: 'benches/nowhere' is not a directory (looked in <tmp>/benches/nowhere)")


def test_task_path_without_tasks(tmp_path):
    files = {"README.md": "my benchmark\n", "custom_scorer.py": "def f(response, reference):\n    return 1\n"}
    assert compile_error(tmp_path, files) == (
        "in '<tmp>/bench': no tasks found: expected tasks.yml or tasks/<name>/template.txt")


def test_only_naming_a_task_that_does_not_exist(tmp_path):
    files = {"tasks.yml": tasks_yml(task("add"), task("sub"))}
    assert compile_error(tmp_path, files, ConfigError, only=["sub", "mul", "div"]) == (
        "task.only: no task named 'mul', 'div' (tasks: add, sub)")


@pytest.mark.parametrize(("runner", "message"), [
    ({"options": {"temperature": "hot"}},
     'runner.options.temperature: Input should be a valid number, not "hot"'),
    ({"options": {"seed": 1.5}}, "runner.options.seed: Input should be a valid integer, not 1.5"),
    ({"options": {"temprature": 0.9}}, "runner.options.temprature: unknown option 'temprature' (did you mean "
                                       "'temperature'?)"),
    ({"concurrency": 0}, "runner.concurrency: 0 is out of bounds: give at least 1"),
    ({"concurrencyy": 2}, "runner.concurrencyy: unknown key 'concurrencyy' (did you mean 'concurrency'?)"),
    ({"timeout_s": "1m"}, "runner.timeout_s: Input should be a valid number, not \"1m\""),
    ({"type": "vllm"}, "runner.type: unknown runner type 'vllm' (did you mean 'ollama'?)"),
    ({"model": ""}, "runner.model: '', where a model's name is taken: give the model's name"),
    ({"model": ["a", "a"]}, "runner.model: a model name, or a list of different model names"),
])
def test_wrong_runner_config(tmp_path, runner, message):
    files = {"tasks.yml": tasks_yml(task())}
    assert compile_error(tmp_path, files, ConfigError, **runner) == f"in 'config': {message}"


def test_runner_keys_left_out_take_their_defaults(tmp_path):
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml(task())})
    cfg = config(bench)
    del cfg["runner"]["model"]
    assert compile_plan(cfg, tmp_path).manifest.runner.model == "llama3.2"
    del cfg["runner"]["type"]
    assert config_error(tmp_path, cfg) == "in 'config': runner: 'type' is required (ollama, openai, local)"


def test_builtin_scorer_with_calculated_reference(tmp_path):
    files = {"tasks.yml": tasks_yml(task(reference="calculated", scorer="exact_match"))}
    assert compile_error(tmp_path, files) == (
        "in 'tasks.yml': task 't': tasks[0].scorer: scorer 'exact_match' compares with a reference, but the task "
        "has none (reference: calculated); give references or a custom scorer")


def test_folder_task_without_references_needs_a_custom_scorer(tmp_path):
    files = folder_task("add", "{a} + {b}", "a,b\n2,3\n")
    assert compile_error(tmp_path, files) == (
        "in 'tasks/add/info.yml': task 'add': scorer: scorer 'exact_match' compares with a reference, but the "
        "task has none (reference: calculated); give references or a custom scorer")


def test_info_yml_unknown_key(tmp_path):
    files = folder_task("add", "{a}", "a,reference\n1,1\n", info_yml="scorer: contains\nfromat: IntAnswer\n")
    assert compile_error(tmp_path, files) == (
        "in 'tasks/add/info.yml': task 'add': fromat: unknown key 'fromat' (did you mean 'format'?)")


def test_reference_column_and_calculated_reference(tmp_path):
    files = folder_task("add", "{a}", "a,reference\n1,1\n", info_yml="reference: calculated\n")
    assert compile_error(tmp_path, files) == (
        "in 'tasks/add/info.yml': task 'add': reference: reference is 'calculated' but values.csv has a "
        "reference column")


def test_several_models_compile_one_at_a_time(tmp_path):
    files = {"tasks.yml": tasks_yml(task())}
    assert compile_error(tmp_path, files, ConfigError, model=["a", "b"]) == (
        "runner.model: compile one model at a time; this config lists several")


# Through `python -m benchrun`'s entry point (in this process; once as a real process): exit code 2 and exactly one
# line on stderr (so no traceback).

CLI_CASES = {
    "typo": ({"tasks.yml": tasks_yml(task(scorrer="contains"))}, [],
             "in 'tasks.yml': task 't': tasks[0].scorrer: unknown key 'scorrer' (did you mean 'scorer'?)"),
    "yaml": ({"tasks.yml": "- name: t\n  template: say {a}\n   values: {a: [1]}\n"}, [],
             "in 'tasks.yml': line 3, column 10: YAML syntax error: mapping values are not allowed here"),
    "csv": (folder_task("add", "{a}", "a,reference\n1,1\n2\n"), [],
            "in 'tasks/add/values.csv': task 'add': line 3: malformed row: 1 cell where the header has 2"),
    "only": ({"tasks.yml": tasks_yml(task())}, ["task.only=[x]"], "task.only: no task named 'x' (tasks: t)"),
    "temperature": ({"tasks.yml": tasks_yml(task())}, ["runner.options.temperature=hot"],
                    "in 'config': runner.options.temperature: Input should be a valid number, not \"hot\""),
    "runner type": ({"tasks.yml": tasks_yml(task())}, ["runner.type=vllm"],
                    "in 'config': runner.type: unknown runner type 'vllm' (did you mean 'ollama'?)"),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_command_line_error_is_one_line(tmp_path, case):
    assert_one_line(call_benchrun, tmp_path, case)


@pytest.mark.slow
def test_a_real_process_says_one_line(tmp_path):
    assert_one_line(run_benchrun, tmp_path, "typo")


def assert_one_line(benchrun, tmp_path: Path, case: str) -> None:
    """`benchrun dry_run=true task.path=bench ...` on CLI_CASES[case]: exit 2, its message alone on stderr."""
    files, overrides, message = CLI_CASES[case]
    write_bench(tmp_path, files)
    result = benchrun("dry_run=true", "task.path=bench", *overrides, cwd=tmp_path)
    assert (result.returncode, result.stderr, result.stdout) == (EXIT["usage"], f"benchrun: error: {message}\n", "")


def test_command_line_missing_task_path(tmp_path):
    result = call_benchrun("dry_run=true", "task.path=nowhere", cwd=tmp_path)
    assert result.returncode == EXIT["usage"]
    assert result.stderr.replace(str(tmp_path.resolve()), "<tmp>") == (
        "benchrun: error: task.path: 'nowhere' is not a directory (looked in <tmp>/nowhere)\n")


@pytest.mark.slow
@pytest.mark.parametrize(("args", "env"), [([], {"HYDRA_FULL_ERROR": "1"}), (["--verbose"], {})])
def test_full_traceback_on_request(tmp_path, args, env):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorrer="contains"))})
    result = call_benchrun("dry_run=true", "task.path=bench", *args, cwd=tmp_path, env=env)
    assert result.returncode == 1  # Hydra's own exit code for an exception it re-raises
    assert "Traceback (most recent call last):" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1] == (
        "benchrun.core.errors.TaskError: in 'tasks.yml': task 't': tasks[0].scorrer: unknown key 'scorrer' "
        "(did you mean 'scorer'?)")

