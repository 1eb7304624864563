"""Writing a run directory: the one writer of config, manifest, records, summary, run.json and the seal.

Whoever writes holds the directory's lock (`dirlock`) from before the first byte to after the last. A response
line is committed (its line and then its digest flushed) before its scorers run; one sample's score lines follow
the same way. Files that are rewritten (run.json, summary.json, the seal) are written whole or not at all
(`atomic`). A failed write is one line naming the file (`WriteFailed`), never a traceback or a temporary file left.
"""

from __future__ import annotations

import hashlib
import os
import platform
import uuid
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator

from benchrun.archive.atomic import write_atomic
from benchrun.archive.books import Books
from benchrun.archive.claims import HYDRA_DIR, holds_run, refusal, taken
from benchrun.archive.clockstep import WallWatch
from benchrun.archive.dirlock import DirLock, TakenOver, no_link, own_file
from benchrun.archive.filedigest import file_digest, hash_into
from benchrun.archive.ledger import digest_lines
from benchrun.core.errors import ArchiveError, RunDirTaken, WriteFailed, writing
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.layout import (
    CONFIG,
    DIGESTS,
    JUDGEMENTS,
    MANIFEST,
    RESERVE,
    RESPONSES,
    RUN,
    SCORES,
    SEAL,
    SUMMARY,
    Status,
)
from benchrun.core.records import (
    Counts,
    FileDigest,
    JudgementRecord,
    ResponseRecord,
    RunInfo,
    ScoreRecord,
    Seal,
    Summary,
)
from benchrun.core.secrets import SECRETS
from benchrun.core.text import host_name
from benchrun.core.versions import installed_version

if TYPE_CHECKING:
    from benchrun.archive.reader import Run
    from benchrun.core.manifest import Manifest

RESERVE_BYTES = 32 * 1024
"""Space a writer holds while it writes (layout.RESERVE), given back for the final run.json."""
PACKAGES = ("ollama", "httpx", "pydantic", "hydra-core", "omegaconf", "jsonschema", "tenacity", "rich")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def environment() -> dict[str, object]:
    """benchrun, Python and package versions, and the machine, for run.json."""
    return {
        "benchrun": installed_version("benchrun"), "python": platform.python_version(),
        "platform": platform.platform(), "hostname": host_name(),
        "packages": {name: installed_version(name) for name in PACKAGES},
    }


def write_seal(run_dir: Path, run_id: str, run_json: bytes, sealed_at: str,
               ready: Callable[[], None] | None = None) -> None:
    """seal.json, the last file a run's writer writes: the digest of its final run.json, `run_json` (`ready`: as
    write_atomic's)."""
    seal = Seal(run_id=run_id, sealed_at=sealed_at, run_json=FileDigest.of(run_json))
    write_atomic(run_dir / SEAL, seal.model_dump_json(indent=2).encode() + b"\n", ready=ready)


def final_config(run_dir: Path, info: RunInfo) -> dict[str, FileDigest]:
    """config.yaml's final digest: as the run wrote it at its start (an older run's, which holds none, as it is now)."""
    if info.config_digest:
        return {CONFIG: info.config_digest}
    return {CONFIG: file_digest(run_dir / CONFIG)} if (run_dir / CONFIG).is_file() else {}


