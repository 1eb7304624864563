"""The run directory: writing config, manifest, records, summary and run.json as a run goes."""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import uuid
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import IO, Any, Iterable

from benchrun.grading import FORMAT_VALID
from benchrun.manifest import Manifest
from benchrun.records import Counts, FileDigest, ResponseRecord, RunInfo, ScoreRecord, Status, Summary
from benchrun.summary import Tally

CONFIG, MANIFEST, RUN, SUMMARY = "config.yaml", "manifest.json", "run.json", "summary.json"
RESPONSES, SCORES = "responses.jsonl", "scores.jsonl"
RECORD_FILES = (RESPONSES, SCORES)
DIGESTS = "records.sha256"
"""One line per record line, `<file> <line number> <sha256 of the line>`, so verify can name the line that changed."""
PACKAGES = ("ollama", "httpx", "pydantic", "hydra-core", "omegaconf", "jsonschema", "tenacity", "rich")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def environment() -> dict[str, object]:
    """benchrun, Python and package versions, and the machine, for run.json."""
    return {
        "benchrun": _version("benchrun"), "python": platform.python_version(),
        "platform": platform.platform(), "hostname": socket.gethostname(),
        "packages": {name: _version(name) for name in PACKAGES},
    }


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file beside `path`, sync it, then rename it over `path`."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def file_digest(path: Path) -> FileDigest:
    """sha256, size and line count of a file, read in 1 MiB chunks."""
    sha, size, lines = hashlib.sha256(), 0, 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
            size += len(chunk)
            lines += chunk.count(b"\n")
    return FileDigest(sha256=sha.hexdigest(), size=size, lines=lines)


def count_response(counts: dict[str, int], response: ResponseRecord) -> None:
    """Add one response to run.json-style counts."""
    counts["responses"] += 1
    counts["request_errors"] += response.error is not None


def count_score(counts: dict[str, int], score: ScoreRecord, response_failed: bool) -> None:
    """Add one score line; a failed request is not also counted as a scorer error or an invalid format."""
    if not response_failed:
        counts["scorer_errors"] += score.error is not None
        counts["format_invalid"] += score.scorer == FORMAT_VALID and score.detail is not None


class RecordFile:
    """An append-only file that keeps its sha256, size and line count as it grows, and each line's digest."""

    def __init__(self, path: Path, digests: RecordFile | None = None, append: bool = True):
        self.name, self._digests = path.name, digests
        self._hash, self.size, self.lines = hashlib.sha256(), 0, 0
        if append and path.exists():
            self._absorb(path)
        self._file: IO[bytes] = open(path, "ab" if append else "wb")

    def _absorb(self, path: Path) -> None:
        with open(path, "rb") as handle:
            for line in handle:
                self._count(line)

    def _count(self, line: bytes) -> None:
        if self._digests is not None:
            self._digests.write(f"{self.name} {self.lines + 1} {hashlib.sha256(line).hexdigest()}\n".encode())
        self._hash.update(line)
        self.size += len(line)
        self.lines += line.count(b"\n")

    def write(self, line: bytes) -> None:
        """Append one line (newline included)."""
        self._file.write(line)
        self._count(line)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> FileDigest:
        self._file.close()
        return FileDigest(sha256=self._hash.hexdigest(), size=self.size, lines=self.lines)


class RunWriter:
    """Observes a run and keeps its directory current: records appended, status rewritten atomically."""

    def __init__(self, run_dir: Path, info: RunInfo):
        self.dir = run_dir
        self.info = info
        self._sinks: dict[str, RecordFile] = {}
        self._tally: Tally | None = None
        self.summary: Summary | None = None
        self._counts = info.counts.model_dump()

    def start(self, manifest: Manifest | None, config_yaml: str) -> None:
        """Write config.yaml, manifest.json and run.json (status running); open the record files."""
        self.dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.dir / CONFIG, config_yaml.encode("utf-8"))
        if manifest is not None:
            write_atomic(self.dir / MANIFEST, manifest.canonical_json())
            self._tally = Tally(t.name for t in manifest.tasks)
            self._open_sinks()
        self._write_info()

    def _open_sinks(self) -> None:
        """Open the record files for appending, and records.sha256 afresh with a digest of each line they hold."""
        digests = RecordFile(self.dir / DIGESTS, append=False)
        self._sinks = {name: RecordFile(self.dir / name, digests) for name in RECORD_FILES}
        self._sinks[DIGESTS] = digests

    def identified(self, identity: dict[str, Any], runner: dict[str, Any]) -> None:
        """Record the model's identity and the runner config as used (secrets excluded)."""
        self.info = self.info.model_copy(update={"identity": identity, "runner": runner})
        self._write_info()

    @property
    def counts(self) -> Counts:
        return Counts(**self._counts)

    def reopen(self, manifest: Manifest, responses: Iterable[ResponseRecord], scores: Iterable[ScoreRecord]) -> None:
        """Continue an existing run directory: its records counted and tallied, new ones appended."""
        self._tally = Tally(t.name for t in manifest.tasks)
        failed = set()
        for response in responses:
            count_response(self._counts, response)
            if response.error is not None:
                failed.add(response.id)
        for score in scores:
            self._tally.add(score)
            count_score(self._counts, score, score.id in failed)
        self._open_sinks()
        self._write_info()

    def record(self, response: ResponseRecord, scores: list[ScoreRecord]) -> None:
        """Append one sample's response and score lines, flushed."""
        self._sinks[RESPONSES].write(response.model_dump_json().encode() + b"\n")
        count_response(self._counts, response)
        self.record_scores(response, scores)

    def record_scores(self, response: ResponseRecord, scores: list[ScoreRecord]) -> None:
        """Append the score lines of a response already recorded, flushed after its response."""
        sink = self._sinks[SCORES]
        failed = response.error is not None
        for score in scores:
            sink.write(score.model_dump_json().encode() + b"\n")
            self._tally.add(score)
            count_score(self._counts, score, failed)
        for each in self._sinks.values():  # responses, scores, then the digests of their lines
            each.flush()

    def finish(self, status: Status, reason: str | None = None) -> RunInfo:
        """Close the records, write summary.json, then run.json with the final status and the digests of both."""
        files = {name: sink.close() for name, sink in self._sinks.items()}
        if self._tally is not None:
            self.summary = Summary(manifest_id=self.info.manifest_id, model=self.info.model,
                                   metrics=self._tally.summaries())
            data = self.summary.model_dump_json(indent=2).encode() + b"\n"
            write_atomic(self.dir / SUMMARY, data)
            files[SUMMARY] = FileDigest.of(data)
        self.info = self.info.model_copy(update={"status": status, "reason": reason, "ended_at": now(),
                                                 "files": files})
        self._write_info()
        return self.info

    def _write_info(self) -> None:
        self.info = self.info.model_copy(update={"counts": self.counts})
        write_atomic(self.dir / RUN, self.info.model_dump_json(indent=2).encode() + b"\n")
