"""The catalogue of hostile input: each row an input and the exact one-line message it gets, every one refused
with the usage exit code.

Benchmark files are compiled through `benchrun.app.run` (as `python -m benchrun dry_run=true` would); command-line
overrides, which Hydra parses first, go through `python -m benchrun`'s entry point in this process, and those that
carry a credential through a real `python -m benchrun` (refused before Hydra starts). `<tmp>` stands for the test's
directory, `<home>` for the home directory."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from benchrun.app import run
from benchrun.core.errors import EXIT, BenchrunError
from tests.helpers.benchfiles import config, folder_task, task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

T = "in 'tasks.yml': task 't': tasks[0]"
SECRET = ("secrets are never taken from the config, where they would be archived ({}); put an API key in an "
          "environment variable and name it with runner.api_key_env, and give URLs without user names or passwords")
NAMED, IN_URL = SECRET.format("a credential's name"), SECRET.format("a URL with a user name or password in it")
LOCAL_OPTIONS = ("temperature, seed, num_predict, top_p, top_k, min_p, repeat_penalty, presence_penalty, "
                 "frequency_penalty, stop, num_ctx, num_thread")


def one(**keys):
    return {"tasks.yml": tasks_yml(task(**keys))}


FILES = {  # name: (benchmark files, message)
    "index": (one(template="say {a[0]}"),
              f"{T}.template: field {{a[0]}}: only a value's name can stand in a field (no indexing or attributes)"),
    "attribute": (one(template="say {a.nope}"),
                  f"{T}.template: field {{a.nope}}: only a value's name can stand in a field (no indexing or "
                  "attributes)"),
    "dunder": (one(template="{a.__class__.__mro__}"),
               f"{T}.template: field {{a.__class__.__mro__}}: only a value's name can stand in a field (no indexing "
               "or attributes)"),
    "d on a string": (one(template="say {a:d}", values={"a": ["x", "y"]}),
                      f"{T}.template: cannot render sample 't:a=x': Unknown format code 'd' for object of type 'str'"),
    "conversion": (one(template="say {a!z}"),
                   f"{T}.template: field {{a!z}}: conversion !z is not allowed (only !r and !s)"),
    "conversion a": (one(template="say {a!a}"),
                     f"{T}.template: field {{a!a}}: conversion !a is not allowed (only !r and !s)"),
    "spec field unknown": (one(template="say {a:{zz}}"),
                           f"{T}.template: field {{a:{{zz}}}}: a format spec's own field must be a value's name, as "
                           "in {a:{width}}"),
    "spec field conversion": (one(template="{a:{b!r}}", values={"a": [1, 2], "b": [3, 4]}),
                              f"{T}.template: field {{a:{{b!r}}}}: a format spec's own field must be a value's name, "
                              "as in {a:{width}}"),
    "huge width": (one(template="say {a:>50000000}"),
                   f"{T}.template: field {{a:>50000000}} asks for 50,000,000 characters, more than "
                   "task.max_prompt_chars (100,000)"),
    "huge width from a value": (one(template="{a:{b}}", values={"a": [1, 2], "b": [">2000000000", ">3"]}),
                                f"{T}.template: field {{a:{{b}}}} for sample 't:a=1,b=>2000000000' asks for "
                                "2,000,000,000 characters, more than task.max_prompt_chars (100,000)"),
    "huge precision": (one(template="say {a:.200000f}"),
                       f"{T}.template: field {{a:.200000f}} asks for 200,000 characters, more than "
                       "task.max_prompt_chars (100,000)"),
    "long prompt": (one(values={"a": ["x" * 100_001, "y"]}),
                    f"{T}.template: the prompt of sample 't:a={'x' * 62}~1a191ddce3fc' has 100,005 characters, "
                    "more than task.max_prompt_chars (100,000)"),
    "positional": (one(template="say {}"), f"{T}.template: positional fields like {{}} are not allowed; name a value"),
    "numbered": (one(template="say {0}"), f"{T}.template: positional fields like {{}} are not allowed; name a value"),
    "unbalanced": (one(template="say {a"),
                   f"{T}.template: not a valid str.format template: expected '}}' before end of string"),
    "combinations bomb": (one(template="{a}{b}{c}", value_combinations="combinations",
                              values={k: list(range(200)) for k in "abc"}, reference="calculated",
                              scorer="contains"),
                          "task.max_samples: the benchmark expands to 8,000,000 samples (t: 8,000,000), more than "
                          "task.max_samples (1,000,000); raise it, or pick tasks with task.only"),
    "alias": ({"tasks.yml": "- name: t\n  template: 'say {a}'\n  values:\n    a: &x [1, 2]\n    b: *x\n"},
              "in 'tasks.yml': line 5, column 8: YAML aliases (*x) are not allowed in benchmark files; write the "
              "values out"),
    "alias bomb": ({"tasks.yml": "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                                 "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"},
                   "in 'tasks.yml': line 2, column 8: YAML aliases (*a) are not allowed in benchmark files; write "
                   "the values out"),
    "alias in info.yml": (folder_task("add", "{a}", "a,reference\n1,1\n", info_yml="x: &s contains\nscorer: *s\n"),
                          "in 'tasks/add/info.yml': line 2, column 9: YAML aliases (*s) are not allowed in benchmark "
                          "files; write the values out"),
    "nan": ({"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1, .nan]}\n  reference: ['1', '2']\n"},
            f"{T}.values.a: item 2 is nan: a value must be a finite number, a string or a bool"),
    "infinite reference": ({"tasks.yml": "- name: t\n  template: '{a}'\n  values: {a: [1, 2]}\n  reference: [1, .inf]\n"},
                           f"{T}.reference: item 2 is inf: a value must be a finite number, a string or a bool"),
    "infinite cell": (folder_task("add", "{a}", "a,reference\n1e999,1\n"),
                      "in 'tasks/add/values.csv': task 'add': column 'a': item 1 is inf: a value must be a finite "
                      "number, a string or a bool"),
    "null value": ({"tasks.yml": "- name: t\n  template: '{a}'\n  values: {a: [1, null]}\n  reference: ['1', '2']\n"},
                   f"{T}.values.a[1]: nothing is given; give text or a number or true or false"),
    "lengths": (one(values={"a": [1, 2], "b": [1]}),
                f"{T}.values: value lists differ in length (a=2, b=1); value_combinations: tuple needs equal lengths"),
    "folder with a space": (folder_task("my task", "{a}", "a,reference\n1,1\n"),
                            "in 'tasks/my task': 'my task' is not a task name (ASCII letters, digits, _ . - ; not starting "
                            "with . or -): rename the folder"),
    "folder not ascii": (folder_task("tâsk", "{a}", "a,reference\n1,1\n"),
                         "in 'tasks/tâsk': 'tâsk' (t\\xe2sk) is not a task name (ASCII letters, digits, _ . - ; not starting with . "
                         "or -): rename the folder"),
    "folder with a colon": (folder_task("a:b", "{a}", "a,reference\n1,1\n"),
                            "in 'tasks/a:b': 'a:b' is not a task name (ASCII letters, digits, _ . - ; not starting with . "
                            "or -): rename the folder"),
    "list name with a space": (one(name="my task"),
                               "in 'tasks.yml': task 'my task': tasks[0].name: 'my task' does not match "
                               "'^[A-Za-z0-9_][A-Za-z0-9_.-]*$'"),
    "one-argument scorer": ({**one(scorer="s"), "custom_scorer.py": "def s(response):\n    return 1\n"},
                            "in 'custom_scorer.py': scorer 's' must take two arguments, (response, reference); it is "
                            "s(response)"),
    "three-argument scorer": ({**one(scorer="s"), "custom_scorer.py": "def s(response, reference, more):\n    return 1\n"},
                              "in 'custom_scorer.py': scorer 's' must take two arguments, (response, reference); "
                              "it is s(response, reference, more)"),
    "exit at import": ({**one(), "custom_scorer.py": "import sys\nsys.exit(3)\n"},
                       "in 'custom_scorer.py': cannot import: SystemExit: 3 (line 2)"),
    "interrupt at import": ({**one(), "custom_scorer.py": "raise KeyboardInterrupt\n"},
                            "in 'custom_scorer.py': cannot import: KeyboardInterrupt: KeyboardInterrupt (line 1)"),
    "missing module": ({**one(), "custom_scorer.py": "import nosuchmodule\n"},
                       "in 'custom_scorer.py': cannot import: ModuleNotFoundError: No module named 'nosuchmodule' "
                       "(line 1)"),
    "schema that raises": ({**one(format="F"), "custom_response.py": (
        "from pydantic import BaseModel\nclass F(BaseModel):\n    answer: str\n    @classmethod\n"
        "    def model_json_schema(cls, *args, **kwargs):\n        raise RuntimeError('no schema today')\n")},
        "in 'custom_response.py': format 'F' has no JSON schema: RuntimeError: no schema today"),
    "field pydantic cannot schema": ({**one(format="F"), "custom_response.py": (
        "from pydantic import BaseModel\nclass Thing: pass\nclass F(BaseModel):\n    answer: Thing\n")},
        "in 'custom_response.py': cannot import: PydanticSchemaGenerationError: Unable to generate pydantic-core "
        "schema for <class 'custom_response.Thing'> (line 3)"),
    "syntax error": ({**one(), "custom_response.py": "class F(:\n"},
                     "in 'custom_response.py': cannot import: SyntaxError: invalid syntax (line 1)"),
    "nested 5,000 deep": ({"tasks.yml": f"- name: t\n  template: '{{a}}'\n  values: {{a: [{'[' * 5000}{']' * 5000}]}}\n"},
                          "in 'tasks.yml': line 3, column 1012: lists and mappings nested more than 32 deep; a "
                          "benchmark file needs 5 at most"),
    "nested 40 deep": ({"tasks.yml": f"- name: t\n  template: '{{a}}'\n  values: {{a: [{'[' * 40}{']' * 40}]}}\n"},
                       "in 'tasks.yml': lists and mappings nested more than 32 deep (at [0].values.a[0]…); a benchmark "
                       "file needs 5 at most"),
    "an integer of 5,000 digits": ({"tasks.yml": f"- name: t\n  template: '{{a}}'\n  values: {{a: [{'9' * 5000}]}}\n"},
                                   "in 'tasks.yml': line 3, column 16: the integer 99999999999999999999…(5,000 "
                                   "characters) is outside ±9,007,199,254,740,991 (2^53 - 1, the integers every JSON "
                                   "reader keeps exactly); quote it to keep it as text"),
    "an integer past 2^53": (one(reference=[9007199254740992, 1]),
                             "in 'tasks.yml': line 8, column 5: the integer 9007199254740992 is outside "
                             "±9,007,199,254,740,991 (2^53 - 1, the integers every JSON reader keeps exactly); quote "
                             "it to keep it as text"),
    "a CSV cell past the csv module's limit": (folder_task("add", "{a}", f"a,reference\n{'x' * 200_000},1\n"),
                                               "in 'tasks/add/values.csv': task 'add': line 2: a cell longer than "
                                               "task.max_prompt_chars (100,000 characters)"),
    "prompts over task.max_total_chars": (one(template="{a:>99990}{b}", value_combinations="combinations",
                                              values={"a": list(range(1000)), "b": list(range(1000))},
                                              reference="calculated", scorer="s"),
                                          "task.max_total_chars: the benchmark's prompts pass task.max_total_chars "
                                          "(100,000,000 characters in all) at sample 1,001 of 1,000,000 of task 't'; "
                                          "raise it, or pick tasks with task.only"),
}


def links(root: Path) -> dict[str, tuple[dict[str, str], Path, Path, str]]:
    """Benchmarks with a file or folder linked outside: (files, link, target, message)."""
    outside = root / "outside"
    (outside / "folder").mkdir(parents=True, exist_ok=True)
    (outside / "passwd").write_text("root:x:0:0\n")
    (outside / "folder" / "template.txt").write_text("{a}")
    (outside / "folder" / "values.csv").write_text("a,reference\n1,1\n")
    return {
        "template to /etc/passwd": (folder_task("add", "{a}", "a,reference\n1,1\n"), Path("tasks/add/template.txt"),
                                    outside / "passwd",
                                    f"in 'tasks/add/template.txt': links outside the benchmark directory (to "
                                    f"{outside / 'passwd'}); benchrun reads only files inside it"),
        "task folder outside": ({"tasks.yml": tasks_yml(task())}, Path("tasks/far"), outside / "folder",
                                f"in 'tasks/far': links outside the benchmark directory (to {outside / 'folder'}); "
                                "benchrun reads only files inside it"),
        "scorer file outside": ({"tasks.yml": tasks_yml(task())}, Path("custom_scorer.py"), outside / "passwd",
                                f"in 'custom_scorer.py': links outside the benchmark directory (to "
                                f"{outside / 'passwd'}); benchrun reads only files inside it"),
    }


def compile_message(tmp_path: Path, files: dict[str, str], **task_keys) -> tuple[int, str]:
    bench = write_bench(tmp_path, files)
    cfg = {**config(bench), "dry_run": True}
    cfg["task"].update(task_keys)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return run(cfg, tmp_path / "run", cwd=tmp_path), ""
    except BenchrunError as err:
        return err.exit_code, str(err)


@pytest.mark.parametrize("name", list(FILES))
def test_benchmark_files(tmp_path, name):
    files, message = FILES[name]
    assert compile_message(tmp_path, files) == (EXIT["usage"], message)


@pytest.mark.parametrize("name", ["template to /etc/passwd", "task folder outside", "scorer file outside"])
def test_links_out_of_the_benchmark(tmp_path, name):
    files, link, target, message = links(tmp_path)[name]
    bench = write_bench(tmp_path, files)
    (bench / link).unlink(missing_ok=True)
    (bench / link).parent.mkdir(parents=True, exist_ok=True)
    (bench / link).symlink_to(target)
    assert compile_message(tmp_path, {}) == (EXIT["usage"], message)


def test_values_with_id_separators_are_not_duplicates(tmp_path):
    files = one(template="{a}{b}", values={"a": ["1,b=2", "1"], "b": [2, "2,b=3"]}, reference=["x", "y"])
    bench = write_bench(tmp_path, files)
    from benchrun import compile_plan

    assert [s.id for s in compile_plan(config(bench), tmp_path).manifest.samples] == [
        "t:a=1%2Cb%3D2,b=2", "t:a=1,b=2%2Cb%3D3"]


def test_csv_cells_within_a_raised_limit_and_integers_past_2_53(tmp_path):
    """A cell as long as task.max_prompt_chars allows is read, past the csv module's own limit; an integer cell
    outside ±(2^53 - 1) stays the text it is (a CSV cannot quote a number into text), one inside is a number."""
    cells = f"a,b,reference\n{'x' * 200_000},12345678901234567890,1\ny,-9007199254740991,2\n"
    bench = write_bench(tmp_path, folder_task("add", "{a}{b}", cells))
    from benchrun import compile_plan

    cfg = config(bench)
    cfg["task"]["max_prompt_chars"] = 300_000
    samples = compile_plan(cfg, tmp_path).manifest.samples
    assert [(len(s.values["a"]), s.values["b"]) for s in samples] == [(200_000, "12345678901234567890"),
                                                                       (1, -9007199254740991)]


def test_a_values_csv_with_a_byte_order_mark(tmp_path):
    bench = write_bench(tmp_path, folder_task("add", "{a}", "a,reference\n1,1\n"))
    (bench / "tasks/add/values.csv").write_bytes(b"\xef\xbb\xbfa,reference\n1,1\n")
    (bench / "tasks/add/template.txt").write_bytes(b"\xef\xbb\xbfwhat is {a}?")
    from benchrun import compile_plan

    [sample] = compile_plan(config(bench), tmp_path).manifest.samples
    assert (sample.id, sample.prompt, sample.values) == ("add:a=1", "what is 1?", {"a": 1})


OVERRIDES = [  # command-line overrides of `python -m benchrun dry_run=true`: (arguments, message)
    (["+runner.options.temprature=0.9"],
     "in 'config': runner.options.temprature: unknown option 'temprature' (did you mean 'temperature'?)"),
    (["+runner.concurrencyy=2"], "in 'config': runner.concurrencyy: unknown key 'concurrencyy' (did you mean "
                                    "'concurrency'?)"),
    (["runner.modle=x"], "in 'config': runner.modle: unknown key 'modle' (did you mean 'model'?)"),
    (["runner=olama"], "In 'config': Could not find 'runner/olama' (options: local, ollama, openai)"),
    (["model=nosuch"], "In 'config': Could not find 'model/nosuch' (options: gemma3, llama3.2)"),
    (["task.path=~/benchrun-nowhere"], "task.path: '<home>/benchrun-nowhere' is not a directory (looked in "
                                          "<home>/benchrun-nowhere)"),
    (["task.only=[a,"], "the override 'task.only=[a,': Hydra's override grammar cannot read it (no viable alternative "
                        "at input '[a,'); a value that is one text is written in quotes: task.only='[a,'"),
    (["runner.concurrency=0"], "in 'config': runner.concurrency: 0 is out of bounds: give at least 1"),
    (["runner.timeout_s=-1"], "in 'config': runner.timeout_s: -1 is out of bounds: give more than 0"),
    (["runner.retries=99"], "in 'config': runner.retries: 99 is out of bounds: give at most 20"),
    (["runner.options.seed=1.5"],
     "in 'config': runner.options.seed: Input should be a valid integer, not 1.5"),
    (["runner.think=maybe"], "in 'config': runner.think: \"maybe\" is not valid here (For thinking models: "
                                "true/false (or low/medium/high); null = not sent.)"),
    (["runner.type=vllm"], "in 'config': runner.type: unknown runner type 'vllm' (did you mean 'ollama'?)"),
    (["runner=openai", "runner.api_key_env=1BAD"],
     "in 'config': runner.api_key_env: String should match pattern '^[A-Za-z_][A-Za-z0-9_]*$'"),
    (["runner=local", "+runner.options.num_gpu=1"],
     f"in 'config': runner.options.num_gpu: unknown option 'num_gpu' (allowed: {LOCAL_OPTIONS})"),
    (["scorer_timeout_s=0"], "in 'config': scorer_timeout_s: 0 is out of bounds: give more than 0"),
    (["task.max_prompt_chars=0"], "in 'config': task.max_prompt_chars: 0 is out of bounds: give at least 1"),
    (["task.max_samples=5"], "task.max_samples: the benchmark expands to 18 samples (product: 3, "
                                "product_combination: 9, symbol: 3, symbol_dir: 3), more than task.max_samples (5); "
                                "raise it, or pick tasks with task.only"),
    (["task.only=[nope]"], "task.only: no task named 'nope' (tasks: product, product_combination, symbol, "
                              "symbol_dir)"),
    (["runner_file=leaky.yml"], f"in 'leaky.yml': api_key: {NAMED}"),
]
SECRET_OVERRIDES = [  # the same, with a credential on the command line
    (["+runner.api_key=sk-live-123"], f"in 'config': runner.api_key: {NAMED}"),
    (["+runner.token=sk-live-123"], f"in 'config': runner.token: {NAMED}"),
    (["+runner.password=sk-live-123"], f"in 'config': runner.password: {NAMED}"),
    (["+runner.bearer=sk-live-123"], f"in 'config': runner.bearer: {NAMED}"),
    (["+runner.headers.Authorization=Bearer sk-live-123"], f"in 'config': runner.headers.Authorization: {NAMED}"),
    (["+runner.headers.X-Api-Key=sk-live-123"], f"in 'config': runner.headers.X-Api-Key: {NAMED}"),
    (["+runner.options.api_key=sk-live-123"], f"in 'config': runner.options.api_key: {NAMED}"),
    (["runner.host=http://user:sk-live-123@localhost:11434"], f"in 'config': runner.host: {IN_URL}"),
    (["runner=openai", "runner.base_url=https://u:sk-live-123@h/v1"], f"in 'config': runner.base_url: {IN_URL}"),
    (["-m", "runner.model=a,b", "+runner.api_key=sk-live-123"], f"in 'config': runner.api_key: {NAMED}"),
]


@pytest.mark.parametrize(("args", "message"), OVERRIDES, ids=[" ".join(row[0]) for row in OVERRIDES])
def test_command_line(tmp_path, args, message):
    assert_refused(call_benchrun, tmp_path, args, message)


@pytest.mark.slow
@pytest.mark.parametrize(("args", "message"), SECRET_OVERRIDES, ids=[" ".join(row[0]) for row in SECRET_OVERRIDES])
def test_command_line_credential(tmp_path, args, message):
    assert_refused(run_benchrun, tmp_path, args, message)


def assert_refused(benchrun, tmp_path: Path, args: list[str], message: str) -> None:
    """`benchrun [-m] dry_run=true args...`: a usage error, `message` alone on stderr, and no file holding the key."""
    (tmp_path / "leaky.yml").write_text("runner_type: ollama\nmodel: m\napi_key: sk-live-123\n")
    flags = [arg for arg in args if arg == "-m"]
    result = benchrun(*flags, "dry_run=true", *[a for a in args if a != "-m"], cwd=tmp_path)
    stderr = result.stderr.replace(os.path.expanduser("~"), "<home>")
    assert (result.returncode, stderr, result.stdout) == (EXIT["usage"], f"benchrun: error: {message}\n", "")
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and b"sk-live-123" in p.read_bytes()
                and p.name != "leaky.yml"]


def test_the_catalogue_is_long_enough():
    assert len(FILES) + 3 + 2 + len(OVERRIDES) + len(SECRET_OVERRIDES) >= 60
