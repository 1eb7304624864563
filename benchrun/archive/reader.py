"""Reading run directories: `load_run(path)` (finding runs under an archive root: `archive.lookup`).

The one reader of the archive: every audit command, the sweep summary and the report read run directories through
it, so a run that cannot be read is reported the same way everywhere."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from pydantic import ValidationError

from benchrun.archive.atomic import merging_left
from benchrun.archive.jsononce import as_model, given_once
from benchrun.archive.manifestbound import MANIFEST_CEILING, manifest_ceiling
from benchrun.archive.pathmax import unopened
from benchrun.archive.shapes import not_a_manifest
from benchrun.archive.standins import NOT_THE_ID, stood_in
from benchrun.core.errors import ArchiveError, BenchrunError, ConfigError, problem_line, reading
from benchrun.core.filebytes import CHUNK_BYTES, MAX_JSON_BYTES, kept_elsewhere, read_bounded, regular_file
from benchrun.core.layout import (
    CONFIG,
    JUDGEMENTS,
    MANIFEST,
    NEWER_VERSION,
    OUTPUTS,
    RECORD_FILES,
    RESPONSES,
    RUN,
    SCORES,
    SEAL,
    SUMMARY,
    unknown_version,
)
from benchrun.core.records import JudgementRecord, Number, ResponseRecord, RunInfo, ScoreRecord, Seal, Summary
from benchrun.core.recordvalues import model_digest
from benchrun.core.resources import bench_dir
from benchrun.core.text import NotJSON

if TYPE_CHECKING:
    import pandas

    from benchrun.archive.trust import Trust
    from benchrun.core.manifest import Manifest

PathLike = str | os.PathLike[str]
"""What every function that takes a path accepts."""
DEFAULT_ROOT = Path(OUTPUTS)
PANDAS_INSTALL = "pip install 'benchrun[pandas]'"
Values = dict[tuple[str, str], dict[str, Number]]
"""(task, metric) -> sample id -> value (with repeats, the mean of the sample's answers)."""


def _mean(n: int, total: Fraction) -> Number:
    mean = total / n
    return int(mean) if mean.denominator == 1 else float(mean)


class Run:
    """One run directory, read lazily: run.json at once, the rest when asked, records streamed."""

    def __init__(self, path: Path, info: RunInfo):
        self.path = path
        self.info = info
        self._trust: Trust | None = None

    @property
    def id(self) -> str:
        return self.info.run_id

    @property
    def label(self) -> str:
        """What tables call the run: a sweep job's label (what varied), else its model."""
        return self.info.label or self.info.model

    @property
    def model_digest(self) -> str | None:
        """Which model answered (see `model_digest`)."""
        return model_digest(self.info.identity)

    @cached_property
    def _manifest_read(self) -> tuple[bytes, Any, str | None]:
        """manifest.json's bytes, read whole only once its sha256, taken in pieces, is the run's manifest id (a planted
        file of gigabytes, a killed run's, which no seal covers, is one line, never held); its JSON, parsed once; and
        why it is no JSON (None when it is). ArchiveError when it gives a key twice in one object."""
        path = self.path / MANIFEST
        if not os.path.lexists(path):
            raise ArchiveError("missing", file=str(path))
        data = archived(path, _manifest_size(path, self.info.manifest_id, self.manifest_ceiling))
        if hashlib.sha256(data).hexdigest() != self.info.manifest_id:  # changed between the two reads
            raise _not_the_runs(path, self.info.manifest_id)
        try:
            return data, given_once(data), None
        except NotJSON as err:
            raise ArchiveError(f"unreadable: {err}", file=str(path)) from None
        except (ValueError, RecursionError) as err:
            return data, None, "nested too deep" if isinstance(err, RecursionError) else str(err)

    @cached_property
    def manifest_ceiling(self) -> int:
        """The most bytes this run's manifest can hold (`manifest_ceiling`, from run.json's samples and config.yaml's
        limits; the defaults' when config.yaml is unreadable or not of the size run.json records, which is said of it
        on its own, and a planted one of megabytes is never parsed for this)."""
        recorded = self.info.files.get(CONFIG) or self.info.config_digest
        try:
            config = self.config if recorded and (self.path / CONFIG).stat().st_size == recorded.size else {}
        except (BenchrunError, OSError):
            config = {}
        return manifest_ceiling(self.info.counts.samples, config)

    def manifest_sha256(self) -> str:
        """manifest.json's sha256 (`manifest_sha256`), refused unhashed when it is larger than the run's can be."""
        return manifest_sha256(self.path / MANIFEST, self.manifest_ceiling)

    @property
    def manifest_bytes(self) -> bytes:
        """manifest.json's bytes, once they are the run's and give each key once (`_manifest_read`)."""
        return self._manifest_read[0]

    @cached_property
    def manifest(self) -> Manifest:
        from benchrun.core.manifest import Manifest  # loaded only when a command needs the whole manifest

        try:  # from its bytes: pydantic reads a manifest from JSON in two thirds of the time it takes from Python data
            return Manifest.model_validate_json(self.manifest_bytes)
        except ValidationError as err:
            raise ArchiveError(f"not a valid manifest: {validation_said(err)}", file=str(self.path / MANIFEST)) from None

    def manifest_data(self) -> dict[str, Any]:
        """manifest.json as plain JSON data, not validated as a whole: several times faster than `manifest` for large
        runs, for readers that need a few fields (task names, prompts, values), whose shapes are checked
        (`not_a_manifest`). The JSON `_manifest_read` parsed (shared: readers do not change it)."""
        return self._manifest_shaped

    @cached_property
    def _manifest_shaped(self) -> dict[str, Any]:
        """manifest.json's JSON, refused (ArchiveError) when it is not JSON or not shaped as a manifest."""
        _, data, why = self._manifest_read
        if why is not None:
            raise ArchiveError(f"not valid JSON: {why}", file=str(self.path / MANIFEST))
        if (why := not_a_manifest(data)) is not None:
            raise ArchiveError(f"not a manifest: {why}", file=str(self.path / MANIFEST))
        return data

    @cached_property
    def summary(self) -> Summary | None:
        """summary.json, when it is the run's own: the one run.json's final digests name. A run that did not end has
        none (one there is an earlier session's, left by a resume that was killed, or planted): its metrics and speed
        are tallied from its records; None."""
        return self._model(SUMMARY, Summary) if SUMMARY in self.info.files else None

    @cached_property
    def seal(self) -> Seal | None:
        """seal.json (written last when the run ended); None when there is none."""
        return self._model(SEAL, Seal)

    def _model(self, name: str, model: type) -> Any:
        """`name` read as `model`; None when there is none (a directory or a pipe in its place is an ArchiveError)."""
        path = self.path / name
        if not os.path.lexists(path):
            return None
        try:
            return archived_model(path, model)
        except ValueError as err:
            why = stood_in(path) or (validation_said(err) if isinstance(err, ValidationError) else err)
            raise ArchiveError(f"unreadable: {why}", file=str(path)) from None

    def require_records(self, force: bool = False) -> Run:
        """This run, if its record files are there (a run that compiled must have both) and, unless `force`, match
        the digests written with them (`unverified`); else ArchiveError naming the run and the first file at fault (a
        pipe or a folder in a record file's place is not gone: `unverified` says what is there, reading refuses it)."""
        missing = [name for name in RECORD_FILES if not os.path.lexists(self.path / name)]
        if self.info.manifest_id is not None and missing:
            why = kept_elsewhere(self.path / missing[0]) or "its records are gone"
            raise ArchiveError(f"run {self.id} has no {' or '.join(missing)}: {why}", file=str(self.path))
        if self.unverified and not force:
            from benchrun.archive.headline import distrusted
            raise distrusted(self, self.unverified[0])
        return self

    def require_manifest(self) -> Run:
        """This run, once its manifest (of a run that compiled) is one this benchrun reads (`manifest_data`: its
        schema_version one it knows), else ArchiveError, as every reader of its samples refuses it."""
        if self.info.manifest_id is not None:
            self.manifest_data()
        return self

    def trust(self) -> Trust:
        """The run checked against its digests (benchrun.archive.trust), again once a file of it changed."""
        from benchrun.archive.trust import checked

        self._trust = checked(self, self._trust)
        return self._trust

    @property
    def response_lines(self) -> int:
        """The response lines a reader reads: run.json's count, which its writer rewrites as it ends; of a run that has
        not ended (killed, or being written now), whose run.json counts what its writer found as it started, those its
        records.sha256 covers."""
        if self.info.status != "running":
            return self.info.counts.responses
        from benchrun.archive.trust import covered

        return covered(self, RESPONSES)

    @property
    def unverified(self) -> list[str]:
        """What of the run does not match the digests written with it (`file: why`)."""
        return list(self.trust().problems)

    @cached_property
    def config(self) -> dict[str, Any]:
        """config.yaml, read as a benchmark's YAML is (aliases refused, nesting bounded): a mapping, else
        ArchiveError."""
        from benchrun.core.yamlfile import load_yaml  # only the commands that look at config.yaml pay for yaml

        path = self.path / CONFIG
        if not path.is_file():
            raise ArchiveError("missing", file=str(path))
        data = load_yaml(path, str(path), ArchiveError, saved=False) or {}
        if not isinstance(data, dict):
            raise ArchiveError("not a config: not a mapping", file=str(path))
        return data

    def bench_dir(self, fallback: PathLike | None = None) -> Path:
        """The run's benchmark directory: its task.path, resolved where the run was started, else in `fallback`."""
        task = self.config.get("task")
        path = task.get("path") if isinstance(task, dict) else None
        if not isinstance(path, str):
            raise ArchiveError("no task.path: the benchmark cannot be located", file=str(self.path / CONFIG))
        cwds = [Path(self.info.cwd)] if self.info.cwd else []
        for cwd in [*cwds, fallback or Path.cwd()]:
            try:
                return bench_dir(path, cwd)
            except ConfigError as err:
                problem = err
        raise problem

    def responses(self) -> Iterator[ResponseRecord]:
        """responses.jsonl, one record at a time."""
        return self._records(RESPONSES, ResponseRecord)

    def scores(self) -> Iterator[ScoreRecord]:
        """scores.jsonl, one record at a time."""
        return self._records(SCORES, ScoreRecord)

    def judgements(self) -> Iterator[JudgementRecord]:
        """judgements.jsonl (a run with judges), one record at a time; none in a run without (one there is not its)."""
        return self._records(JUDGEMENTS, JudgementRecord) if self.info.judge else iter(())

    def metric_values(self) -> Values:
        """Every sample's value by (task, metric) and sample id, with repeats the mean of its answers' values
        (exact: a whole mean stays an int); failed scorers give no value."""
        sums: dict[tuple[str, str], dict[str, tuple[int, Fraction]]] = {}
        for record in self.scores():
            for metric, value in (record.metrics or {}).items():
                by_sample = sums.setdefault((record.task, metric), {})
                n, total = by_sample.get(record.id, (0, Fraction(0)))
                by_sample[record.id] = n + 1, total + Fraction(value)
        return {key: {sample: _mean(n, total) for sample, (n, total) in by_sample.items()}
                for key, by_sample in sums.items()}

    def to_pandas(self, text: bool = False) -> pandas.DataFrame:
        """One row per sample x metric, with the columns of `benchrun-audit export` (`text`: also prompt and
        response). Needs pandas (`pip install 'benchrun[pandas]'`), imported only here."""
        try:
            import pandas
        except ImportError:
            raise BenchrunError(f"to_pandas needs pandas: {PANDAS_INSTALL}") from None
        from benchrun.archive.rows import columns, export_rows

        return pandas.DataFrame(list(export_rows(self, text)), columns=columns([self], text))

    def _records(self, name: str, model: type) -> Iterator[Any]:
        path = self.path / name
        if not path.is_file():
            return
        validate = model.__pydantic_validator__.validate_json  # model_validate_json without its Python frame
        from benchrun.archive.trust import covered

        with reading(path), open(path, "rb") as handle:
            try:
                for line in itertools.islice(handle, covered(self, name)):
                    yield _given_once(validate(line, strict=True), line)
            except ValidationError as err:
                raise _invalid_line(path, handle.tell(), validation_said(err)) from None
            except NotJSON as err:
                raise _invalid_line(path, handle.tell(), str(err), "unreadable") from None

    def _read(self, name: str) -> bytes:
        path = self.path / name
        if not path.exists():
            raise ArchiveError("missing", file=str(path))
        return archived(path)


def _manifest_size(path: Path, manifest_id: str | None, ceiling: int) -> int:
    """The size of the manifest.json at `path` once its sha256 is `manifest_id`, else ArchiveError."""
    if manifest_sha256(path, ceiling) != manifest_id:
        raise _not_the_runs(path, manifest_id)
    return path.stat().st_size


def manifest_sha256(path: Path, ceiling: int) -> str:
    """The sha256 of the manifest.json at `path` (a regular file of at most `ceiling` bytes, else ArchiveError), read
    in pieces once while it is as it was (its inode, size and times): the reader and verify's every check asked for
    it, and hashed a planted file of gigabytes four times."""
    try:
        found = path.stat()
        state: tuple[int, ...] = (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
    except OSError:
        state = ()  # none there, or not to be looked at: reading it says why
    return _sha256(path, state, ceiling)


@functools.lru_cache(maxsize=2)
def _sha256(path: Path, state: tuple[int, ...], ceiling: int) -> str:
    sha = hashlib.sha256()
    with reading(path), regular_file(path, str(path), ArchiveError) as handle:
        if (size := os.fstat(handle.fileno()).st_size) > ceiling:
            raise ArchiveError(f"{size:,} bytes, more than a manifest of this run can hold ({ceiling:,} bytes: "
                               f"{MANIFEST_CEILING}): not the run's, refused unread", file=str(path))
        while chunk := handle.read(CHUNK_BYTES):
            sha.update(chunk)
    return sha.hexdigest()


def _not_the_runs(path: Path, manifest_id: str | None) -> ArchiveError:
    """The refusal of a manifest.json that is not the run's: changed, or beside a run that never compiled."""
    why = (f"changed: {stood_in(path, manifest_id) or NOT_THE_ID}" if manifest_id is not None else
           f"not the run's: {RUN} names no manifest id (the run ended before it compiled)")
    return ArchiveError(why, file=str(path))


def archived(path: Path, limit: int | None = None) -> bytes:
    """The bytes of an archive's own file, a regular file (a pipe there would be waited on for ever) of at most
    `limit` bytes (None: as large as its run made it, as a manifest or record file is)."""
    return read_bounded(path, str(path), ArchiveError, limit=limit,
                        limit_key=None if limit is None else f"benchrun writes in a {path.name}")


def archived_model(path: Path, model: type[Any]) -> Any:
    """The archive's JSON file `path` (at most MAX_JSON_BYTES) read as `model` (`as_model`); ValueError when it is not
    one, or gives a key twice in one object (NotJSON), which JSON readers resolve each their own way (benchrun writes
    none), so what a sealed file says would depend on who reads it."""
    return as_model(archived(path, MAX_JSON_BYTES), model)


def _given_once(record: Any, line: bytes) -> Any:
    """`record`, read from the record `line`, once the line gives each key once (NotJSON): a line as benchrun writes
    it (the record's own JSON) gives none twice; only another is parsed again to see."""
    if record.model_dump_json().encode() != line.rstrip(b"\n"):
        try:
            given_once(line)
        except NotJSON:
            raise
        except (ValueError, RecursionError):  # JSON to pydantic, which read it: Python's limits are none of the line's
            pass
    return record


def _invalid_line(path: Path, end: int, why: str, what: str = "not a valid record") -> ArchiveError:
    """The error of the record line of `path` that ends at byte `end`, named by its line number."""
    with open(path, "rb") as handle:
        before = handle.read(end)
    number = before.count(b"\n") + (not before.endswith(b"\n"))
    return ArchiveError(f"line {number}: {what}: {why}", file=str(path))


def validation_said(err: ValidationError) -> str:
    """The first of a validation's errors, as `key: what`; a key or a schema version this benchrun does not know is
    said to be that, as a newer benchrun's file has them."""
    first, what = err.errors()[0], None
    if first["type"] == "extra_forbidden":
        what = f"a key {NEWER_VERSION}"
    elif first["loc"] == ("schema_version",) and first["type"] == "literal_error":  # each schema's one version
        what = unknown_version(first["input"], int(first["ctx"]["expected"]))
    return problem_line(first, what)


def load_run(path: PathLike) -> Run:
    """The run in directory `path` (it must hold a run.json)."""
    path = Path(path)
    if (why := unopened(path)) is not None:
        raise ArchiveError(why, file=str(path))
    try:
        info = archived_model(path / RUN, RunInfo)
    except (ValidationError, json.JSONDecodeError, ValueError) as err:
        why = validation_said(err) if isinstance(err, ValidationError) else str(err).splitlines()[0]
        raise ArchiveError(f"unreadable: {stood_in(path / RUN) or why}", file=str(path / RUN)) from None
    if info.merged is not None and (why := merging_left(path, info.run_id)) is not None:
        raise ArchiveError(why, file=str(path))
    return Run(path, info)
