"""The twenty-seventh hostile pass of issue 19, the side of what goes in: the items the twenty-sixth pass left, then a
fresh pass. /work/notes/p27/result-input.md has the whole list, what held and what was left.

Fixed:
1. A scorer gets a number as JSON carries it (100000.0 for a prompt's 1e5), in the run and in a rescore: documented.
2. A benchmark's Python files parsed once on import, not twice (compiler.ownsource.refuse_unseen_imports).
3. A NUL written as an escape (YAML's "\\0", JSON's "\\u0000") refused as a NUL byte is (core.filebytes.NUL_ESCAPED).
4. A runner file's `${oc.env:X}` refused, never asked as text (compose.runneryml.refuse_interpolations).
5. description.txt beside info.yml's description refused (compiler.sources._folder_description).
6. task.only=[b,a] and [a,b] one manifest id (compose.fresh.in_one_order).
7. resume's and retry's advice on an Ollama model that cannot chat or think, and on an OpenAI-compatible server's
   structured-output probe, names only the server (OllamaRunner._mend, OpenAIRunner._past_probe).
8. compose/config.py split: the command line's checks are compose/commandline.py.
9. A name refused as unknown that looks like a known one (Cyrillic а) is said with its characters escaped
   (core.text.name_said, core.keys.unknown_key).
10. A response format that holds itself is read through its top `$ref` (compiler.answerable.answered).
11. A JSONL reference `[]` or `[["2"]]` said as what it is (compiler.data._check_value).
12. A values file of references alone: one line, not an IndexError traceback (compiler.files.check_names).
13. A YAML or JSON bool asked as written, `true`, not Python's `True` (core.written.shown).
14. A tasks.yml's `1e5` is the number, as a CSV's is, not YAML 1.1's text (core.yamlfile.EXPONENT).
15. An archived config.yaml holding a NUL escape is read as written (core.yamlfile._FastArchived, _Archived).
16. A CSV joined to another saved with a byte-order mark refused (compiler.files.read_csv; since the twenty-eighth
    pass, core.filebytes.MARK_INSIDE).
"""

from __future__ import annotations

import json

import pytest
import yaml

from benchrun.compiler import ownsource
from benchrun.compiler.plan import compiled
from benchrun.compiler.usercode import import_file
from benchrun.compose.config import plain_config
from benchrun.core.errors import EXIT, ArchiveError
from benchrun.core.yamlfile import parse_yaml
from benchrun.execute.runners.openai import PROBE_PROMPT
from benchrun.testing.chat import Reply
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import config, folder_task, task, tasks_yml, write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of

HOST = "runner.host=http://127.0.0.1:9"


def test_a_benchmark_file_and_its_own_modules_are_parsed_once_each(tmp_path, monkeypatch):
    """Before: refuse_unrecorded and refuse_shadowed each parsed every file again (custom_scorer.py and helpers.py
    twice each)."""
    bench = write_bench(tmp_path, {"helpers.py": "X = 1\n", "custom_scorer.py": (
        "import os\nimport sys\n\nsys.path.insert(0, os.path.dirname(__file__))\nfrom helpers import X\n\n\n"
        "def s(response, reference):\n    return X\n")})
    parsed: list[str] = []
    real = ownsource._parsed
    monkeypatch.setattr(ownsource, "_parsed", lambda path: parsed.append(path.name) or real(path))
    import_file(bench / "custom_scorer.py", "custom_scorer.py", probe=False)
    assert sorted(parsed) == ["custom_scorer.py", "helpers.py"]


def one_refused(req) -> Reply | str:
    """Sample `a=1` refused (400, not retried), the other answered."""
    return Reply(status=400, error="no") if req.prompt == "say 1" else "2"


@pytest.mark.parametrize(("think", "can", "said"), [
    ([], ("embedding",), "cannot chat (it can: embedding); give --host a server where 'llama3.2' chats"),
    (["runner.think=true"], ("completion",), "does not think (it can: completion), and runner.think=true asks it to; "
                                              "give --host a server where 'llama3.2' thinks")])
