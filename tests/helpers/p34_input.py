"""Benchmarks for the thirty-fourth pass of what goes in."""

from __future__ import annotations

SHOT_TASK = ("- name: t\n  template: say {{a}}\n  values: {{a: [1]}}\n  reference: ['1']\n"
             "  fewshot: [{{values: {values}, assistant: '2'}}]\n")
"""A list-style tasks.yml of one task with one example of the values given (`.format(values=...)`)."""
FORMAT_TASK = "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n  format: F\n"
"""A list-style tasks.yml of one task answered in the format F of custom_response.py."""
FOLDER_TASK = {"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,reference\n1,1\n",
               "tasks.yml": "- name: u\n  template: x {a}\n  values: {a: [2]}\n  reference: ['2']\n"}
"""A benchmark of a folder task t and a list-style task u, one sample each."""
JUDGED_TASK = "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n  judge: j\n"
"""A list-style tasks.yml of one task graded by the judge j."""


def judges(scores: str) -> str:
    """A judges.yml of the judge j, answering YesNoAnswer, its grades scored by `scores` (YAML)."""
    return f"- name: j\n  rubric: 'grade {{response}}'\n  format: YesNoAnswer\n  score: answer\n  scores: {scores}\n"
