"""A benchmark of one judged task, for the forty-first pass of what goes in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchrun import BenchrunError, compile_plan
from tests.helpers.benchfiles import config, write_bench
from tests.helpers.judges import RESPONSE

JUDGED = "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n  scorer: contains\n  judge: j\n"
"""A list-style tasks.yml of one task of one sample, graded by judge `j`."""


def judged(response: str = RESPONSE, **judge: Any) -> dict[str, str]:
    """The files of `JUDGED`, its judge `j` in the seed's Verdict format (right: 1, wrong: 0) unless `judge` keys
    replace its own (None drops one), its formats `response` (custom_response.py)."""
    keys = {"name": "j", "rubric": "grade {response}", "format": "Verdict", "score": "verdict",
            "scores": {"right": 1, "wrong": 0}, **judge}
    return {"tasks.yml": JUDGED, "judges.yml": json.dumps([{k: v for k, v in keys.items() if v is not None}]),
            "custom_response.py": response}


def verdict(grade: str) -> str:
    """A custom_response.py whose format Verdict's grade field `verdict` is `grade` (`int = Field(ge=1, le=5)`), beside
    the seed's Enum Grade (right, wrong)."""
    return ("from enum import Enum\nfrom typing import Literal\n\nfrom pydantic import BaseModel, Field\n\n\n"
            "class Grade(str, Enum):\n    right = 'right'\n    wrong = 'wrong'\n\n\n"
            f"class Verdict(BaseModel):\n    verdict: {grade}\n")


def compile_refusal(root: Path, files: dict[str, str], *, judged_by: str | None = "m", **runner: Any) -> str:
    """The message compiling (in this process, as a dry run does) the benchmark `root/bench` made of `files` is
    refused with, its judge model `judged_by`, `runner` keys replacing the default runner's."""
    bench = write_bench(root, files)
    with pytest.raises(BenchrunError) as caught:
        compile_plan({**config(bench, **runner), "judge": {"model": judged_by}}, root)
    return str(caught.value)


def compiled_tasks(root: Path, files: dict[str, str]) -> list[str]:
    """The names of the tasks the benchmark `root/bench` made of `files` compiles to, judged by model `m`."""
    manifest = compile_plan({**config(write_bench(root, files)), "judge": {"model": "m"}}, root).manifest
    return [entry.name for entry in manifest.tasks]
