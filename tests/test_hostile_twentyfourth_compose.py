"""The twenty-fourth hostile pass of issue 19, the side of what goes in (compose): the items the last pass left, then
what this pass found. /work/notes/p24/result-compose.md has the whole list, what held and what was left.

Fixed:
1. A float where a count is meant (`limit: 1.0`, `repeats=2.0`) was taken as the count (compiler.schemas,
   core.settingsbase).
2. A count of one said in the plural, `has 1 examples` (core.text.counted).
3. MYSQL_PWD, SSHPASS, GITHUB_PAT were no credentials' names (core.secrets.CREDENTIAL_NAMES).
4. A CSV quote left open swallowed the rows after it unsaid (compiler.files._rows, strict).
5. exact_match of a format without an `answer` field scored every answer 0 (compiler.answerable).
6. A list of names amiss was `not valid here`, the list being valid (compiler.schemas._branch_error).
7. A key pasted as a command-line word, an override's key or a flag's value was printed by the error refusing it
   (core.secrets.word_holding_key).
8. A key as a runner file's or preset's key name was printed by the unknown-key error (core.secrets.found).
9. A sample id made of values held control characters (compiler.grid._ESCAPED).
"""

from __future__ import annotations

import pytest

from benchrun import compile_plan
from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import config
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


ONE_EACH = [
    ({"tasks.yml": '- name: t\n  template: "say {a}"\n  values: {a: [1, 2]}\n  fewshot: {file: s.jsonl, n: 2}\n',
      "s.jsonl": '{"user": "hi", "assistant": "yo"}\n'},
     "in 'tasks.yml': task 't': tasks[0].fewshot.n: n is 2 but 's.jsonl' has 1 example"),
    ({"tasks.yml": '- name: t\n  template: "say {a}"\n  values: {a: [1, 2]}\n  reference: ["1"]\n'},
     "in 'tasks.yml': task 't': tasks[0].reference: 1 reference for 2 samples"),
    ({"tasks/t/template.txt": "say {a}", "tasks/t/values.csv": "a,b\n1,2\n3\n"},
     "in 'tasks/t/values.csv': task 't': line 3: malformed row: 1 cell where the header has 2")]


@pytest.mark.parametrize(("files", "said"), ONE_EACH)
def test_a_count_of_one_is_said_in_the_singular(tmp_path, files, said):
    """Before: `has 1 examples`, `1 references for 2 samples`, `1 cells where the header has 2`."""
    _bench(tmp_path, files)
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: {said}\n")


def test_a_dry_run_of_one_task_says_it_in_the_singular(tmp_path):
    """Before: `1 tasks, 1 samples -> 1 model calls`."""
    _bench(tmp_path, {"tasks.yml": '- name: t\n  template: "say {a}"\n  values: {a: [1]}\n  reference: ["1"]\n'})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert "1 task, 1 sample -> 1 model call (dry run: no model was called)\n" in done.stdout


def test_a_record_limit_of_one_is_said_in_the_singular(tmp_path):
    _bench(tmp_path, {"tasks.yml": '- name: t\n  template: "say {a}"\n  values_file: v.jsonl\n',
                      "v.jsonl": '{"a": 1, "reference": 1}\n{"a": 2, "reference": 2}\n'})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", "task.max_samples=1", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'v.jsonl': task 't': line 2: more than 1 record (task.max_samples)\n"))


REFUSED = ("secrets are never taken from the config, where they would be archived ({}); put an API key in an "
           "environment variable and name it with runner.api_key_env, and give URLs without user names or passwords")
PASSWORD = "Xk3sPq9AbCdEfGhIjKlMn"


