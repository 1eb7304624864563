"""The twenty-seventh hostile pass of issue 19, the side of what goes in: the items the twenty-sixth pass left, then a
fresh pass. /work/notes/p27/result-input.md has the whole list, what held and what was left."""

from __future__ import annotations

import pytest

from benchrun.compiler import ownsource
from benchrun.compiler.usercode import import_file
from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of


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