class RecordFile:
    """An append-only file of whole lines that keeps its sha256, size and line count as it grows.

    Unbuffered: each `append` is one write of whole lines, so nothing of a record waits in memory."""

    def __init__(self, path: Path, fresh: bool = False):
        self.path, self.name = path, path.name
        self._hash, self.size, self.lines = hashlib.sha256(), 0, 0
        own_file(path)
        with writing(path):
            if not fresh and path.exists():
                self.size, self.lines = hash_into(self._hash, path)
            self._file: IO[bytes] = open(path, "wb" if fresh else "ab", buffering=0, opener=no_link)

    def append(self, data: bytes) -> None:
        """Write whole lines (each with its newline) in one write."""
        with writing(self.path):
            view = memoryview(data)
            while view:
                view = view[self._file.write(view):]
        self._hash.update(data)
        self.size += len(data)
        self.lines += data.count(b"\n")

    def close(self) -> FileDigest:
        """Close the file once what it holds is on the disk: a run's seal, written after, never outlives its records
        (a power cut keeps appends in memory for seconds)."""
        with writing(self.path):
            os.fsync(self._file.fileno())
            self._file.close()
        return FileDigest(sha256=self._hash.hexdigest(), size=self.size, lines=self.lines)

    def abandon(self) -> None:
        """Close without raising (after a failed write nothing more can go wrong here: nothing is buffered)."""
        try:
            self._file.close()
        except OSError:
            pass