def test_a_retrys_advice_on_a_model_that_cannot_names_only_the_server(tmp_path, think, can, said):
    """Before: `…; pick a chat model for runner.model` and `unset runner.think, or pick a thinking model`: a retry
    asks the run's model as the run asked it, and takes only its server."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task())})
    with FakeOllama(models=["llama3.2"], responder=one_refused, capabilities=("completion", "thinking")) as server, \
            FakeOllama(models=["llama3.2"], capabilities=can) as elsewhere:
        done = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", *think)
        retried = call_benchrun("retry", str(run_dir_of(done.stdout)), "--host", elsewhere.url, cwd=tmp_path,
                                module="benchrun.audit")
    assert (done.returncode, retried.returncode, retried.stderr) == (EXIT["ok"], EXIT["runner"], (
        f"benchrun: error: Ollama at {elsewhere.url} says model 'llama3.2:latest' {said}\n"))


@pytest.mark.parametrize(("files", "where"), [
    ({"tasks.yml": '- name: t\n  template: say {a}\n  values: {a: ["x\\0y", "z"]}\n  reference: ["1", "2"]\n'},
     "'tasks.yml': line 3, column 16"),
    ({"tasks.yml": '- name: t\n  template: "say {a}\\x00"\n  values: {a: [1, 2]}\n  reference: ["1", "2"]\n'},
     "'tasks.yml': line 2, column 13"),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.jsonl\n",
      "d.jsonl": '{"a": "1", "reference": "1"}\n{"a": "x\\u0000y", "reference": "2"}\n'},
     "'d.jsonl': task 't': line 2"),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.jsonl\n",
      "d.jsonl": '{"a": "1", "reference": "1\\u0000"}\n'}, "'d.jsonl': task 't': line 1")])
def test_a_nul_written_as_an_escape_is_refused_as_a_nul_byte_is(tmp_path, files, where):
    """Before: a raw NUL byte in a file was refused, YAML's "\\0" and "\\x00" and JSON's "\\u0000" reached the
    prompt (and the manifest)."""
    write_bench(tmp_path, files)
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in {where}: an escape writes a NUL character (\\0, \\x00, \\u0000), which no text holds, as "
        "a file's NUL byte is refused (a server reading text as C does ends the prompt there); leave it out\n"))


@pytest.mark.parametrize(("runner", "said"), [
    ("runner_type: ollama\nmodel: ${oc.env:MYMODEL}\nhost: http://127.0.0.1:9\n", "model: '${oc.env:MYMODEL}'"),
    ("model: m\noptions:\n  stop: [a, 'x${y}']\n", "options.stop[1]: 'x${y}'")])
def test_an_interpolation_in_a_runner_file_is_refused_not_asked_as_text(tmp_path, monkeypatch, runner, said):
    """Before: `model: ${oc.env:MYMODEL}` was the model asked for, `${oc.env:MYMODEL}` (its heading said so); a stop
    sequence `x${y}` was sent as written."""
    monkeypatch.setenv("MYMODEL", "gemma3")
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task())})
    (tmp_path / "runner.yml").write_text(runner)
    done = call_benchrun("task.path=bench", "runner_file=runner.yml", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'runner.yml': {said} holds '${{', which a runner file's values are not resolved for (it "
        "would be asked as the text written); write the value itself\n"))


def test_a_description_given_by_both_description_txt_and_info_yml_is_refused(tmp_path):
    """Before: description.txt's text was the task's description, info.yml's `description:` left unsaid."""
    write_bench(tmp_path, folder_task("t", "say {a}", "a,reference\n1,1\n", info_yml="description: from info\n",
                                      description_txt="from the file\n"))
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks/t': task 't': description.txt and info.yml's description are both here: keep one\n"))


def test_a_description_txt_alone_is_the_description(tmp_path):
    write_bench(tmp_path, folder_task("t", "say {a}", "a,reference\n1,1\n", description_txt="from the file\n"))
    plan = compiled(plain_config(config(tmp_path / "bench")), tmp_path)
    assert [task.description for task in plan.manifest.tasks] == ["from the file"]


def test_the_same_tasks_chosen_in_another_order_are_the_same_manifest(tmp_path):
    """Before: `task.only=[b,a]` and `task.only=[a,b]` asked the same questions in the same order (the benchmark's)
    under two manifest ids."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task("b"), task("a"), task("c"))})
    ids = [call_benchrun("task.path=bench", HOST, "dry_run=true", f"task.only=[{only}]", cwd=tmp_path).stdout
           .rpartition("manifest id: ")[2] for only in ("b,a", "a,b")]
    with FakeOllama(models=["llama3.2"], responder=lambda req: "1") as server:
        done = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "task.only=[b,a]")
    run_dir = run_dir_of(done.stdout)
    kept = yaml.safe_load((run_dir / "config.yaml").read_text())["task"]["only"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert (ids[0] == ids[1], kept, [t["name"] for t in manifest["tasks"]]) == (True, ["a", "b"], ["b", "a"])


SAYS = "def s(response, values):\n    return int(repr([values[k] for k in 'abcn']) == '[100000.0, 2.5, 5, 7.0]')\n"
"""A scorer saying whether it got a values file's `1e5,2.50,+5,7.0` as the numbers JSON carries."""


