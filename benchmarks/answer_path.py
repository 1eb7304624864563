"""benchrun's own cost per answer, stage by stage, in this process (issue 23).

    python benchmarks/answer_path.py [--n N] [--repeats R]

On the N answers of run_bench's benchmark ("find the product of {a} and 7", format IntAnswer), each stage as the
answer path runs it, timed over all N answers, best and median of R rounds, in µs per answer:
- format check: jsonschema alone (iter_errors + best_match, as before issue 23) against execute.formatcheck
  (jsonschema-rs in front, jsonschema for an invalid answer);
- scorer call: a user scorer (custom_scorer.py's calculated_answer) through the scorer process, as every scorer
  was before issue 23, against a built-in (exact_match) called in the run's process, as it is now;
- commit: the response line, its score lines and their digests into a real run directory, each answer's scores in a
  write of their own, or those of 8 answers together (the executor commits the gradings done by then together);
- cache lookup: each answer's cache key, then the batched lookup of LOOKUP_BATCH keys in an empty cache.
Whole runs against the bare loop are benchmarks/run_bench.py's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from run_bench import write_benchmark

import benchrun
from benchrun.archive.writer import RunWriter, environment, new_run_id, now
from benchrun.compiler.plan import Plan
from benchrun.compiler.scoring import BUILTIN, source_sha256
from benchrun.core.manifest import Sample, ScorerSpec
from benchrun.core.records import Counts, ResponseRecord, RunInfo, ScoreRecord
from benchrun.execute.cache import LOOKUP_BATCH, Repeat, RunCache, Store
from benchrun.execute.formatcheck import FormatCheck
from benchrun.execute.grading import Grader


def per_answer(fn: Callable[[], None], n: int, repeats: int) -> tuple[float, float]:
    """(best, median) µs per answer of `fn`, which handles all n answers once."""
    rounds = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        rounds.append((time.perf_counter() - started) / n * 1e6)
    return min(rounds), statistics.median(rounds)


def jsonschema_only(schema: dict) -> Callable[[str], str | None]:
    """The format check before issue 23: jsonschema's iter_errors and best_match on every answer."""
    validator = Draft202012Validator(schema)

    def problem(text: str) -> str | None:
        error = best_match(validator.iter_errors(json.loads(text)))
        return None if error is None else error.message
    return problem


def answers(plan: Plan) -> list[tuple[Sample, ResponseRecord]]:
    """Each sample with a right answer, as the runner would have given it."""
    found = []
    for sample in plan.manifest.samples:
        text = json.dumps({"answer": sample.values["a"] * sample.values["b"]})
        found.append((sample, ResponseRecord(id=sample.id, task=sample.task, text=text, seconds=0.01, attempts=1,
                                             prompt_tokens=12, completion_tokens=5)))
    return found


def grading(plan: Plan, scorer: str, given: list[tuple[Sample, ResponseRecord]], log: Path) -> Callable[[], None]:
    """Every answer graded by `scorer` alone (and format_valid), as the executor does: started, then collected."""
    tasks = [task.model_copy(update={"scorers": tuple(s for s in task.scorers if s.name == scorer)})
             for task in plan.manifest.tasks]
    manifest = plan.manifest.model_copy(update={"tasks": tuple(tasks)})

    async def graded() -> None:
        async with Grader(manifest, plan.scorers, log, 10.0) as grader:
            started = [grader.start(sample, response) for sample, response in given]
            grader.send()
            for one in started:
                await one.scores()
    return lambda: asyncio.run(graded())


def with_builtin(plan: Plan) -> Plan:
    """The plan with exact_match beside calculated_answer, so both can be timed on the same answers."""
    spec = ScorerSpec(name="exact_match", origin="builtin", sha256=source_sha256(BUILTIN["exact_match"]))
    tasks = [task.model_copy(update={"scorers": (*task.scorers, spec)}) for task in plan.manifest.tasks]
    manifest = plan.manifest.model_copy(update={"tasks": tuple(tasks)})
    return Plan(manifest, {**plan.scorers, "exact_match": BUILTIN["exact_match"]}, plan.bench_dir,
                plan.scorer_timeout_s)


def commits(plan: Plan, given: list[tuple[Sample, ResponseRecord]], root: Path, together: int = 1) -> Callable[[], None]:
    """Every answer and its score lines committed by a RunWriter into a fresh run directory: each response line in
    a write of its own, the score lines of `together` answers in one (as the executor commits gradings done by
    then)."""
    rounds = iter(range(10**6))

    def commit() -> None:
        info = RunInfo(run_id=new_run_id(), status="running", started_at=now(), benchmark="b", model="m",
                       manifest_id=None, overrides=(), cwd=str(root), runner={}, environment=environment(),
                       counts=Counts(samples=0))
        writer = RunWriter.create(root / f"run{together}-{next(rounds)}", info)
        writer.compiled(plan.manifest)
        waiting: list[ScoreRecord] = []
        for n, (sample, response) in enumerate(given, 1):
            of = {"id": sample.id, "task": sample.task, "repeat": 0}
            writer.record_response(response)
            waiting += [ScoreRecord.model_construct(**of, scorer="format_valid", metrics={"format_valid": 1},
                                                    detail=None),
                        ScoreRecord.model_construct(**of, scorer="calculated_answer", metrics={"calculated_answer": 1})]
            if n % together == 0 or n == len(given):
                writer.record_scores(waiting)
                waiting = []
        writer.finish("completed")
        writer.release()
    return commit


def lookups(plan: Plan, root: Path) -> Callable[[], None]:
    """Each answer's cache key, and the batched lookups of an empty cache."""
    store = Store(root / "cache")
    cache = RunCache(store, "ollama", {"digest": "sha256:0"}, {"options": {}}, "m", "run", 2**23,
                     "runner.max_response_bytes")
    task = plan.manifest.tasks[0]
    schema = task.format.json_schema

    def look() -> None:
        keys = [cache.key(task.messages(s.prompt), schema, Repeat(0, 0)) for s in plan.manifest.samples]
        for at in range(0, len(keys), LOOKUP_BATCH):
            cache.get_many(keys[at:at + LOOKUP_BATCH])
    return look


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        bench = write_benchmark(root, args.n)
        plan = with_builtin(benchrun.compile_plan({"task": {"path": str(bench), "name": "b", "only": None},
                                                   "runner": {"type": "ollama", "model": "m"}}, root))
        given = answers(plan)
        schema = plan.manifest.tasks[0].format.json_schema
        texts = [response.text for _, response in given]
        before, after = jsonschema_only(schema), FormatCheck(schema).problem
        stages = {
            "format check, jsonschema alone (before)": lambda: [before(t) for t in texts],
            "format check, jsonschema-rs in front (after)": lambda: [after(t) for t in texts],
            "scorer call through the scorer process (a user scorer; before: every scorer)":
                grading(plan, "calculated_answer", given, root / "a.log"),
            "scorer call in the run's process (a built-in, after)": grading(plan, "exact_match", given, root / "b.log"),
            "commit: response, 2 score lines, their digests, each answer's scores alone": commits(plan, given, root),
            "commit: as above, the scores of 8 answers in one write": commits(plan, given, root, together=8),
            "cache: key and batched lookup, empty cache": lookups(plan, root),
        }
        print(f"{args.n} answers, best and median of {args.repeats} rounds, µs per answer "
              f"(the grading rows include format_valid and the grader's own bookkeeping)")
        for name, fn in stages.items():
            best, median = per_answer(fn, args.n, args.repeats)
            print(f"  {name:<80} {best:8.1f} {median:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
