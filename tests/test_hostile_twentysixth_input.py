"""The twenty-sixth hostile pass of issue 19, the side of what goes in: the items the twenty-fifth pass left, then a
fresh pass. /work/notes/p26/result-input.md has the whole list, what held and what was left.

Fixed:
1. Another tool's folder in tasks/ (Jupyter's `.ipynb_checkpoints`, `.git`, Python's `__pycache__`) was read as a task
   and refused: a folder holding no template.txt whose name is hidden or `__pycache__` is not a task
   (compiler.sources.task_folders).
2. A benchmark's own module named like a library benchrun had loaded (`yaml.py` beside a scorer's `import yaml`) was
   silently the library: refused, naming the file, line and library (compiler.ownsource.refuse_shadowed).
3. `the sweep launched 1 jobs` (callbacks: core.text.counted).
4. A run archived when `judge.type` was the judge's runner type could no longer be resumed, retried or judged again:
   an archived config is read as the run read it (core.judgekeys.as_made).
5. resume's and retry's advice on the API key named `runner.api_key_env`, and on a model the server lacks
   `runner.model`, which neither takes (RunnerConfig.asked_again).
6. `task.only=[a,a]` taken, the same questions under another manifest id: refused for a new run (compose.fresh).
7. A number of a values file or a task file was asked as Python prints it (2.50 as 2.5, 1e5 as 100000.0, +5 as 5):
   printed as written (core.written).
"""

from __future__ import annotations

import sys

import pytest
import yaml

from benchrun.compiler.plan import compiled
from benchrun.compose.config import plain_config
from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import reseal
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import config, folder_task, task, tasks_yml, write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of, sweep_dir_of
from tests.helpers.judgedruns import Judging, judged_eight

HOST = "runner.host=http://127.0.0.1:9"


def test_another_tools_folder_in_tasks_is_not_a_task(tmp_path):
    """Before: `in 'tasks/.ipynb_checkpoints': '.ipynb_checkpoints' is not a task name (...)`, exit 2."""
    write_bench(tmp_path, {**folder_task("t", "say {a}", "a,reference\n1,1\n"),
                           "tasks/.ipynb_checkpoints/notes-checkpoint.ipynb": "{}",
                           "tasks/.git/HEAD": "ref: refs/heads/main\n", "tasks/__pycache__/x.cpython-311.pyc": ""})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr, "1 task, 1 sample -> 1 model call" in done.stdout) == (EXIT["ok"], "", True)


def test_a_hidden_folder_holding_a_template_is_still_refused(tmp_path):
    write_bench(tmp_path, {**folder_task("t", "say {a}", "a,reference\n1,1\n"),
                           **folder_task(".x", "say {a}", "a,reference\n1,1\n")})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'tasks/.x': '.x' is not a task name (ASCII letters, digits, _ . - ; not starting with . or -): "
        "rename the folder\n"))


HELPED = "import os\nimport sys\n\nsys.path.insert(0, os.path.dirname(__file__))\n"
"""The head of a benchmark file that imports its benchmark's own modules (`from helpers import ...`)."""