class RunWriter:
    """Observes a run and keeps its directory current: records committed as they come, status rewritten atomically.

    `create` claims a new run directory, `reopen` an existing one (for resume); both hold its lock until `release`."""

    def __init__(self, run_dir: Path, info: RunInfo, lock: DirLock):
        self.dir, self.info, self.lock = run_dir, info, lock
        self._sinks: dict[str, RecordFile] = {}
        self._books: Books | None = None
        """What the records add up to, from when the run compiled."""
        self.summary: Summary | None = None
        self._broken = False
        self._taken = False
        """Whether another writer took the run over (`_held`): nothing of the run is this writer's to write."""
        self.finished = False
        """Whether `finish` wrote the final status (and the seal)."""
        self._clock = WallWatch(now())

    @classmethod
    def create(cls, run_dir: Path, info: RunInfo, chosen_by: str = HYDRA_DIR, sweep: Path | None = None) -> RunWriter:
        """Claim `run_dir` for a new run (a job of the sweep in `sweep`): refused when it holds a run, another process
        is writing it, or it is not the job's own folder (the refusal tells how to pick another with `chosen_by`, what
        named the directory)."""
        why = refusal(run_dir, chosen_by, sweep)
        if why:
            raise RunDirTaken(why)
        with writing(run_dir):
            run_dir.mkdir(parents=True, exist_ok=True)
        lock = DirLock(run_dir)
        try:
            lock.acquire(hint=f"pick a new directory ({chosen_by})")
        except WriteFailed:
            raise  # the disk's failure (no inode for the lock), not a directory taken
        except ArchiveError as err:
            raise RunDirTaken(str(err)) from None
        if holds_run(run_dir):
            lock.release()
            raise RunDirTaken(taken(run_dir, chosen_by))
        return cls(run_dir, info, lock)

    @classmethod
    def reopen(cls, run: Run, info: RunInfo, lock: DirLock, manifest: Manifest, wall_s: float | None) -> RunWriter:
        """Continue `run`, whose records were checked (and repaired) by the caller, who holds its lock: the reserve,
        the record files opened on what they hold, run.json as `info`. One that fails leaves none of it (no reserve)."""
        writer = cls(run.path, info, lock)
        writer._reserve()
        try:
            writer.open_records(manifest, run.responses(), run.scores(), wall_s, run.judgements())
        except BaseException:
            writer._let_go()
            raise
        return writer

    def start(self, config_yaml: str) -> None:
        """Write the reserve, config.yaml and run.json (status running, config.yaml's digest in it)."""
        data = config_yaml.encode("utf-8")
        with self._failing_writes():
            self._held()
            self._reserve()
            write_atomic(self.dir / CONFIG, data, ready=self._held)
        self.info = self.info.model_copy(update={"config_digest": FileDigest.of(data)})
        self._write_info()

    def _reserve(self) -> None:
        """Space set aside for the last run.json: a full disk still lets the run say it failed, and why. A disk too
        full for it keeps none of it (no part of a reserve is left behind)."""
        with writing(self.dir / RESERVE):
            try:
                with open(self.dir / RESERVE, "wb") as handle:
                    handle.write(bytes(RESERVE_BYTES))
            except OSError:
                (self.dir / RESERVE).unlink(missing_ok=True)
                raise

    def compiled(self, manifest: Manifest, wall_s: float | None = 0.0) -> None:
        """Write manifest.json, open the record files and record the manifest id and sample count (`wall_s`: the
        time spent asking before, None when unknown)."""
        with self._failing_writes():
            write_atomic(self.dir / MANIFEST, manifest.canonical_json(), ready=self._held)
        self.info = self.info.model_copy(update={"manifest_id": manifest.id})
        self.open_records(manifest, (), (), wall_s)

    def open_records(self, manifest: Manifest, responses: Iterable[ResponseRecord],
                     scores: Iterable[ScoreRecord], wall_s: float | None = 0.0,
                     judgements: Iterable[JudgementRecord] = ()) -> None:
        """Open the record files for appending; counts, tally and speed start from the records they already hold
        (`wall_s`: the time earlier sessions spent asking, None if unknown)."""
        self._books = Books(manifest, wall_s, self.info.shard)
        for response in responses:
            self._books.response(response)
        self._books.judgements(judgements)
        self._books.scores(scores)
        with self._failing_writes():
            self._sinks = {name: RecordFile(self.dir / name) for name in (*manifest.record_files, DIGESTS)}
        self._write_info()

    def identified(self, identity: dict[str, Any], runner: dict[str, Any]) -> None:
        """Record the model's identity and the runner config as used (secrets excluded)."""
        self.info = self.info.model_copy(update={"identity": identity, "runner": runner})
        self._write_info()

    def judged_by(self, identity: dict[str, Any], runner: dict[str, Any], allow_self: bool) -> None:
        """Record the judge model's identity and its runner config as used (secrets excluded)."""
        judge = {"identity": identity, "runner": runner, **({"allow_self": True} if allow_self else {})}
        self.info = self.info.model_copy(update={"judge": judge})
        self._write_info()

    def host_lost(self, host: str, why: str) -> None:
        """Note in run.json's history a server of the list lost mid-run (the run goes on with the others)."""
        self.info = self.info.model_copy(update={"history": (*self.info.history,
                                                             {"host_lost": host, "at": now(), "reason": why})})
        self._write_info()

    def note(self, entry: dict[str, Any]) -> None:
        """Note `entry` in run.json's history, with the time (`at`)."""
        self.info = self.info.model_copy(update={"history": (*self.info.history, {**entry, "at": now()})})
        self._write_info()

    def asking(self) -> None:
        """The first request goes out now: this session's wall time starts."""
        self._books.speed.start()

    @property
    def counts(self) -> Counts:
        return self.info.counts if self._books is None else self._books.counts()

    @property
    def ungraded(self) -> int:
        """Responses recorded whose scores are not (their scorers were still at work when the run stopped)."""
        return 0 if self._books is None else self._books.ungraded

    def record_response(self, response: ResponseRecord) -> None:
        """Commit one response line: the line flushed, then its digest."""
        with INTERRUPTS.held():
            self._commit(RESPONSES, [response.model_dump_json().encode() + b"\n"])
            self._books.response(response)
            if (history := self._clock.noted(self.info.history, now())) is not self.info.history:  # the clock went
                self.info = self.info.model_copy(update={"history": history})  # back: said now, lest a kill lose it
                self._write_info()

    def record(self, response: ResponseRecord, scores: list[ScoreRecord],
               judgements: list[JudgementRecord] = ()) -> None:
        """Commit a response and then its judgements and score lines."""
        self.record_response(response)
        self.record_scores(scores, judgements)

    def record_scores(self, scores: list[ScoreRecord], judgements: list[JudgementRecord] = ()) -> None:
        """Commit the judge calls of responses already recorded, then their score lines, each in one write (a judge's
        score follows its calls, so a kill between them leaves calls a resume reads again, never asks again)."""
        with INTERRUPTS.held():
            if judgements:
                self._commit(JUDGEMENTS, [call.model_dump_json().encode() + b"\n" for call in judgements])
                self._books.judgements(judgements)
            self._commit(SCORES, [score.model_dump_json().encode() + b"\n" for score in scores])
            self._books.scores(scores)

    def _commit(self, name: str, lines: list[bytes]) -> None:
        if SECRETS:  # a server that echoes the API key cannot put it in the archive
            lines = [SECRETS.scrub_bytes(line) for line in lines]
        with self._failing_writes():
            self._held()
            self._sinks[name].append(b"".join(lines))
            self._sinks[DIGESTS].append(digest_lines(name, lines))

    def finish(self, status: Status, reason: str | None = None) -> RunInfo:
        """Close the records, write summary.json, run.json with the final status, then the seal (last). After a
        failed write only run.json is written, into the space the reserve gave back."""
        with INTERRUPTS.held(), self._failing_writes():
            self._held()
            self._give_back_reserve()
            files = self._close_records()
            if self._books is not None and not self._broken:
                self.summary = self._books.summary(self.info.manifest_id, self.info.model)
                data = self.summary.model_dump_json(indent=2).encode() + b"\n"
                write_atomic(self.dir / SUMMARY, data, ready=self._held)
                files[SUMMARY] = FileDigest.of(data)
            ended = now()
            self.info = self.info.model_copy(update={"status": status, "reason": reason, "ended_at": ended, "files":
                                                     files, "history": self._clock.noted(self.info.history, ended)})
            run_json = self._write_info()
            if not self._broken:
                write_seal(self.dir, self.info.run_id, run_json, self.info.ended_at, self._held)
            self.finished = True
        return self.info

    def fail(self, reason: str) -> None:
        """Record `failed` as far as the disk still allows (after a failed write, run.json may be unwritable too)."""
        if self.finished:
            return
        try:
            self.finish("failed", reason)
        except WriteFailed:
            pass

    def _close_records(self) -> dict[str, FileDigest]:
        """The final digests of config.yaml (`final_config`) and the record files (none after a failed write)."""
        sinks, self._sinks = self._sinks, {}
        if self._broken:
            for sink in sinks.values():
                sink.abandon()
            return {}
        return {**final_config(self.dir, self.info), **{name: sink.close() for name, sink in sinks.items()}}

    def release(self) -> None:
        """Let go of the directory (the record files are closed first if still open)."""
        self._let_go()
        self.lock.release(ended=self.finished, stopped=not self.finished)

    def _let_go(self) -> None:
        """The record files left open abandoned, the reserve given back."""
        for sink in self._sinks.values():
            sink.abandon()
        self._sinks = {}
        with suppress(WriteFailed):  # a read-only file system: nothing more can be written, nor taken away
            if not self._taken:  # the reserve there is the writer's that took the run over
                self._give_back_reserve()

    def _give_back_reserve(self) -> None:
        with writing(self.dir / RESERVE):
            (self.dir / RESERVE).unlink(missing_ok=True)

    def _held(self) -> None:
        """Before each write (of a file rewritten whole, just before its new file is renamed over it): once another
        writer took the run over (this process stopped past its lease, `DirLock.still_held`), raise TakenOver, and
        write nothing more."""
        try:
            self.lock.still_held()
        except TakenOver:
            self._taken = True
            raise

    @contextmanager
    def _failing_writes(self) -> Iterator[None]:
        """Any write that fails in the block (a full disk, no inode left, a takeover) leaves the run broken: all that
        is written after it is run.json, into the room the reserve gives back (an inode too)."""
        try:
            yield
        except WriteFailed:
            self._broken = True
            raise

    def _write_info(self) -> bytes:
        self.info = self.info.model_copy(update={"counts": self.counts})
        data = SECRETS.scrub_bytes(self.info.model_dump_json(indent=2).encode() + b"\n")
        with self._failing_writes():
            write_atomic(self.dir / RUN, data, ready=self._held)
        self.lock.run_written()
        return data
