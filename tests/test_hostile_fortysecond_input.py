"""The forty-second hostile pass of issue 19, the side of what goes in: the items the forty-first pass left, then a
fresh pass. /work/notes/p42/result-input.md has the whole list, what held and what was left.

Fixed:
1. A value named as the id column but for its case (a CSV's `ID`, `Id`; an inline `values: {ID: ...}`) in a task
   without an `id` refused naming the column (compiler.sampleids): it was read as a value, each sample's id made of
   all its values (`t:a=1,ID=q1`), not the id the column gave.
2. A line end in an override outside quotes (a script saved with Windows line ends passing `runner.model=m\r`; `\r`
   inside a list, `task.only=[t\r]`; NEL, U+2028) said as a line end to remove (compose.overridewords): the advice
   was to quote it (`runner.model='m\r'`), which a model's name then refused as a control character; inside a list
   Hydra's message was split at the `\r` and said `LexerNoViableAltException: task.only=[t` alone.
3. A file named as one benchrun reads but written as JSON, as other tools name such a file (`info.json` in a task
   folder, `tasks.json` beside tasks.yml, `judges.json`) refused naming it (compiler.lookalikes): it was read by
   nothing, its task run with the default scorer, its judges never asked.
4. A task folder whose values are in a file of another name (values.ndjson, values.json, values.tsv, values.xlsx,
   `values (1).csv`) refused naming the folder and the two names read (compiler.sources): it was said as
   `in 'tasks/t/values.csv': file is missing`, values.jsonl unsaid.
5. A preset of benchrun's groups that holds no keys (a `runner/mine.yaml` saved empty, only comments, `null`, `{}`)
   refused naming the file (compose.userpresets), as one holding a list is: chosen, it was said as a key of the
   command line (`runner.host: the config holds no value of it to override; add it with a '+'`) or as Hydra's
   `Interpolation key 'runner.model' not found`, the file unnamed.
6. A sample's id holding Unicode's line or paragraph separator (U+2028, U+2029: a JSONL string holds them raw, as
   JSON allows) refused where an id column gives it, and percent-encoded where values make it (`t:a=x%E2%80%A8y`)
   (compiler.sampleids), as a control character's line break (NEL) is: the id was printed on two lines.
7. A preset's `defaults` that is no list of presets (`defaults: ollama`, a mapping, `null`; an item `- 3`, `- [a]`)
   refused naming the file, line and key (compose.userpresets): Hydra's `ValueError: Unsupported type in defaults :
   int` or `Invalid defaults list in 'runner/mine'` named neither the file nor the line.
8. A number written with a decimal comma, as a European locale writes it (`runner.options.temperature=0,7`), said as
   two values and the number it may mean (compose.sweepwords): the advice was `add -m`, which ran a sweep of the
   temperatures 0 and 7, or a list `[0,7]`.
9. A CSV whose first line is Excel's naming of its separator (`sep=;`, `sep=,`) refused as that line, to remove
   (compiler.files): it was said as a header of one column `sep=;` separated by ';', or as a column's invalid name
   `sep=`.
"""

from __future__ import annotations

import pytest

from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p31_input import preset_run
from tests.helpers.p42_input import TEMPLATE, refused, sample_ids

ID_SAID = ("'{0}' is read as a value, not as the samples' ids: the id column is named 'id', by that exact name; "
           "rename it 'id' (it stays a value the template can show), or give it another name")


@pytest.mark.parametrize(("files", "said"), [
    ({**TEMPLATE, "tasks/t/values.csv": "a,reference,ID\n1,1,q1\n"},
     "in 'tasks/t/values.csv': task 't': column 'ID': " + ID_SAID.format("ID")),
    ({**TEMPLATE, "tasks/t/values.csv": "a,Id,reference\n1,q1,1\n"},
     "in 'tasks/t/values.csv': task 't': column 'Id': " + ID_SAID.format("Id")),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1], ID: [q1]}\n  reference: ['1']\n"},
     "in 'tasks.yml': task 't': tasks[0].values.ID: " + ID_SAID.format("ID"))])
def test_a_value_named_as_the_id_column_but_for_case_is_refused(tmp_path, files, said):
    """Before: taken, the sample's id `t:a=1,ID=q1`."""
    assert refused(tmp_path, files) == said


def test_the_id_column_and_a_value_named_alike_are_taken(tmp_path):
    """` id` (a header's space is stripped) is the id column; `ID` beside `id` is a value."""
    assert sample_ids(tmp_path / "a", {**TEMPLATE, "tasks/t/values.csv": "a,reference, id\n1,1,q1\n"}) == ["t:q1"]
    assert sample_ids(tmp_path / "b", {**TEMPLATE, "tasks/t/values.csv": "a,reference,id,ID\n1,1,q1,x\n"}) == ["t:q1"]


CRLF = ("Hydra's override grammar takes '\\r' (character {}), a line end, in no word of a command line: a script saved "
        "with Windows line ends (CRLF) leaves it at the end of each line's last word; remove it (dos2unix the script)")


@pytest.mark.parametrize(("word", "said"), [
    ("runner.model=m\r", "the override 'runner.model=m\\r': " + CRLF.format(15)),
    ("task.only=[t\r]", "the override 'task.only=[t\\r]': " + CRLF.format(13)),
    ("runner.model=m\x85", "the override 'runner.model=m\\x85': Hydra's override grammar takes '\\x85' (character 15), "
                            "a line end, in no word of a command line; remove it")])
