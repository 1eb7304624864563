"""Hostile input, twelfth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a judge model pulled again while the run graded (`ollama pull` of a new version under the judge's name): the
  eighth pass asks the model's digest again as the run ends, but not the judge's, so the run completed (exit 0) and
  run.json said one judge, of the digest it began with, gave every grade; now the judge's digest is asked again too
  (`execute.session`), and one that changed fails the run (its answers and grades kept), naming both digests and
  the server
- a custom scorer returning a dict subclass, or keys of a str subclass, whose own methods lie: `__len__` saying 1
  of a dict of 100,000 metrics (the bound of 256 passed), `items()` giving 100,000 metrics of a dict holding one
  (scores.jsonl took them, summary.json grew to 16 MB), a key's `__len__` saying 1 of a name of 5 MB (kept whole in
  scores.jsonl and the summary), a key's `__format__` writing another name than the key's, keys that are one name
  by their text but apart by their `__hash__` (the first dropped without a word); now a dict and its keys are read
  through dict's and str's own methods (`compiler.scoring.metrics`), as the ninth pass reads an int, and a name
  given twice is that call's scorer error

What held (tried, nothing new):
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.recordvalues import short_digest
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama, fake_digest
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import scorer, write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.wire import records

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


LYING_ITEMS = """class Many(dict):
    def items(self):
        return ((f'k{i}', 1) for i in range(100_000))

return Many(fine=1)"""
LYING_LEN = """class Few(dict):
    def __len__(self):
        return 1

return Few((f'k{i}', 1) for i in range(100_000))"""
LYING_KEY = """class Short(str):
    def __len__(self):
        return 1

return {Short('y' * 5_000_000): 1}"""
LYING_FORMAT = """class Plain(str):
    def __format__(self, spec):
        return 'two\\nlines'

return {Plain('fine'): 1}"""
TWO_NAMES = """class Apart(str):
    def __hash__(self):
        return 5

    def __eq__(self, other):
        return other is self

return {Apart('a'): 1, 'a': 0}"""
SAID = "scorer result s has 100,000 metrics, more than 256"
NAMED = ("scorer s gave a metric named '" + "y" * 56 + "...: a name is a string of 1 to 200 characters, "
         "none of them a control character (a line break, a tab, ...)")


@pytest.mark.parametrize(("body", "error"), [
    (LYING_ITEMS, None),
    (LYING_LEN, SAID),
    (LYING_KEY, NAMED),
    (LYING_FORMAT, None),
    (TWO_NAMES, "scorer result s names one metric twice (keys of a str subclass, equal as strings)"),
])
def test_a_scorers_dict_and_its_keys_are_read_as_dict_and_str_read_them(tmp_path, body, error):
    with Lab(tmp_path, n=1, latency_s=0, scorer=scorer(body)) as lab:
        result = lab.call(*lab.args())
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    [(metrics, said)] = [(s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"]
    assert (metrics, said) == ((None, {"type": "TypeError", "message": error}) if error else ({"s.fine": 1}, None))
