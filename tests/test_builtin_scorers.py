"""benchrun's own scorers are called in the run's process, the user's in the scorer process: the same scores either
way, no process for a benchmark of built-ins, and a custom_scorer.py function named like a built-in is user code."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from benchrun.compiler.plan import compiled
from benchrun.core.records import ResponseRecord
from benchrun.execute.grading import Grader
from tests.helpers.benchfiles import task, tasks_yml, write_bench

CHATTY_CONTAINS = """import json

def contains(response, reference):
    print("the user's contains, in the scorer process")
    return int(str(reference) in response)
"""


def grade(cfg, log: Path, answers: dict[str, str]) -> dict[tuple[str, str], object]:
    """Each sample's answer graded: (sample id, scorer) -> its metrics (or error type)."""
    plan = compiled(cfg)

    async def graded() -> dict[tuple[str, str], object]:
        found = {}
        async with Grader(plan.manifest, plan.scorers, log, 5.0) as grader:
            for sample in plan.manifest.samples:
                response = ResponseRecord(id=sample.id, task=sample.task, text=answers[sample.id], seconds=0.1,
                                          attempts=1)
                for record in (await grader.grade(sample, response)).records:
                    found[sample.id, record.scorer] = record.metrics or record.error.type
        return found

    return asyncio.run(graded())


def test_builtin_scorers_need_no_scorer_process(tmp_path, compose_cfg):
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorer=["exact_match", "contains"],
                                                               reference=["1", "two"]))})
    log = tmp_path / "benchrun.log"
    found = grade(compose_cfg(f"task.path={bench}"), log, {"t:a=1": json.dumps({"answer": "1"}), "t:a=2": json.dumps({"answer": "Two!"})})
    assert found == {("t:a=1", "format_valid"): {"format_valid": 1}, ("t:a=1", "exact_match"): {"exact_match": 1},
                     ("t:a=1", "contains"): {"contains": 1}, ("t:a=2", "format_valid"): {"format_valid": 1},
                     ("t:a=2", "exact_match"): {"exact_match": 0}, ("t:a=2", "contains"): {"contains": 1}}
    assert not log.exists(), "no scorer process was started (it would have opened its log)"


def test_a_users_scorer_named_like_a_builtin_runs_in_the_scorer_process(tmp_path, compose_cfg):
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorer="contains")),
                                   "custom_scorer.py": CHATTY_CONTAINS})
    log = tmp_path / "benchrun.log"
    found = grade(compose_cfg(f"task.path={bench}"), log, {"t:a=1": '{"answer": "1"}', "t:a=2": '{"answer": "1"}'})
    assert (found["t:a=1", "contains"], found["t:a=2", "contains"]) == ({"contains": 1}, {"contains": 0})
    assert log.read_text() == "the user's contains, in the scorer process\n" * 2
