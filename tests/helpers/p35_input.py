"""Benchmarks for the thirty-fifth pass of what goes in."""

from __future__ import annotations

SAMPLED_TASK = "- name: t\n  template: say {{a}}\n  values: {{a: [1]}}\n  reference: ['1']\n  sample: {sample}\n"
"""A list-style tasks.yml of one task of one sample, sampled as `sample` (YAML) says (`.format(sample=...)`)."""
ONE_GRADE = ("from typing import Literal\nfrom pydantic import BaseModel\n\n\nclass Graded(BaseModel):\n"
             "    grade: Literal['ok']\n")
"""A custom_response.py of a judge's format whose grade field takes one value alone."""
VALUES_FILE_TASK = "- name: t\n  template: say {a}\n  values_file: v.csv\n"
"""A list-style tasks.yml of one task whose values are v.csv's."""
