"""Hostile input, fifteenth pass, the files-and-processes side (issue 19's fresh pass of the same kinds): real
`python -m benchrun` processes given hostile benchmark files, the cases it found bad, each with the rule it now obeys.

- a response class of custom_response.py whose JSON schema runs code (`model_json_schema` overridden, a pydantic hook)
  that ends the process (`os._exit(0)`), exits (`raise SystemExit(0)`), raises KeyboardInterrupt or another
  BaseException, or prints: the schema was made in the run's own process with none of the import's containment, so
  a run (or a dry run) exited 0 having done nothing, a run directory left `running`; a KeyboardInterrupt was told as
  an interrupt (exit 130); what it printed went to the console, the API key unmasked. Now the schema is made first in
  the import's own process (`compiler.usercode.probed`) and then contained in the run's (`usercode.contained`): one
  line naming the file and the format, exit 2
- a custom_*.py that forks at import (`os.fork()`, the parent waiting for its copy): the copy went on as a second
  benchrun in the same run directory (claimed before the compile), so the run was made twice: responses.jsonl held
  every sample twice, and `verify` said intact. Now refused by the import's own process (it forks), and a copy made
  in the run's process ends where the import ends, never going on as a run (`usercode.contained`)
- a custom_*.py raising a BaseException that is not an Exception (`class Boom(BaseException)`) at import: a traceback
  of twenty lines, exit 1. Now `cannot import: Boom: ... (line N)`, as for any error it raises
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import tasks_yml, write_bench
from tests.helpers.commands import run_benchrun, run_dir_of

pytestmark = pytest.mark.slow
TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"]}
KEY = "sk-fifteenth0123456789abcdefghij"
SCHEMA_CLASS = ("import os\nfrom pydantic import BaseModel\n\n\nclass F(BaseModel):\n    answer: str\n\n"
                "    @classmethod\n    def model_json_schema(cls, *args, **kwargs):\n")


def dry_run(root: Path, files: dict[str, str]):
    """A dry run, in a real process, of the benchmark `files` (with $OPENAI_API_KEY set)."""
    write_bench(root, files)
    return run_benchrun("task.path=bench", "dry_run=true", cwd=root, env={"OPENAI_API_KEY": KEY})


@pytest.mark.parametrize("body, line", [
    ("os._exit(0)", "class 'F': making its JSON schema ended the process (os._exit(0) or the like); a response class "
                    "must define its fields, not work as its schema is made"),
    ("print('key', os.environ['OPENAI_API_KEY'])\n        raise SystemExit(0)",
     "format 'F' has no JSON schema: SystemExit: 0"),
    ("raise KeyboardInterrupt", "format 'F' has no JSON schema: KeyboardInterrupt: KeyboardInterrupt"),
    ("raise GeneratorExit('done')", "format 'F' has no JSON schema: GeneratorExit: done"),
    ("os.fork()\n        return {}", "cannot import: it forks the process importing it (os.fork), and the copy would "
                                    "go on as a second run, writing the same run directory; a benchmark's file must "
                                    "define its functions and classes, not work at import"),
])
def test_a_response_class_whose_schema_ends_exits_or_prints_is_one_line(tmp_path, body, line):
    done = dry_run(tmp_path, {"tasks.yml": tasks_yml({**TASK, "format": "F"}),
                              "custom_response.py": f"{SCHEMA_CLASS}        {body}\n"})
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: in 'custom_response.py': {line}\n")


def test_a_response_class_whose_schema_exits_leaves_no_run_running(tmp_path):
    """A run, not a dry run: its directory, claimed before the compile, says why it failed."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml({**TASK, "format": "F"}),
                           "custom_response.py": f"{SCHEMA_CLASS}        raise SystemExit(0)\n"})
    done = run_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        EXIT["usage"], "benchrun: error: in 'custom_response.py': format 'F' has no JSON schema: SystemExit: 0\n")
    [run_json] = (tmp_path / "outputs").glob("*/*/run.json")
    info = json.loads(run_json.read_text())
    assert (info["status"], info["reason"]) == (
        "failed", "in 'custom_response.py': format 'F' has no JSON schema: SystemExit: 0")


def test_a_scorer_file_raising_a_base_exception_at_import_is_one_line(tmp_path):
    done = dry_run(tmp_path, {"tasks.yml": tasks_yml({**TASK, "scorer": "s"}), "custom_scorer.py": (
        "class Boom(BaseException):\n    pass\n\n\ndef s(response, reference):\n    return 1\n\n\nraise Boom('at import')\n")})
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: in 'custom_scorer.py': cannot import: Boom: at import (line 9)\n")


FORKS = "import os\n\n\ndef s(response, reference):\n    return 1\n\n\n"


def forking_run(root: Path, scorer_file: str):
    """A run of a benchmark whose custom_scorer.py is `scorer_file`, against a fresh loopback Ollama."""
    write_bench(root, {"tasks.yml": tasks_yml({**TASK, "scorer": "s"}), "custom_scorer.py": scorer_file})
    with FakeOllama(models=["llama3.2"]) as server:
        return run_benchrun("task.path=bench", f"runner.host={server.url}", "outputs=outputs", "cache=false",
                            cwd=root)


def test_a_scorer_file_that_forks_at_import_is_refused(tmp_path):
    done = forking_run(tmp_path, FORKS + "pid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\n")
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'custom_scorer.py': cannot import: it forks the process importing it (os.fork), and the "
        "copy would go on as a second run, writing the same run directory; a benchmark's file must define its "
        "functions and classes, not work at import\n"))
    [run_dir] = (tmp_path / "outputs").glob("*/*")
    assert not (run_dir / "responses.jsonl").exists()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"


def test_a_fork_the_import_check_did_not_see_never_runs_twice(tmp_path):
    """A file that forks only where it is imported for the run (not in the check's process): the copy ends where the
    import ends, and the run is made once."""
    done = forking_run(tmp_path, FORKS + "if __name__ != 'benchrun_probe':\n    pid = os.fork()\n    if pid:\n"
                                         "        os.waitpid(pid, 0)\n")
    assert done.returncode == EXIT["ok"], done.stderr
    assert done.stdout.count("run directory: ") == 1
    run_dir = run_dir_of(done.stdout)
    ids = [json.loads(line)["id"] for line in (run_dir / "responses.jsonl").read_text().splitlines()]
    assert sorted(ids) == ["t:a=1", "t:a=2"]
    assert [json.loads(line)["metrics"] for line in (run_dir / "scores.jsonl").read_text().splitlines()
            if json.loads(line)["scorer"] == "s"] == [{"s": 1}, {"s": 1}]
