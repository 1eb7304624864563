"""Hostile input, seventeenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a judge of runner=openai beside a model of Ollama (or of runner=local), the response cache left at its default:
  the cache is on for a run of Ollama, and was used for the judge too, whose grades were kept under what an
  OpenAI-compatible server says of its model, its served name (no digest), so a later run whose judge server served
  another model under that name (llama-server or vLLM restarted on another file, `--alias`/`--served-model-name`
  kept) took the first model's grades from the cache, asking the judge nothing, and its judgements.jsonl and summary
  said its judge gave them; `runner=openai`'s cache is off unless `cache=true` is given. Now the cache is on or off
  for each model a run asks, as `cache.enabled` reads the setting for its runner (`session.cache_of`)
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer


def _judging(verdict: str):
    """A judge model that grades every answer `verdict`."""
    return lambda req: json.dumps({"verdict": verdict})


@pytest.mark.parametrize(("cache", "second"), [((), ["wrong"] * 3), (("cache=true",), ["right"] * 3)])
def test_a_judge_pinned_by_no_digest_is_cached_only_when_asked(tmp_path, cache, second):
    """Two runs of one benchmark whose judge server serves another model under one name the second time: without
    cache=true the second judge is asked (its grades 'wrong'); with it, as the README says of runner=openai, the
    first judge's grades are taken from the cache."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    grades = []
    for verdict in ("right", "wrong"):
        with FakeOllama(models=["llama3.2"], responder=answer) as model, \
                FakeOpenAI(models=["judge"], responder=_judging(verdict), system_fingerprint=None) as judge:
            done = call_benchrun(f"runner.host={model.url}", "task.path=bench", "judge.runner=openai",
                                 f"judge.base_url={judge.url}", "judge.model=judge", "+judge.structured=json_schema",
                                 f"cache_dir={tmp_path / 'cache'}", *cache, f"outputs={tmp_path / 'o'}", cwd=tmp_path)
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        grades.append([call["grade"] for call in read_jsonl(run_dir_of(done.stdout) / "judgements.jsonl")])
    assert grades == [["right"] * 3, second]
