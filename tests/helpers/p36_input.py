"""Benchmarks for the thirty-sixth pass of what goes in."""

from __future__ import annotations

LOCALE_SCORER = ("import locale\nlocale.setlocale(locale.LC_NUMERIC, 'C.UTF-8')\n\n\n"
                 "def s(response, reference):\n    return 1\n")
"""A custom_scorer.py that sets the process's locale of numbers as it is imported."""
FOLDER_SHOTS = {"tasks/t/template.txt": "say {a}", "tasks/t/values.csv": "a,reference\n1,1\n",
                "tasks/t/info.yml": "fewshot: {file: shots.jsonl}\n",
                "tasks/t/shots.jsonl": '{"a": 2, "answer": "2"}\n'}
"""A folder task whose info.yml names its few-shot file, in the task's folder, as if by the benchmark's path."""