@pytest.mark.parametrize(("imports", "own"), [("import yaml", "yaml.py"), ("from json import loads", "json/__init__.py")])
def test_a_benchmarks_own_module_named_as_a_loaded_library_is_refused(tmp_path, imports, own):
    """Before: the scorer's `import yaml` got the library benchrun had loaded, not the benchmark's yaml.py beside it;
    a function both define scored with the library's code, and the manifest did not name the user's file."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorer="s")), own: "def safe_load(text):\n    return 1\n",
                           "custom_scorer.py": f"{HELPED}{imports}\n\n\ndef s(response, reference):\n    return 1\n"})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    name = own.split("/")[0].removesuffix(".py")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'custom_scorer.py': imports '{name}' (line 5), and the benchmark holds {own}, but Python "
        f"gives it the library of that name that benchrun had already loaded ({sys.modules[name].__file__}), not the "
        f"benchmark's file: rename {own}\n"))


REMOVER = ("import glob\nimport shutil\n\n\ndef s(response, reference):\n"
           "    for found in glob.glob('outputs/*/*/0_*'):\n        shutil.rmtree(found)\n    return 1\n")


def test_a_sweep_of_one_job_that_lost_its_directory_says_it_in_the_singular(tmp_path):
    """Before: `the sweep launched 1 jobs, and ... holds 0 of them`."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorer="s", values={"a": [1]}, reference=["1"])),
                           "custom_scorer.py": REMOVER})
    with FakeOllama(models=["llama3.2"], responder=lambda req: "1") as server:
        done = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", multirun=True)
    sweep = sweep_dir_of(done.stdout)
    assert (done.returncode, done.stderr.splitlines()[-1]) == (EXIT["sweep_failed"], (
        f"benchrun: error: the sweep launched 1 job, and {sweep} holds 0 of them (a job's directory removed while the "
        "sweep ran?): sweep.json lists only those")), done.stderr


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_a_run_archived_with_judge_type_is_judged_again_as_it_was_judged(tmp_path, kind):
    """Before the twenty-fifth pass `judge.type` was taken as the judge's runner type; since, an archived config.yaml
    holding it was refused by resume, retry and rejudge: `in 'config': judge.type: unknown key 'type' ...`."""
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Judging()) as server:
        done, run_dir = judged_eight(tmp_path, server.url)
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
        config["judge"]["type"] = "ollama"
        config["judge"]["runner"] = kind  # judge.type, not judge.runner, gave the type the run's judge was asked with
        (run_dir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        reseal(run_dir, "config.yaml")
        rejudged = audit(tmp_path, "rescore", str(run_dir), "--rejudge", f"judge.host={server.url}")
    assert (done.returncode, rejudged.returncode, rejudged.stderr) == (EXIT["ok"], EXIT["ok"], "")


KEY = "sk-AbCdEfGhIjKlMnOpQrStUv12345"


def one_refused(req) -> Reply | str:
    """Sample `a=1` refused (400, not retried), the other answered."""
    return Reply(status=400, error="no") if req.prompt == "say 1" else '{"answer": "2"}'


@pytest.mark.parametrize(("key", "said"), [
    ("", "wants an API key (401) and $MY_KEY is not set; export it (the run names its variable: "
                                          "runner.api_key_env)"),
    ("sk-ZzZzZzZzZzZzZzZzZzZzZzZzZ", "refused the API key from $MY_KEY (401); check the key (the run names its "
                                     "variable: runner.api_key_env)")])
def test_a_retrys_advice_on_the_api_key_names_no_key_it_cannot_change(tmp_path, key, said):
    """Before: `..., or set runner.api_key_env to the variable that holds the key`: retry and resume take no such key
    (only --host and --set runner.LIMIT=...)."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task())})
    with FakeOpenAI(models=["m"], responder=one_refused, api_key=KEY) as server:
        done = call_benchrun("task.path=bench", "runner=openai", f"runner.base_url={server.url}", "runner.model=m",
                             "runner.api_key_env=MY_KEY", "cache=false", f"outputs={tmp_path / 'outputs'}",
                             cwd=tmp_path, env={"MY_KEY": KEY})
        retried = call_benchrun("retry", str(run_dir_of(done.stdout)), cwd=tmp_path, env={"MY_KEY": key},
                                module="benchrun.audit")
        url = server.url
    assert (done.returncode, retried.returncode, retried.stderr) == (EXIT["ok"], EXIT["runner"], (
        f"benchrun: error: the server at {url} {said}\n"))


def test_a_task_named_twice_in_task_only_is_refused(tmp_path):
    """Before: taken, the task run once, and the manifest, which records task.only as given, had another id than the
    same run's with the task named once (the same questions under two ids)."""
    done = call_benchrun("task=listbench", HOST, "dry_run=true", "task.only=[product,symbol,product]", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': task.only: 'product' is listed twice; list each task once\n"))


CSV_WRITTEN = ["2.50", "1e5", "+5", "-0", ".5", "5.", "1e-7", "1E16"]
"""Numbers a CSV cell may write otherwise than Python prints them."""
JSON_WRITTEN = ["2.50", "1e5", "-0", "1e-7", "1E16", "0.10"]
"""Numbers JSON may write otherwise than Python prints them."""
YAML_WRITTEN = ["2.50", "+5", "-0", "1.0e+5", "0.10"]
"""Numbers YAML may write otherwise than Python prints them."""


def asked(tmp_path, files: dict[str, str]) -> list[tuple[str, str]]:
    """The prompt and the sample id of each sample of the benchmark `files` compiles to."""
    plan = compiled(plain_config(config(write_bench(tmp_path, files))), tmp_path)
    return [(query.sample.prompt, query.sample.id) for query in plan.manifest.queries()]


@pytest.mark.parametrize(("written", "files"), [
    (CSV_WRITTEN, folder_task("t", "price {a}", "a,reference\n" + "".join(f"{n},x\n" for n in CSV_WRITTEN))),
    (JSON_WRITTEN, {"tasks.yml": "- name: t\n  template: price {a}\n  values_file: d.jsonl\n",
                    "d.jsonl": "".join(f'{{"a": {n}, "reference": "x"}}\n' for n in JSON_WRITTEN)}),
    (YAML_WRITTEN, {"tasks.yml": f"- name: t\n  template: price {{a}}\n  values: {{a: [{', '.join(YAML_WRITTEN)}]}}\n"
                                 f"  reference: [{', '.join('x' for _ in YAML_WRITTEN)}]\n"})])
def test_a_number_is_asked_as_written(tmp_path, written, files):
    """Before: a number typed from a CSV cell, a JSONL or a tasks.yml value was asked as Python prints it: 2.50 as 2.5, 1e5 as
    100000.0, +5 as 5, -0 as 0, 1e-7 as 1e-07 (and its sample id so)."""
    assert asked(tmp_path, files) == [(f"price {number}", f"t:a={number}") for number in written]


def test_a_retrys_advice_on_a_model_not_served_names_no_model_to_pick(tmp_path):
    """Before: `…; pick one of those for runner.model, or start the server with it` (Ollama's: `or pick another
    runner.model`): a retry asks the run's model."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task())})
    with FakeOpenAI(models=["m"], responder=one_refused) as server, FakeOpenAI(models=["other"]) as elsewhere:
        done = call_benchrun("task.path=bench", "runner=openai", f"runner.base_url={server.url}", "runner.model=m",
                             "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        retried = call_benchrun("retry", str(run_dir_of(done.stdout)), "--host", elsewhere.url, cwd=tmp_path,
                                module="benchrun.audit")
    assert (done.returncode, retried.returncode, retried.stderr) == (EXIT["ok"], EXIT["runner"], (
        f"benchrun: error: model 'm' is not served at {elsewhere.url} (it serves: other); start the server with it\n"))


def test_a_retrys_advice_on_a_model_not_pulled_names_no_model_to_pick(tmp_path):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task())})
    with FakeOllama(models=["llama3.2"], responder=one_refused) as server, FakeOllama(models=["other"]) as elsewhere:
        done = bench_run(tmp_path, server.url, "task.path=bench", "cache=false")
        retried = call_benchrun("retry", str(run_dir_of(done.stdout)), "--host", elsewhere.url, cwd=tmp_path,
                                module="benchrun.audit")
    assert (done.returncode, retried.returncode, retried.stderr) == (EXIT["ok"], EXIT["runner"], (
        f"benchrun: error: model 'llama3.2' is not pulled on {elsewhere.url} (it has: other:latest); run `ollama pull "
        "llama3.2`\n"))
