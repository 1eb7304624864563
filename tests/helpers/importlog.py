"""A run of a one-sample benchmark whose custom_scorer.py begins with given code, against a server not there: what
the run said, and its benchrun.log (what the file printed as the run imported it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import run_benchrun


def run_importing(root: Path, code: str) -> tuple[subprocess.CompletedProcess, str]:
    """`python -m benchrun` in `root` of a benchmark whose custom_scorer.py begins with `code`; the run's result and
    its benchrun.log after the log line's time."""
    write_bench(root, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                    "  scorer: s\n",
                       "custom_scorer.py": f"{code}\n\n\ndef s(response, reference):\n    return 1\n"})
    done = run_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=root)
    [log] = (root / "outputs").glob("*/*/benchrun.log")
    return done, log.read_text(encoding="utf-8").split(" - ", 1)[-1]