def test_a_scorer_gets_a_number_as_the_number_it_is_in_the_run_and_in_a_rescore(tmp_path):
    """The rule (docs/format.md): a prompt prints `1e5` as written, a scorer gets the number as JSON carries it,
    100000.0 (a float), 2.5, 5, 7.0, the same in the run and in a rescore, which reads the values from the
    manifest."""
    write_bench(tmp_path, {**folder_task("t", "say {a}", "a,b,c,n\n1e5,2.50,+5,7.0\n",
                                         info_yml="scorer: s\nreference: calculated\n"), "custom_scorer.py": SAYS})
    with FakeOllama(models=["llama3.2"], responder=lambda req: req.prompt) as server:
        done = bench_run(tmp_path, server.url, "task.path=bench", "cache=false")
    run_dir = run_dir_of(done.stdout)
    rescored = audit(tmp_path, "rescore", str(run_dir))
    scored = [[json.loads(line)["metrics"] for line in (where / "scores.jsonl").read_text().splitlines()][1]
              for where in (run_dir, run_dir / "rescores/001")]
    assert (done.returncode, rescored.returncode, scored) == (EXIT["ok"], EXIT["ok"], [{"s": 1}, {"s": 1}])


LOOKALIKE = "- name: task\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n"
"""A task whose names are ASCII, beside which a name with a Cyrillic `а` (U+0430) is refused."""


@pytest.mark.parametrize(("tasks", "given", "said"), [
    (LOOKALIKE, ["task.only=['tаsk']"], "task.only: no task named 'tаsk' (t\\u0430sk) (tasks: task)"),
    (LOOKALIKE.replace("{a}", "{а}"), [], "in 'tasks.yml': task 'task': tasks[0].template: field '{а}' ({\\u0430}) "
                                         "is not in values (values: a)"),
    (LOOKALIKE + "  scorer: exаct_match\n", [], "in 'tasks.yml': task 'task': tasks[0].scorer: unknown scorer "
     "'exаct_match' (ex\\u0430ct_match) (built-in: contains, exact_match; custom_scorer.py: none)"),
    (LOOKALIKE.replace("template:", "templаte:"), [], "in 'tasks.yml': task 'task': tasks[0].templаte: unknown key "
                                                     "'templаte' (templ\\u0430te) (did you mean 'template'?)")])
def test_an_unknown_name_that_looks_like_a_known_one_is_said_so_the_difference_shows(tmp_path, tasks, given, said):
    """Before: `no task named 'tаsk' (tasks: task)`, `field '{а}' is not in values (values: a)`, `unknown key
    'templаte' (did you mean 'template'?)`: the name refused and the name listed printed the same."""
    write_bench(tmp_path, {"tasks.yml": tasks})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", *given, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: {said}\n")


NODE = ("from __future__ import annotations\n\nfrom pydantic import BaseModel\n\n\nclass Node(BaseModel):\n"
        "    answer: str\n    child: Node | None = None\n")
"""A response format that holds itself: pydantic's schema of it is a `$ref` into its `$defs`."""


def test_a_format_that_holds_itself_is_graded_by_its_answer(tmp_path):
    """Before: `format 'Node' has no 'answer' field, which exact_match compares with the reference: ...` (exit 2),
    its fields read at the schema's top, where pydantic puts only a `$ref`."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(format="Node")), "custom_response.py": NODE})
    answer = '{"answer": "1", "child": {"answer": "x", "child": null}}'
    with FakeOllama(models=["llama3.2"], responder=lambda req: answer) as server:
        done = bench_run(tmp_path, server.url, "task.path=bench", "cache=false")
    scores = [json.loads(line) for line in (run_dir_of(done.stdout) / "scores.jsonl").read_text().splitlines()]
    assert (done.returncode, done.stderr, [(s["id"], s["metrics"]) for s in scores]) == (EXIT["ok"], "", [
        ("t:a=1", {"format_valid": 1}), ("t:a=1", {"exact_match": 1}),
        ("t:a=2", {"format_valid": 1}), ("t:a=2", {"exact_match": 0})])


@pytest.mark.parametrize(("reference", "said"), [
    ("[]", "'reference' is an empty list: a list of acceptable answers holds one at least"),
    ('["1", ["2"]]', "'reference' holds a list: a value must be a number, a string or a bool (a reference may be a "
                     "list of them)")])
def test_a_jsonl_reference_list_that_is_empty_or_nested_is_said_as_what_it_is(tmp_path, reference, said):
    """Before: both `'reference' is a list: a value must be ... (a reference may be a list of them)`."""
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.jsonl\n",
                           "d.jsonl": f'{{"a": 1, "reference": {reference}}}\n'})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'd.jsonl': task 't': line 1: {said}\n"))


def test_a_retrys_advice_on_a_structured_output_probe_names_no_key_it_cannot_change(tmp_path):
    """Before: `...; runner.structured=json_schema, json_object or none skips it`: a retry asks with the run's
    runner.structured (auto), which it cannot change."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task())})
    busy = lambda req: Reply(status=503, error="busy") if req.prompt == PROBE_PROMPT else "2"  # noqa: E731
    with FakeOpenAI(models=["m"], responder=one_refused) as server, FakeOpenAI(models=["m"], responder=busy) as other:
        done = call_benchrun("task.path=bench", "runner=openai", f"runner.base_url={server.url}", "runner.model=m",
                             "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        retried = call_benchrun("retry", str(run_dir_of(done.stdout)), "--host", other.url, "--set",
                                "runner.retries=0", cwd=tmp_path, module="benchrun.audit")
    assert (done.returncode, retried.returncode, retried.stderr) == (EXIT["ok"], EXIT["runner"], (
        f"benchrun: error: the server at {other.url} did not answer the structured-output probe (HTTP 503: busy); "
        "give --host a server that answers it\n"))


