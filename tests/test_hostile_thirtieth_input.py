"""The thirtieth hostile pass of issue 19, the side of what goes in: the items the twenty-ninth pass left, then a fresh
pass. /work/notes/p30/result-input.md has the whole list, what held and what was left.

Fixed:
1. The characters no benchmark's text asks are one table (core.filebytes.UNASKED: NUL, a byte-order mark, C0's
   controls, DEL and C1's), each said by one rule (unasked_said), raw or as an escape, in every file.
2. DEL and C1's control characters (CSI, Windows-1252 text read as Latin-1) refused as C0's are; NEL (U+0085), a line
   break, kept.
3. A list setting given one text (`task.only=t`) said in benchrun's words (core.errors.problem_said).
4. An override setting or deleting a key the config does not hold (`runner.modle=x`, `~runner.modle`) said as
   `+runner.modle=x` is, with the nearest key, not with Hydra's advice to add it (compose.commandline.not_held).
5. A value's name in braces written twice (`{{a}}`), which str.format reads as text, refused (compiler.braces).
6. A benchmark file's own modules (`from helper import k`) found wherever benchrun runs, its folder first on the import
   path (compiler.usercode.import_file); a module found in the working directory, outside the benchmark, refused
   (compiler.ownsource).
7. A custom format's `$ref` to a definition its schema lacks refused as the format is compiled
   (compiler.plan._refs_held), where the run failed, blaming its manifest.
8. A task naming a scorer (a format) that custom_scorer.py (custom_response.py) holds as none (an object, a function
   imported into it, a private one, a class of no pydantic model) said so (compiler.usercode.held_otherwise), not as
   `unknown scorer ... custom_scorer.py: none`.
9. A run's or a sweep's directory that is the benchmark's folder or holds it (`hydra.run.dir=bench`, `=.`) refused
   (compiler.tasksdir.bench_around, checked with tasks_around).
10. The commands benchrun advises (`finish it with: benchrun-audit resume RUN`) quoted as a shell runs them, where a
   run directory holding a space made two arguments of one path (core.advice.audit_command).
11. A server's URL holding a tab or a line break inside it (OLLAMA_HOST of two lines), which reading the URL dropped
   unseen, refused naming the key and the character (core.serverurls._well_formed).
"""

from __future__ import annotations

import os

import pytest

from benchrun import compile_plan
from benchrun.core.errors import EXIT
from tests.helpers.archives import read_jsonl, synthetic_run
from tests.helpers.benchfiles import config, write_bench
from tests.helpers.commands import call_benchrun, make_run, run_benchrun
from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import TASK, ended, refusal

CONTROL = ("a control character, which no text asks (it would be sent as written, and a terminal showing it takes it "
           "as a command); remove it (a tab, a line break or a form feed is kept)")


def _cp1252(char: str, meant: str) -> str:
    return (f"{char!r}, a control character, which no text asks: Windows-1252 text read as Latin-1 holds it for "
            f"{meant!r}; write {meant!r} (or save the file again from its original, as UTF-8)")


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,reference\n\x93hi\x94,1\n"},
     f"in 'tasks/t/values.csv': task 't': line 2, column 1: {_cp1252(chr(0x93), '“')}"),
    ({"tasks/t/template.txt": "say \x9b31m{a}\n", "tasks/t/values.csv": "a,reference\n1,1\n"},
     f"in 'tasks/t/template.txt': task 't': line 1, column 5: {_cp1252(chr(0x9b), '›')}"),
    ({"tasks/t/template.txt": "say {a}\x7f\n", "tasks/t/values.csv": "a,reference\n1,1\n"},
     f"in 'tasks/t/template.txt': task 't': line 1, column 8: '\\x7f', {CONTROL}"),
    ({"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,reference\nx\x81,1\n"},
     f"in 'tasks/t/values.csv': task 't': line 2, column 2: '\\x81', {CONTROL}"),
    ({"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.jsonl\n",
      "d.jsonl": '{"a": "it\\u0092s", "reference": "1"}\n'},
     f"in 'd.jsonl': task 't': line 1: {_cp1252(chr(0x92), '’')}"),
    ({"tasks.yml": "- name: t\n  template: \"say {a} \\x85\\x96\"\n  values: {a: [1]}\n  reference: ['1']\n"},
     f"in 'tasks.yml': line 2, column 13: {_cp1252(chr(0x96), '–')}"),
    ({"tasks.yml": "- name: t\n  template: say \x93{a}\n  values: {a: [1]}\n  reference: ['1']\n"},
     f"in 'tasks.yml': line 2, column 17: {_cp1252(chr(0x93), '“')}")])
