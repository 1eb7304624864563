"""Runs for the twenty-ninth hostile pass of the archive side: a run of the judged benchmark rescored with --rejudge,
and a rescore's judge calls rewritten with their digest in rescore.json made to match."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from benchrun.testing.inprocess import cli
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.p26_archive import sealed_line
from tests.helpers.p28_archive import redigested


def rejudged(root: Path, *overrides: str) -> Path:
    """A run of the judged benchmark (three samples, judge `names`) under `root`, rescored once with --rejudge and
    `overrides` (judge.KEY=VALUE)."""
    write_bench(root, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        ran = cli(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                  f"outputs={root / 'outputs'}", cwd=root)
        run_dir = run_dir_of(ran.stdout)
        done = audit(root, "rescore", str(run_dir), "--rejudge", f"judge.host={server.url}", *overrides)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return run_dir


def calls_rewritten(rescore: Path, change: Callable[[list[dict]], None]) -> None:
    """`rescore`'s judgements.jsonl, its lines read and changed by `change` (in place), and its digest made to match."""
    path = rescore / "judgements.jsonl"
    calls = [json.loads(line) for line in path.read_text().splitlines()]
    change(calls)
    path.write_text("".join(json.dumps(call) + "\n" for call in calls))
    redigested(rescore, "rescore.json", lambda info: None)


def failed(cwd: Path, run_dir: Path) -> list[str]:
    """The FAIL lines of `verify run_dir`, which must exit not intact."""
    done = audit(cwd, "verify", str(run_dir))
    assert (done.returncode, done.stderr) == (1, ""), done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith("FAIL")]


def grades_swapped(calls: list[dict]) -> None:
    """The grades of the judge's calls on the second and third answers swapped (their replies too): the judge's mean
    and its agreement with `contains` stay what summary.json says; its score lines of them no longer follow."""
    for field in ("reply", "grade", "value"):
        calls[1][field], calls[2][field] = calls[2][field], calls[1][field]


def run_grades_swapped(run_dir: Path) -> None:
    """`grades_swapped` on the run's own judgements.jsonl, its digests and the seal redone: every digest matches."""
    calls = [json.loads(line) for line in (run_dir / "judgements.jsonl").read_text().splitlines()]
    grades_swapped(calls)
    for number in (2, 3):
        sealed_line(run_dir, "judgements.jsonl", number,
                    lambda line, call=calls[number - 1]: json.dumps(call, separators=(",", ":")).encode() + b"\n")