@pytest.mark.parametrize(("files", "where"), [
    ({"tasks.yml": "- name: t\n  template: say hi\n  values_file: d.jsonl\n",
      "d.jsonl": '{"reference": "1"}\n{"reference": "2"}\n'}, "'d.jsonl': task 't'"),
    (folder_task("t", "say hi", "reference\n1\n2\n"), "'tasks/t/values.csv': task 't'")])
def test_a_values_file_of_references_alone_is_refused_in_one_line(tmp_path, files, where):
    """Before: `IndexError: list index out of range` and its traceback (grid.sample_count of no value lists)."""
    write_bench(tmp_path, files)
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in {where}: no values: the file gives a reference alone; give each sample its values (the "
        "template's fields) or an id\n"))


def test_a_bool_is_asked_as_its_file_writes_it(tmp_path):
    """Before: a YAML or JSON `true` was asked as Python prints it, `is it True?`, under the id `t:a=True` (a CSV's
    `true`, text, as `true`)."""
    files = {"tasks.yml": "- name: t\n  template: is it {a}? {a!r} {a:>2}\n  values: {a: [true]}\n"
                          "  reference: ['1']\n  fewshot:\n  - {values: {a: false}, assistant: '1'}\n"}
    plan = compiled(plain_config(config(write_bench(tmp_path, files))), tmp_path)
    asked = [(query.sample.id, query.sample.prompt) for query in plan.manifest.queries()]
    assert (asked, plan.manifest.tasks[0].fewshot[0].user) == (
        [("t:a=true", "is it true? true  1")], "is it false? false  0")


def test_a_yaml_number_with_an_exponent_is_a_number_as_in_a_csv(tmp_path):
    """Before: YAML 1.1 read `1e5` and `2.5E-3` (no point, or no signed exponent) as text: a scorer's
    `values['a'] * 2` was '1e51e5', where a CSV's or a JSONL's 1e5 is the number; quoted, it stays text."""
    files = {"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1e5, 2.5E-3, '1e6']}\n"
                          "  reference: ['1', '2', '3']\n"}
    plan = compiled(plain_config(config(write_bench(tmp_path, files))), tmp_path)
    asked = [(q.sample.prompt, q.sample.values["a"], isinstance(q.sample.values["a"], float))
             for q in plan.manifest.queries()]
    assert asked == [("say 1e5", 100000.0, True), ("say 2.5E-3", 0.0025, True), ("say 1e6", "1e6", False)]


def test_an_archived_config_holding_a_nul_its_runner_file_gave_is_read_as_written():
    """A run archived before NUL escapes were refused, whose runner file gave `stop: ["\\0"]`, keeps it in its
    config.yaml: read as the run wrote it (with the refusal in every loader, its config became unreadable)."""
    written = 'runner:\n  options:\n    stop: ["\\0"]\n'
    assert parse_yaml(written, "config.yaml", ArchiveError) == {"runner": {"options": {"stop": ["\0"]}}}


def test_a_csv_joined_to_another_with_its_byte_order_mark_is_refused(tmp_path):
    """Before: `cat a.csv b.csv` of two files saved with a mark asked the second's header as a sample, `say \\ufeffa`
    with the reference 'reference'; without the mark it was refused. The mark inside a file is refused where it is
    (the twenty-eighth pass)."""
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.csv\n",
                           "d.csv": "\ufeffa,reference\n1,1\n\ufeffa,reference\n2,2\n"})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'd.csv': task 't': line 3, column 1: a byte-order mark (U+FEFF), which marks only a "
        "file's start: inside its text it is invisible and would be asked as it is (two files joined?); remove it\n"))