def test_del_and_a_c1_control_character_are_refused_as_c0s_are(tmp_path, files, said):
    """Before: taken, and asked as written (`say \\x9b31m1`: 8-bit CSI, which a terminal takes as ESC [), where ESC
    was refused; raw in tasks.yml, PyYAML's `unacceptable character #x0093: special characters are not allowed`."""
    assert ended(dry_run(tmp_path, files)) == refusal(said)


def test_a_next_line_is_a_line_break_and_kept(tmp_path):
    bench = write_bench(tmp_path, {"tasks/t/template.txt": "say\x85{a}\n", "tasks/t/values.csv": "a,reference\n1,1\n"})
    assert [s.prompt for s in compile_plan(config(bench)).manifest.samples] == ["say\x851"]


@pytest.mark.parametrize(("line", "said"), [
    ('{"a": "x\\u0000", "reference": "1"}', "an escape writes a NUL character (\\0, \\x00, \\u0000), which no text "
     "holds, as a file's NUL byte is refused (a server reading text as C does ends the prompt there); leave it out"),
    ('{"a": "x\\uFEFF", "reference": "1"}', "a byte-order mark (U+FEFF), which marks only a file's start: inside its "
     "text it is invisible and would be asked as it is (two files joined?); remove it"),
    ('{"a": "x\\u001B", "reference": "1"}', f"'\\x1b', {CONTROL}")])
def test_a_jsonl_escape_of_each_refused_character_keeps_its_own_words(tmp_path, line, said):
    done = dry_run(tmp_path, {"tasks.yml": "- name: t\n  template: say {a}\n  values_file: d.jsonl\n",
                              "d.jsonl": f"{line}\n"})
    assert ended(done) == refusal(f"in 'd.jsonl': task 't': line 1: {said}")


@pytest.mark.parametrize(("given", "said"), [
    ("task.only=t", "'t' is text, where a list is taken (one item is a list of one: [t])"),
    ("task.only=5", "5 is a number, where a list is taken"),
    ("task.only={a: 1}", "a mapping, where a list is taken")])
def test_a_list_setting_given_another_kind_is_said_in_benchruns_words(tmp_path, given, said):
    """Before: `task.only: Input should be a valid list`, pydantic's words, not saying what was given."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, given)) == refusal(f"in 'config': task.only: {said}")


@pytest.mark.parametrize(("override", "said"), [
    ("runner.modle=x", "runner.modle: unknown key 'modle' (did you mean 'model'?)"),
    ("task.pathh=x", "task.pathh: unknown key 'pathh' (did you mean 'path'?)"),
    ("judge.modle=x", "judge.modle: unknown key 'modle' (did you mean 'model'?)"),
    ("runner.options.temprature=1", "runner.options.temprature: unknown key 'temprature' (did you mean "
                                    "'temperature'?)"),
    ("hydra.run.dirr=x", "hydra.run.dirr: unknown key 'dirr' (did you mean 'dir'?)"),
    ("runner.options.top_k=40", "runner.options.top_k: the config holds no value of it to override; add it with a "
                                "'+': +runner.options.top_k=40")])
def test_an_override_of_a_key_the_config_does_not_hold_is_said_in_benchruns_words(tmp_path, override, said):
    """Before: Hydra's `Could not override 'runner.modle'. To append to your config use +runner.modle=x`, advice to
    add a key no config takes (which `+runner.modle=x` then refused as unknown)."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, override)) == refusal(f"in 'config': {said}")


@pytest.mark.parametrize(("override", "said"), [
    ("~runner.modle", "runner.modle: unknown key 'modle' (did you mean 'model'?)"),
    ("~task.only", "task.only: the config holds no value of it, so the override deletes nothing; leave it out")])
