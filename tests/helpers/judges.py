"""A benchmark graded by a judge, for the tests of judges: the seed's symbol task with `contains` and a judge whose
rubric gives the answer and the reference on lines of their own (as benchrun.testing.oracle's judge reads them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchrun.testing.ollama_server import ChatRequest
from benchrun.testing.oracle import demo

TASKS = """- name: symbol
  template: "what is the name for the following symbol? {symb}"
  values:
     symb: ["@","$","#"]
  reference: ["at", "dollar sign", "pound"]
  scorer: contains
  judge: names
"""
RUBRIC = "Question: {prompt}\nAnswer: {response}\nReference: {reference}\nDoes the answer name the reference?\n"
JUDGES = f"""- name: names
  rubric: {json.dumps(RUBRIC)}
  format: Verdict
  score: verdict
  scores: {{right: 1, wrong: 0}}
"""
RESPONSE = """from enum import Enum
from pydantic import BaseModel


class Grade(str, Enum):
    right = "right"
    wrong = "wrong"


class Verdict(BaseModel):
    verdict: Grade
"""
ANSWERS = {"@": "at", "$": "dollar", "#": "hash"}
"""What the model under test answers: 'hash' is not 'pound' (both `contains` and the judge give 0), and 'dollar' is
the dollar sign's name but does not contain 'dollar sign' (the judge, reading for meaning, gives 1; `contains` 0)."""


def answer(req: ChatRequest) -> str:
    """The model under test (llama3.2) answers the symbols above; qwen2.5 judges by rule."""
    if req.model.startswith("qwen2.5"):
        return demo(req)
    return json.dumps({"answer": ANSWERS[req.prompt[-1]]})


class RepulledJudge:
    """`answer`, but the judge model qwen2.5 is pulled again on `server` from its second grade on (another model
    answers under its name, by the digest f...f)."""

    def __init__(self) -> None:
        self.server: Any = None
        self.judged = 0

    def __call__(self, req: ChatRequest) -> str:
        if req.model.startswith("qwen2.5"):
            self.judged += 1
            if self.judged == 2:
                self.server.digests["qwen2.5"] = "f" * 64
        return answer(req)


def impatient_judge(model_url: str, judge_url: str, outputs: Path) -> list[str]:
    """The overrides of a run of the judged benchmark whose judge (qwen2.5) fails fast: one call past 0.3 s ends it."""
    return [f"runner.host={model_url}", "task.path=bench", "judge.model=qwen2.5", f"judge.host={judge_url}",
            "+judge.timeout_s=0.3", "+judge.max_consecutive_failures=1", "cache=false", f"outputs={outputs}"]
