"""Hostile input, twentieth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- `merge` of shard runs asked with other limits (shard 2/2 with `runner.retries=0 runner.max_response_bytes=1100
  runner.timeout_s=5`, as a slower node's run would be): the merged run.json's `runner` is the first shard's, and
  nothing said that half its answers were asked otherwise. Now each shard's runner is kept (`merged.shards[].runner`,
  `audit.merge`) and `show` and the report say where they differ (`shards asked with`, `audit.heading.parts`)

What held is in the pass's note.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from tests.helpers.commands import run_in_process


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def rows(cwd: Path, run_dir: Path, name: str) -> list[str]:
    """`show`'s rows of `name` (a row folded over lines joined), spaces squeezed."""
    shown = audit(cwd, "show", str(run_dir))
    assert shown.returncode == EXIT["ok"], shown.stderr
    found, taking = [], False
    for line in shown.stdout.splitlines():
        if line.startswith(name):
            found.append(line[len(name):].strip())
            taking = True
        elif taking and line.startswith(" ") and line.strip():
            found[-1] += " " + line.strip()
        else:
            taking = False
    return [" ".join(text.split()) for text in found]


# -- a merge of shards asked with other limits ---------------------------------------------------------------------

@pytest.mark.slow
def test_a_merge_of_shards_asked_with_other_limits_says_each_shards(tmp_path):
    """The merged run's runner was the first shard's (retries=2, max_response_bytes=8388608); nothing said that the
    second shard's nine answers were asked with retries=0 and max_response_bytes=1100."""
    first = run_in_process(tmp_path, "s1", "shard=1/2")
    second = run_in_process(tmp_path, "s2", "shard=2/2", "runner.retries=0", "runner.max_response_bytes=1100")
    merged = audit(tmp_path, "merge", str(first), str(second), "--into", str(tmp_path / "merged"))
    assert merged.returncode == EXIT["ok"], merged.stderr
    shards = json.loads((tmp_path / "merged" / "run.json").read_text())["merged"]["shards"]
    assert [(s["runner"]["retries"], s["runner"]["max_response_bytes"]) for s in shards] == [(2, 8388608), (0, 1100)]
    hosts = [json.loads((run / "run.json").read_text())["runner"]["host"] for run in (first, second)]
    assert rows(tmp_path, tmp_path / "merged", "shards asked with") == [
        f"1/2 retries=2 max_response_bytes=8388608 host={hosts[0]} 2/2 retries=0 max_response_bytes=1100 "
        f"host={hosts[1]}"]
    page = audit(tmp_path, "report", str(tmp_path / "merged"), "--output", str(tmp_path / "report.html"))
    assert page.returncode == EXIT["ok"], page.stderr
    assert (f"shards asked with</td><td><pre>1/2 retries=2 max_response_bytes=8388608 host={hosts[0]}  2/2 retries=0 "
            f"max_response_bytes=1100 host={hosts[1]}</pre>") in (tmp_path / "report.html").read_text()
    assert audit(tmp_path, "verify", str(tmp_path / "merged")).stdout.splitlines()[-1] == "intact"