def test_a_deletion_of_a_key_the_config_does_not_hold_is_said_in_benchruns_words(tmp_path, override, said):
    """Before: Hydra's `Could not delete from config. 'task.only' does not exist.`, of a key the config has."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, override)) == refusal(f"in 'config': {said}")

def test_an_unknown_key_the_plus_form_refuses_is_said_in_the_same_words(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASK})
    said = [ended(call_benchrun("task.path=bench", "dry_run=true", given, cwd=tmp_path))
            for given in ("runner.modle=x", "+runner.modle=x")]
    assert said[0] == said[1] == refusal("in 'config': runner.modle: unknown key 'modle' (did you mean 'model'?)")


@pytest.mark.parametrize(("files", "said"), [
    ({"tasks.yml": "- name: t\n  template: 'say {{ a }}'\n  values: {a: [1, 2]}\n  reference: ['1', '2']\n"},
     "in 'tasks.yml': task 't': tasks[0].template: {{ a }} is the text '{ a }', "),
    ({"tasks.yml": "- name: t\n  template: 'say {{a}}, not {b}'\n  values: {a: [1], b: [2]}\n  reference: ['1']\n"},
     "in 'tasks.yml': task 't': tasks[0].template: {{a}} is the text '{a}', "),
    ({"tasks/t/template.txt": "say {{a}}\n", "tasks/t/values.csv": "a,reference\n1,1\n2,2\n"},
     "in 'tasks/t/template.txt': task 't': {{a}} is the text '{a}', ")])
def test_a_values_name_in_braces_written_twice_is_refused(tmp_path, files, said):
    """Before: taken, every sample asking `say { a }` (Jinja's field, which str.format reads as text), the value shown
    nowhere."""
    assert ended(dry_run(tmp_path, files)) == refusal(
        f"{said}asked as it is: in a str.format template a brace written twice is one brace, so no value fills it; a "
        "field is written {a}")


def test_braces_written_twice_around_other_text_or_a_field_are_kept(tmp_path):
    bench = write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'as {{\"x\": {{b}}}}: {{{a}}}'\n"
                                                "  values: {a: [1]}\n  reference: ['1']\n"})
    assert [s.prompt for s in compile_plan(config(bench)).manifest.samples] == ['as {"x": {b}}: {1}']


SCORED = {"tasks.yml": "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n  scorer: s\n",
          "custom_scorer.py": "from helper import k\n\n\ndef s(response, reference):\n    return k\n"}
"""A benchmark whose scorer scores with a module of its own, helper.py."""


def test_a_benchmarks_own_module_is_imported_wherever_benchrun_runs(tmp_path):
    """Before: run from the folder above it (task.path=bench), `in 'custom_scorer.py': cannot import:
    ModuleNotFoundError: No module named 'helper' (line 1)`; run from inside it, taken."""
    write_bench(tmp_path, {**SCORED, "helper.py": "k = 7\n"})
    run_dir = make_run(tmp_path, "task.path=bench", responder=lambda req: '{"answer": "1"}')
    assert [(line["scorer"], line["metrics"]) for line in read_jsonl(run_dir / "scores.jsonl")
            if line["scorer"] == "s"] == [("s", {"s": 7})]


def test_a_module_of_the_working_directory_a_benchmark_imports_is_refused(tmp_path):
    """Before: taken, the scorer scoring with ./helper.py, which the manifest does not name, and which the benchmark
    run from elsewhere could not import."""
    write_bench(tmp_path, SCORED)
    (tmp_path / "helper.py").write_text("k = 99\n")
    done = run_benchrun("task.path=bench", "dry_run=true", "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'custom_scorer.py': imports 'helper' (line 1), which Python found in the working "
        f"directory ({tmp_path.resolve() / 'helper.py'}), outside the benchmark: the run records only the benchmark's "
        "own modules, and run from elsewhere the benchmark could not import it; move it into the benchmark, or "
        "install it\n"))


def test_a_module_of_the_working_directory_put_on_pythonpath_is_taken(tmp_path):
    """Put on the path on purpose (PYTHONPATH, an install), it is found from anywhere: the rule is the working
    directory's own entry, not where the file lies."""
    write_bench(tmp_path, SCORED)
    (tmp_path / "helper.py").write_text("k = 99\n")
    path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(tmp_path)]))
    done = run_benchrun("task.path=bench", "dry_run=true", "runner.host=http://127.0.0.1:9", cwd=tmp_path,
                        env={"PYTHONPATH": path})
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")

def test_a_format_referring_to_a_definition_it_lacks_is_refused_before_the_run(tmp_path):
    """Before: a dry run took it; the run failed at once, exit 4, `in 'manifest.json': a format's JSON schema is not a
    JSON Schema (Pointer '/$defs/Nope' does not exist ...); the compiler writes none such`, a failed run left behind."""
    done = dry_run(tmp_path, {
        "tasks.yml": TASK + "  format: F\n",
        "custom_response.py": "from pydantic import BaseModel\n\n\nclass F(BaseModel):\n    answer: str\n\n"
                              "    @classmethod\n    def model_json_schema(cls, *args, **kwargs):\n        return "
                              "{'type': 'object', 'properties': {'answer': {'$ref': '#/$defs/Nope'}}}\n"})
    assert ended(done) == refusal(
        "in 'custom_response.py': format 'F': its JSON schema refers to '#/$defs/Nope' ($ref), which it does not hold, "
        "and the format check cannot be made without it; define it (in $defs), or let pydantic make the schema from "
        "the class's fields")


@pytest.mark.parametrize(("code", "name", "held"), [
    ("class S:\n    def __call__(self, response, reference):\n        return 1\n\n\ns = S()\n", "s",
     "an object of class 'S', not a function defined with def"),
    ("import functools\n\n\ndef f(response, reference, k):\n    return k\n\n\ns = functools.partial(f, k=1)\n", "s",
     "an object of class 'partial', not a function defined with def"),
    ("from math import sqrt\n", "sqrt", "a function imported from math, not defined in it"),
    ("def _s(response, reference):\n    return 1\n", "_s", "named as private (its leading '_')")])
