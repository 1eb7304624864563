"""Runs for the twenty-fourth hostile pass of the archive side: a finished run whose names (task, scorer, metric,
model) are the caller's, written with the archive's own writer, as a run by an older or hand-built benchrun could be;
and a record line of a run that did not end rewritten with its digest."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

from benchrun.archive.writer import RunWriter, now
from benchrun.core.manifest import FormatSpec, Manifest, RunnerSpec, Sample, ScorerSpec, TaskEntry
from benchrun.core.records import Counts, ResponseRecord, RunInfo, ScoreRecord


def named_run(run_dir: Path, values: tuple[float, ...] = (1, 0), task: str = "t", scorer: str = "s",
              metric: str = "s", model: str = "m") -> Path:
    """A completed, sealed run of `task` whose `scorer` gave `metric` the `values`, asked of `model`."""
    fmt = FormatSpec(name="FloatAnswer", origin="builtin", json_schema={"type": "object"})
    entry = TaskEntry(name=task, source="tasks.yml", template="a is {a}", reference="list", value_combinations="tuple",
                      format=fmt, scorers=(ScorerSpec(name=scorer, origin="custom_scorer.py", sha256="0" * 64),),
                      n_samples=len(values))
    samples = tuple(Sample(id=f"{task}:a={i}", task=task, prompt=f"a is {i}", values={"a": i}, reference=None)
                    for i in range(len(values)))
    manifest = Manifest(benchmark="named", config={}, files=(), runner=RunnerSpec(type="ollama", model=model),
                        tasks=(entry,), samples=samples)
    writer = RunWriter.create(run_dir, RunInfo(run_id="7" * 12, model=model, status="running", started_at=now(),
                                               benchmark="named", manifest_id=manifest.id, runner={}, environment={},
                                               counts=Counts(samples=len(values))))
    writer.start("task: {path: nowhere}\n")
    writer.compiled(manifest)
    for sample, value in zip(samples, values):
        writer.record(ResponseRecord(id=sample.id, task=task, text='{"answer": 1}', seconds=0.1, attempts=1),
                      [ScoreRecord(id=sample.id, task=task, scorer="format_valid", metrics={"format_valid": 1}),
                       ScoreRecord(id=sample.id, task=task, scorer=scorer, metrics={metric: value})])
    writer.finish("completed", None)
    writer.release()
    return run_dir


def rewrite_line(run_dir: Path, name: str, number: int, change: Callable[[bytes], bytes]) -> None:
    """Line `number` of record file `name` of a run that did not end changed by `change`, and its digest in
    records.sha256 with it (which no seal covers yet: anyone can have rewritten both)."""
    lines = (run_dir / name).read_bytes().splitlines(keepends=True)
    lines[number - 1] = change(lines[number - 1])
    (run_dir / name).write_bytes(b"".join(lines))
    digests = (run_dir / "records.sha256").read_text().splitlines(keepends=True)
    kind = {"responses.jsonl": "r", "scores.jsonl": "s", "judgements.jsonl": "j"}[name]
    at = [i for i, line in enumerate(digests) if line.startswith(f"{kind} ")][number - 1]
    digests[at] = f"{kind} {hashlib.sha256(lines[number - 1]).hexdigest()[:32]}\n"
    (run_dir / "records.sha256").write_text("".join(digests))
