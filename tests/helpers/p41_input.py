"""A benchmark of one judged task, for the forty-first pass of what goes in."""

from __future__ import annotations

import json
from typing import Any

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
