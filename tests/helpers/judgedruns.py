"""Benchmarks graded by a judge the loopback server plays, for the tests of judges that fail and servers that move:
eight items a judge fails at will (`Judging`), and a chat over a data file whose judge can be down (`Capitals`)."""

from __future__ import annotations

import json

from benchrun.testing.ollama_server import ChatRequest, Reply
from benchrun.testing.oracle import fenced_fields, judged
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import JUDGES, RESPONSE

EIGHT = ("- name: item\n  template: 'item {n}'\n  values: {n: [1, 2, 3, 4, 5, 6, 7, 8]}\n"
         "  reference: [a, a, a, a, a, a, a, a]\n  scorer: contains\n  judge: names\n")
"""Eight answers `a`, each graded by contains and by the judge `names` (tests.helpers.judges)."""


class Judging:
    """The model under test answers `a`; the judge (qwen2.5) says right, but answers 500 for the items in `failing`
    (every item when it is None)."""

    def __init__(self, failing: tuple[int, ...] | None = ()) -> None:
        self.failing = failing

    def __call__(self, req: ChatRequest) -> Reply | str:
        if not req.model.startswith("qwen2.5"):
            return json.dumps({"answer": "a"})
        item = int(fenced_fields(req.prompt)["prompt"].rsplit(" ", 1)[1])
        if self.failing is None or item in self.failing:
            return Reply(status=500, error="boom")
        return json.dumps({"verdict": "right"})


def judged_eight(tmp_path, url: str, *overrides: str):
    write_bench(tmp_path, {"tasks.yml": EIGHT, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    result = call_benchrun(f"runner.host={url}", "task.path=bench", "judge.model=qwen2.5", "+judge.backoff_s=0",
                           "cache=false", f"outputs={tmp_path / 'outputs'}", *overrides, cwd=tmp_path)
    [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
    return result, run_dir


CAPITALS = {
    "tasks.yml": "- name: cap\n  template: 'Capital of {country}?'\n  values_file: data/c.jsonl\n  scorer: contains\n"
                 "  judge: names\n  system: 'Answer briefly.'\n"
                 "  fewshot:\n    - {user: 'Capital of Peru?', assistant: '{\"answer\": \"Lima\"}'}\n",
    "judges.yml": JUDGES, "custom_response.py": RESPONSE,
    "data/c.jsonl": '{"id": "fr", "country": "France", "reference": "Paris"}\n'
                    '{"id": "jp", "country": "Japan", "reference": "Tokyo"}\n'}
"""A chat (system prompt and one shot) over a JSONL file, graded by contains and by the judge `names`."""
CITIES = {"France": "Paris", "Japan": "Osaka"}


class Capitals:
    """The model answers CITIES; the judge (qwen2.5) says right when the answer holds the reference, and answers 500
    while `judge_down`."""

    def __init__(self, judge_down: bool = False) -> None:
        self.judge_down = judge_down

    def __call__(self, req: ChatRequest) -> Reply | str:
        if not req.model.startswith("qwen2.5"):
            return json.dumps({"answer": CITIES[req.prompt.split()[-1][:-1]]})
        if self.judge_down:
            return Reply(status=500, error="judge down")
        answer, reference = judged(req.prompt) or ("", "")
        return json.dumps({"verdict": "right" if reference in answer else "wrong"})