def test_a_scorer_named_that_the_file_holds_as_no_scorer_is_said_so(tmp_path, code, name, held):
    """Before: `unknown scorer 's' (built-in: contains, exact_match; custom_scorer.py: none)`, as if the file did not
    hold it."""
    done = dry_run(tmp_path, {"tasks.yml": TASK + f"  scorer: {name}\n", "custom_scorer.py": code})
    assert ended(done) == refusal(
        f"in 'tasks.yml': task 't': tasks[0].scorer: scorer '{name}': custom_scorer.py holds it as {held}; a scorer is "
        f"a function the file defines: def {name}(response, reference)")


@pytest.mark.parametrize(("code", "held"), [
    ("class F:\n    answer: str\n", "a class, not a pydantic model (a subclass of BaseModel)"),
    ("from pydantic import BaseModel as F\n", "a class imported from pydantic.main, not defined in it")])
def test_a_format_named_that_the_file_holds_as_no_format_is_said_so(tmp_path, code, held):
    """Before: `unknown format 'F' (built-in: ...; custom_response.py: none)`, as if the file did not hold it."""
    done = dry_run(tmp_path, {"tasks.yml": TASK + "  format: F\n", "custom_response.py": code})
    assert ended(done) == refusal(
        f"in 'tasks.yml': task 't': tasks[0].format: format 'F': custom_response.py holds it as {held}; a format is a "
        "class the file defines: class F(BaseModel)")


BESIDE = "a run's directory holds the run's files alone, and removing the run would remove the benchmark with it"


@pytest.mark.parametrize(("given", "where"), [
    (("hydra.run.dir=bench",), "hydra.run.dir=bench: the benchmark's own folder"),
    (("hydra.run.dir=.",), "hydra.run.dir=.: a folder holding the benchmark ({bench})"),
    (("-m", "hydra.sweep.dir=bench", "runner.model=a,b"), "hydra.sweep.dir=bench: the benchmark's own folder")])
def test_a_run_directory_that_is_the_benchmarks_folder_or_holds_it_is_refused(tmp_path, given, where):
    """Before: taken: the run's files (run.json, manifest.json, run.lock, .hydra/) written among tasks.yml, the
    benchmark's folder a run directory (a sweep's jobs' folders beside its tasks)."""
    bench = write_bench(tmp_path, {"tasks.yml": TASK})
    done = call_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", *given, cwd=tmp_path)
    key = given[-2] if given[0] == "-m" else given[0]
    assert ended(done) == refusal(f"{where.format(bench=bench)}: {BESIDE}; give another {key.split('=')[0]}")
    assert sorted(path.name for path in bench.iterdir()) == ["tasks.yml"]


def test_the_resume_advice_for_a_run_directory_holding_a_space_is_one_word(tmp_path):
    """Before: `finish it with: benchrun-audit resume /tmp/.../my runs/r1`, which a shell runs as `resume` of two
    paths, neither of them the run."""
    run_dir = synthetic_run(tmp_path / "my runs" / "r1", [1, 0], finish=False)
    done = call_benchrun("verify", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert [line.split("; ")[-1] for line in done.stdout.splitlines() if line.startswith("FAIL")] == [
        f"finish it with: benchrun-audit resume '{run_dir}' (record lines checked against records.sha256 only)"]


@pytest.mark.parametrize(("host", "said"), [("http://127.0.0.1:9/a\nb", "'\\n' at character 21"),
                                           ("http://127.0.0.1:9\t/v", "'\\t' at character 19")])
def test_a_server_url_holding_a_line_break_inside_it_is_refused(tmp_path, host, said):
    """Before: taken (urlsplit drops a tab or a line break without a word: the requests went to `/ab`), and the
    server's refusal said `Ollama at http://127.0.0.1:9/a b`, the line break shown as a space."""
    write_bench(tmp_path, {"tasks.yml": TASK})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path, env={"OLLAMA_HOST": host})
    assert ended(done) == refusal(
        f"in 'config': runner.host (from $OLLAMA_HOST): {said}, a control character, which a server's URL cannot "
        "hold: reading the URL drops a tab or a line break unseen, and the requests would go to another path (a "
        "variable set from a file of two lines?); give the URL alone")


def test_a_run_directory_around_the_working_directory_of_a_shipped_demo_is_taken(tmp_path):
    """`task=listbench` names no folder of the working directory (demo:listbench): nothing there is the benchmark."""
    done = call_benchrun("task=listbench", "dry_run=true", "hydra.run.dir=.", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
