"""Reading what a run left (its record lines, its summary, each file against its schema) and writing synthetic runs
with the archive's own writer."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from benchrun.archive.writer import RunWriter, file_digest, now, write_atomic
from benchrun.core.manifest import FormatSpec, Manifest, RunnerSpec, Sample, ScorerSpec, TaskEntry
from benchrun.core.records import Counts, FileDigest, ResponseRecord, RunInfo, ScoreRecord, Seal
from benchrun.core.resources import schemas_dir


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def summary_of(run_dir: Path) -> dict[tuple[str, str], tuple]:
    """The metrics of `run_dir`'s summary.json: (task, metric) -> (n, mean, stderr, errors)."""
    data = json.loads((run_dir / "summary.json").read_text())
    return {(m["task"], m["metric"]): (m["n"], m["mean"], m["stderr"], m["errors"]) for m in data["metrics"]}


def validator(name: str) -> Draft202012Validator:
    """The validator of schemas/<name>.schema.json."""
    return Draft202012Validator(json.loads((schemas_dir() / f"{name}.schema.json").read_text()))


ANSWER_S = 0.1
"""How long each answer of a `synthetic_run` took; the run's wall time is that (answers asked at once): a real
writer's is at least its longest answer's."""


def synthetic_run(run_dir: Path, values: list[Any], finish: bool = True, config: str = "task: {path: nowhere}\n",
                  reference: Any = None, status: str = "completed", reason: str | None = None, **info: Any) -> Path:
    """A run of task `t` (value `a` = 0, 1, ...) whose scorer `closeness` gave `values`, written with RunWriter and
    ended with `status`; unless `finish`, left as if killed after its last record. `info` sets run.json fields
    (run_id, model, identity, label, varied, ...)."""
    fmt = FormatSpec(name="FloatAnswer", origin="builtin", json_schema={"type": "object"})
    task = TaskEntry(name="t", source="tasks.yml", template="a is {a}", reference="list", value_combinations="tuple",
                     format=fmt, scorers=(ScorerSpec(name="closeness", origin="custom_scorer.py", sha256="0" * 64),),
                     n_samples=len(values))
    manifest = Manifest(benchmark="synthetic", config={}, files=(), runner=RunnerSpec(type="ollama", model="m"),
                        tasks=(task,), samples=tuple(Sample(id=f"t:a={i}", task="t", prompt=f"a is {i}",
                                                            values={"a": i}, reference=reference)
                                                     for i in range(len(values))))
    info = RunInfo(**{"run_id": "5" * 12, "model": "m", **info}, status="running", started_at=now(),
                   benchmark="synthetic", manifest_id=manifest.id, runner={}, environment={},
                   counts=Counts(samples=len(values)))
    writer = RunWriter.create(run_dir, info)
    writer.start(config)
    writer.compiled(manifest, wall_s=ANSWER_S if values else 0.0)
    for sample, value in zip(manifest.samples, values):
        response = ResponseRecord(id=sample.id, task="t", text='{"answer": 1}', seconds=ANSWER_S, attempts=1)
        writer.record(response, [ScoreRecord(id=sample.id, task="t", scorer="format_valid",
                                             metrics={"format_valid": 1}),
                                 ScoreRecord(id=sample.id, task="t", scorer="closeness", metrics={"closeness": value})])
    info = writer.finish(status, reason)
    writer.release()
    if not finish:  # as a killed run leaves it: run.json as written at the start, no summary.json or seal, and in
        unfinished = info.model_copy(update={"status": "running", "ended_at": None, "files": {}})  # run.lock the
        write_atomic(run_dir / "run.json", unfinished.model_dump_json(indent=2).encode())  # note of its dead writer
        (run_dir / "summary.json").unlink()
        (run_dir / "seal.json").unlink()
        left_by_dead_writer(run_dir)
    return run_dir


DEAD_WRITER = {"pid": 4242, "host": "gpu1", "since": "2026-12-01T08:00:00+00:00", "command": "python -m benchrun"}
"""The note a killed writer left in the run.lock of a `synthetic_run(finish=False)`."""


def left_by_dead_writer(run_dir: Path) -> None:
    """run.lock as DEAD_WRITER (on another machine) left it when it was killed: its note, its lease last renewed
    then."""
    lock = run_dir / "run.lock"
    lock.write_text(json.dumps(DEAD_WRITER))
    since = datetime.fromisoformat(DEAD_WRITER["since"]).timestamp()
    os.utime(lock, (since, since))


def reseal(run_dir: Path, *names: str) -> None:
    """Digest files `names` of a finished run again in run.json, and seal that: the run as a writer that wrote them
    so would have left it (an older benchrun's summary.json, say), which every reader then trusts."""
    info = json.loads((run_dir / "run.json").read_text())
    info["files"].update({name: file_digest(run_dir / name).model_dump() for name in names})
    run_json = json.dumps(info, indent=2).encode()
    write_atomic(run_dir / "run.json", run_json)
    seal = Seal.model_construct(run_id=info["run_id"], sealed_at=info["ended_at"],  # whatever run.json says
                                run_json=FileDigest.of(run_json))
    write_atomic(run_dir / "seal.json", seal.model_dump_json(indent=2).encode() + b"\n")


def another_run(run_dir: Path, copy: Path) -> Path:
    """`run_dir` copied to `copy` as a run of another id (666666666666), sealed: a run to compare it with (copies of
    one run id are refused)."""
    shutil.copytree(run_dir, copy, symlinks=True)
    info = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**info, "run_id": "6" * 12}, indent=2))
    reseal(copy)
    return copy


def replace_manifest(run_dir: Path, change) -> None:
    """`run_dir`'s manifest.json changed by `change` (its data, changed in place), its id in run.json and the seal made
    to match: a run as a writer that wrote it so would have left it (a shared archive's run may be anyone's)."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    change(manifest)
    data = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    (run_dir / "manifest.json").write_bytes(data)
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "manifest_id": hashlib.sha256(data).hexdigest()}))
    reseal(run_dir)