def test_a_line_end_outside_quotes_is_said_as_one_to_remove(tmp_path, word, said):
    """Before: `quote it: runner.model='m\r'`; for `[t\r]`, `cannot read it (LexerNoViableAltException:
    task.only=[t)`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, word)) == refusal(said)


LOOKS = ("in '{0}': {1}'{2}' is a name benchrun does not read (it reads {3}, by that exact name), so the file would be "
         "ignored: rename it {3}")
JUDGED = "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n"


@pytest.mark.parametrize(("files", "said"), [
    ({**TEMPLATE, "tasks/t/values.csv": "a,reference\n1,1\n", "tasks/t/info.json": '{"scorer": "contains"}'},
     LOOKS.format("tasks/t/info.json", "task 't': ", "info.json", "info.yml")),
    ({"tasks.yml": JUDGED, "tasks.json": "[]"}, LOOKS.format("tasks.json", "", "tasks.json", "tasks.yml")),
    ({"tasks.yml": JUDGED, "Judges.JSON": "[]"}, LOOKS.format("Judges.JSON", "", "Judges.JSON", "judges.yml"))])
def test_a_file_benchrun_reads_named_as_json_is_refused(tmp_path, files, said):
    """Before: taken, the file read by nothing (info.json's scorer unused: the task scored by exact_match)."""
    assert refused(tmp_path, files) == said


@pytest.mark.parametrize("name", ["values.ndjson", "values.json", "values (1).csv"])
def test_a_task_folders_values_under_another_name_are_refused(tmp_path, name):
    """Before: `in 'tasks/t/values.csv': task 't': file is missing`."""
    assert refused(tmp_path, {**TEMPLATE, f"tasks/t/{name}": "a,reference\n1,1\n"}) == (
        "in 'tasks/t': task 't': no values file: a task folder's values are read from values.csv or values.jsonl, by "
        "that exact name")


@pytest.mark.parametrize("preset", [b"", b"# a runner of mine\n", b"null\n", b"{}\n"])
def test_a_preset_holding_no_keys_is_refused_naming_it(tmp_path, preset):
    """Before: `runner.host: the config holds no value of it to override; add it with a '+'`."""
    assert ended(preset_run(tmp_path, preset)) == refusal(
        f"in '{tmp_path / 'conf' / 'runner' / 'mine.yaml'}': it holds no keys (it is empty, only comments, null or "
        "{}), where a preset holds keys (as `model: llama3.2`)")



def test_a_line_separator_in_a_sample_id_is_refused_or_escaped(tmp_path):
    """Before: taken, the ids `t:q\u20281` and `t:a=x\u2028y` (NEL was refused, and escaped as %C2%85)."""
    given = '{"a": 1, "id": "q\u20281", "reference": "1"}\n'
    assert refused(tmp_path / "a", {**TEMPLATE, "tasks/t/values.jsonl": given}) == (
        "in 'tasks/t/values.jsonl': task 't': column 'id': the id of sample 1 holds '\\u2028' at character 2, a line "
        "separator, which an id cannot hold; write the id without it (an id is printed on one line)")
    made = '{"a": "x\u2029y", "reference": "1"}\n'
    assert sample_ids(tmp_path / "b", {**TEMPLATE, "tasks/t/values.jsonl": made}) == ["t:a=x%E2%80%A9y"]


LISTED = ("where Hydra's defaults list is a list of names and of `group: name` pairs (`- _self_`, `- override "
          "/runner: ollama`)")
PRESET = "type: ollama\nhost: null\nmodel: m\n"


@pytest.mark.parametrize(("defaults", "said"), [
    ("defaults: ollama\n", "line 1, column 11: defaults: it is the value 'ollama', "),
    ("defaults: null\n", "line 1, column 11: defaults: it is null, "),
    ("defaults:\n  - 3\n", "line 2, column 5: defaults: an item is the value '3', "),
    ("defaults:\n  - [a]\n", "line 2, column 5: defaults: an item is a list, ")])
def test_a_presets_defaults_that_list_no_presets_are_refused_naming_the_file(tmp_path, defaults, said):
    """Before: `Hydra could not go on: ValueError: Unsupported type in defaults : int`, no file named."""
    assert ended(preset_run(tmp_path, (defaults + PRESET).encode())) == refusal(
        f"in '{tmp_path / 'conf' / 'runner' / 'mine.yaml'}': {said}{LISTED}")



@pytest.mark.parametrize(("word", "said"), [
    ("runner.options.temperature=0,7", "runner.options.temperature: '0,7' gives two values, 0 and 7; one number is "
     "written without a comma: a decimal with a point (runner.options.temperature=0.7); a sweep of the two takes -m"),
    ("runner.concurrency=1,000", "runner.concurrency: '1,000' gives two values, 1 and 000; one number is written "
     "without a comma: a decimal with a point (runner.concurrency=1.000), thousands with no separator "
     "(runner.concurrency=1000); a sweep of the two takes -m")])
def test_a_decimal_comma_is_said_as_the_number_it_may_mean(tmp_path, word, said):
    """Before: `add -m, or give one value: a list in brackets (runner.options.temperature=[0,7])`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, word)) == refusal(f"in 'config': {said}")



@pytest.mark.parametrize("line", ["sep=;", "sep=,", "SEP=|"])
def test_excels_separator_line_is_said_as_one_to_remove(tmp_path, line):
    """Before: `header: one column named 'sep=;': separated by ';'?`, `header: column 1 has an invalid name 'sep='`."""
    values = f"\n{line}\na,reference\n1,1\n"
    assert refused(tmp_path, {**TEMPLATE, "tasks/t/values.csv": values}) == (
        f"in 'tasks/t/values.csv': task 't': line 2: '{line}' is the line Excel writes before a CSV's header to name "
        "its separator, which benchrun does not read: remove the line (benchrun reads CSV separated by ',')")
