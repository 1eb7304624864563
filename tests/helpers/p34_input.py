"""Benchmarks for the thirty-fourth pass of what goes in."""

from __future__ import annotations

SHOT_TASK = ("- name: t\n  template: say {{a}}\n  values: {{a: [1]}}\n  reference: ['1']\n"
             "  fewshot: [{{values: {values}, assistant: '2'}}]\n")
"""A list-style tasks.yml of one task with one example of the values given (`.format(values=...)`)."""