@pytest.mark.parametrize("name", ["MYSQL_PWD", "SSHPASS", "GITHUB_PAT"])
def test_a_credential_named_by_a_tools_well_known_variable_is_refused(tmp_path, monkeypatch, name):
    """Before: `runner.model=${oc.env:MYSQL_PWD}` asked (and named a run directory by) the password."""
    monkeypatch.setenv(name, PASSWORD)
    done = call_benchrun("task=listbench", HOST, "dry_run=true", f"runner.model=${{oc.env:{name}}}", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': runner.model: " + REFUSED.format(
            f"${{oc.env:{name}}}, which reads the credential in ${name}") + "\n"))


def test_a_credential_handed_to_the_job_as_mysqls_variable_is_refused(tmp_path):
    """Before: taken, and kept in the run's .hydra/hydra.yaml (its overrides and its env_set)."""
    done = call_benchrun("task=listbench", HOST, "dry_run=true", f"+hydra.job.env_set.mysql_pwd={PASSWORD}",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': hydra.job.env_set.mysql_pwd: " + REFUSED.format("a credential's name") + "\n"))


def test_the_working_directorys_variable_is_no_credential(tmp_path, monkeypatch):
    monkeypatch.setenv("OLDPWD", str(tmp_path / "a-long-folder-name-of-thirty-chars"))
    done = call_benchrun("task=listbench", HOST, "dry_run=true", "runner.model=${oc.env:OLDPWD}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


UNCLOSED = ("a quote opened in the row on this line is never closed, so every line after it would be one cell; close it "
            "(a quote inside a quoted cell is written twice: \"\")")


@pytest.mark.parametrize(("csv_text", "said"), [
    ('a,reference\n1,"one\n2,two\n3,three\n', f"line 2: {UNCLOSED}"),
    ('a,reference\n1,1\n"x"y,2\n', "line 3: text after a quoted cell's closing quote; quote the whole cell (a quote "
                                   "inside it written twice: \"\")"),
    ('a,reference\n"1\n2\n3"\n4,4\n', "line 2: malformed row: 1 cell where the header has 2")])
def test_a_csv_row_quoted_amiss_is_refused_naming_the_line_it_begins_on(tmp_path, csv_text, said):
    """Before: the first was one sample, `reference: 'one\\n2,two\\n3,three'`, its two other rows lost unsaid; the
    second asked `say xy`; the third named line 4, where the row ends."""
    _bench(tmp_path, {"tasks/t/template.txt": "say {a}", "tasks/t/values.csv": csv_text})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'tasks/t/values.csv': task 't': {said}\n")


NAME_SOURCE = "from pydantic import BaseModel\n\n\nclass NameSource(BaseModel):\n    name: str\n    direction: str\n"
WHOLE = ("format 'NameSource' has no 'answer' field, which exact_match compares with the reference: every answer, a JSON "
         "object, would be compared whole and score 0; give the format an 'answer' field, or grade it with contains or "
         "a custom scorer")


@pytest.mark.parametrize("scorer", ["", "  scorer: [contains, exact_match]\n"])
def test_exact_match_of_a_format_without_an_answer_field_is_refused(tmp_path, scorer):
    """Before: compiled, and every answer ({"name": "at", "direction": "up"}) compared whole with "at": all 0."""
    _bench(tmp_path, {"custom_response.py": NAME_SOURCE, "tasks.yml": (
        '- name: t\n  template: "name {a}"\n  values: {a: ["@", "$"]}\n  reference: [at, dollar]\n'
        f"  format: NameSource\n{scorer}")})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'tasks.yml': task 't': tasks[0].scorer: {WHOLE}\n")


def test_contains_of_a_format_without_an_answer_field_is_taken(tmp_path):
    _bench(tmp_path, {"custom_response.py": NAME_SOURCE, "tasks.yml": (
        '- name: t\n  template: "name {a}"\n  values: {a: ["@", "$"]}\n  reference: [at, dollar]\n'
        "  format: NameSource\n  scorer: contains\n")})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


@pytest.mark.parametrize(("keys", "said"), [
    ("scorer: [exact_match, exact_match]", 'tasks[0].scorer: "exact_match" is listed twice; list each once'),
    ("judge: [j, j]", 'tasks[0].judge: "j" is listed twice; list each once'),
    ("scorer: [exact_match, 3]", "tasks[0].scorer[1]: 3 is not of type 'string'")])
def test_a_list_of_names_amiss_is_said_for_what_it_is(tmp_path, keys, said):
    """Before: `["exact_match", "exact_match"] is not valid here (A scorer name (built-in or a function in
    custom_scorer.py), or a list of them.)`, which a list of names is."""
    _bench(tmp_path, {"tasks.yml": f'- name: t\n  template: "say {{a}}"\n  values: {{a: [1]}}\n  reference: ["1"]\n'
                                   f"  {keys}\n"})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'tasks.yml': task 't': {said}\n")


HF_KEY = "hf_" + "AbCdEfGhIjKlMnOpQrStUv0123"
ON_ITS_OWN = REFUSED.format("a key by its prefix, hf_..., as a word of its own, an override's key or a flag's value")


@pytest.mark.parametrize("word", [f"+runner.options.{HF_KEY}=1", f"+{HF_KEY}=1", f"~{HF_KEY}", HF_KEY,
                                  f"--config-name={HF_KEY}"])
def test_a_key_pasted_where_no_value_is_read_is_refused_without_showing_it(tmp_path, word):
    """Before: `unknown option 'hf_...'`, `Could not delete from config. 'hf_...' does not exist.`, `the override
    'hf_...': Hydra's override grammar cannot read it`, `--config-name=hf_...: benchrun's config is its own`: the key
    printed whole, into a terminal's scrollback or a CI job's log."""
    done = call_benchrun("task=listbench", HOST, "dry_run=true", word, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'config': the command line: {ON_ITS_OWN}\n")


AS_A_NAME = REFUSED.format("a key by its prefix, hf_..., as a key's name")


def test_a_key_as_a_runner_files_key_is_refused_without_showing_it(tmp_path):
    """Before: `in 'r.yml': options.hf_...: unknown option 'hf_...' (allowed: ...)`, the key printed twice."""
    (tmp_path / "r.yml").write_text(f"runner_type: ollama\nmodel: m\noptions: {{{HF_KEY}: 1}}\n", encoding="utf-8")
    done = call_benchrun("task=listbench", HOST, "dry_run=true", "runner_file=r.yml", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'r.yml': options: {AS_A_NAME}\n")


def test_a_key_as_a_presets_key_is_refused_without_showing_it(tmp_path):
    """Before: `in 'config': runner.hf_...: unknown key 'hf_...' (allowed: ...)`."""
    (tmp_path / "mine" / "runner").mkdir(parents=True)
    (tmp_path / "mine" / "runner" / "gpu.yaml").write_text(f"defaults: [ollama, _self_]\n{HF_KEY}: 1\n")
    done = call_benchrun("task=listbench", HOST, "dry_run=true", "--config-dir", "mine", "runner=gpu", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'config': runner: {AS_A_NAME}\n")


def test_a_sample_id_made_of_values_holds_no_control_character(tmp_path):
    """Before: `t:a=x\\ny`, `t:a=b\\x1b[31m`: ids printed over two lines, or colouring a terminal, where an id column's
    id holding them is refused (`an id is printed on one line`). An ESC in a value is refused since the twenty-ninth
    pass (filebytes.UNASKED); a form feed, which it keeps, stands for it."""
    _bench(tmp_path, {"tasks.yml": '- name: t\n  template: "say {a}"\n  values: {a: ["x\\ny", "b\\f[31m", "c\\x85"]}\n'
                                   '  reference: ["1", "2", "3"]\n'})
    manifest = compile_plan(config(tmp_path / "bench")).manifest
    assert [(s.id, s.prompt) for s in manifest.samples] == [
        ("t:a=x%0Ay", "say x\ny"), ("t:a=b%0C[31m", "say b\x0c[31m"), ("t:a=c%C2%85", "say c\x85")]
