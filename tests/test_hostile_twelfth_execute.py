"""Hostile input, twelfth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a judge model pulled again while the run graded (`ollama pull` of a new version under the judge's name): the
  eighth pass asks the model's digest again as the run ends, but not the judge's, so the run completed (exit 0) and
  run.json said one judge, of the digest it began with, gave every grade; now the judge's digest is asked again too
  (`execute.session`), and one that changed fails the run (its answers and grades kept), naming both digests and
  the server

What held (tried, nothing new):
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.recordvalues import short_digest
from benchrun.testing.ollama_server import FakeOllama, fake_digest
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer

pytestmark = pytest.mark.slow


def test_a_judge_pulled_again_while_the_run_asks_fails_the_run_naming_both_digests(tmp_path):
    judged = []

    def repulled(req):
        if req.model.startswith("qwen2.5"):
            judged.append(req)
            if len(judged) == 2:  # the second grade on, another judge model answers under the name
                server.digests["qwen2.5"] = "f" * 64
        return answer(req)

    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=repulled) as server:
        result = call_benchrun(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                               "runner.concurrency=1", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
    began = fake_digest("qwen2.5")
    line = (f"the judge model qwen2.5 changed on {server.url} while the run asked: digest {short_digest(began)} when "
            f"it began, digest {short_digest('f' * 64)} as it ended (pulled again?); its grades may come from either "
            "model and cannot be told apart: run it again")
    info = json.loads((run_dir / "run.json").read_text())
    assert (result.returncode, result.stderr, info["status"], info["reason"]) == (
        EXIT["runner"], f"benchrun: error: {line}\n", "failed", line)
    assert (info["judge"]["identity"]["digest"], len(read_jsonl(run_dir / "judgements.jsonl"))) == (began, 3)
