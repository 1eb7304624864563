"""Reading run directories: `load_run(path)`, finding runs under an archive root, resolving id prefixes.

The one reader of the archive: every audit command, the sweep summary and the report read run directories through
it, so a run that cannot be read is reported the same way everywhere."""

from __future__ import annotations

import itertools
import json
import os
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from pydantic import ValidationError

from benchrun.archive.shapes import not_a_manifest
from benchrun.core.errors import ArchiveError, BenchrunError, ConfigError, reading
from benchrun.core.filebytes import read_bounded
from benchrun.core.home import expanded
from benchrun.core.layout import (
    CONFIG,
    JUDGEMENTS,
    MANIFEST,
    OUTPUTS,
    RECORD_FILES,
    RESPONSES,
    RUN,
    SCORES,
    SEAL,
    SUMMARY,
    number_in,
)
from benchrun.core.records import JudgementRecord, Number, ResponseRecord, RunInfo, ScoreRecord, Seal, Summary
from benchrun.core.recordvalues import model_digest
from benchrun.core.resources import bench_dir

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
    def manifest_bytes(self) -> bytes:
        return self._read(MANIFEST)

    @cached_property
    def manifest(self) -> Manifest:
        from benchrun.core.manifest import Manifest  # loaded only when a command needs the whole manifest

        try:
            return Manifest.model_validate_json(self.manifest_bytes)
        except ValidationError as err:
            raise ArchiveError(f"not a valid manifest: {_first(err)}", file=str(self.path / MANIFEST)) from None

    def manifest_data(self) -> dict[str, Any]:
        """manifest.json as plain JSON data, not validated as a whole: several times faster than `manifest` for large
        runs, for readers that need a few fields (task names, prompts, values), whose shapes are checked
        (`not_a_manifest`)."""
        try:
            data = json.loads(self.manifest_bytes)
        except (ValueError, RecursionError) as err:
            why = "nested too deep" if isinstance(err, RecursionError) else err
            raise ArchiveError(f"not valid JSON: {why}", file=str(self.path / MANIFEST)) from None
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
            return model.model_validate_json(archived(path, MAX_JSON_BYTES))
        except ValueError as err:
            raise ArchiveError(f"unreadable: {_first(err) if isinstance(err, ValidationError) else err}",
                               file=str(path)) from None

    def require_records(self, force: bool = False) -> Run:
        """This run, if its record files are there (a run that compiled must have both) and, unless `force`, match
        the digests written with them (`unverified`); else ArchiveError naming the run and the first file at fault (a
        pipe or a folder in a record file's place is not gone: `unverified` says what is there, and reading refuses
        it)."""
        missing = [name for name in RECORD_FILES if not os.path.lexists(self.path / name)]
        if self.info.manifest_id is not None and missing:
            raise ArchiveError(f"run {self.id} has no {' or '.join(missing)}: its records are gone",
                               file=str(self.path))
        if self.unverified and not force:
            from benchrun.archive.headline import distrusted
            raise distrusted(self, self.unverified[0])
        return self

    def trust(self) -> Trust:
        """The run checked against its digests (benchrun.archive.trust), again once a file of it changed."""
        from benchrun.archive.trust import checked

        self._trust = checked(self, self._trust)
        return self._trust

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
        data = load_yaml(path, str(path), ArchiveError) or {}
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
                yield from map(validate, itertools.islice(handle, covered(self, name)))
            except ValidationError as err:
                raise _invalid_line(path, handle.tell(), err) from None

    def _read(self, name: str) -> bytes:
        path = self.path / name
        if not path.exists():
            raise ArchiveError("missing", file=str(path))
        return archived(path)

MAX_JSON_BYTES = 64 * 2**20
"""The most a run.json, seal.json or summary.json is read of: far more than benchrun writes in one (a few KB, a
summary of thousands of metrics a few MB), so a planted file of gigabytes (a sparse one costs no disk) is one line,
not a MemoryError in `list`."""


def archived(path: Path, limit: int | None = None) -> bytes:
    """The bytes of an archive's own file, a regular file (a pipe there would be waited on for ever) of at most
    `limit` bytes (None: as large as its run made it, as a manifest or record file is)."""
    return read_bounded(path, str(path), ArchiveError, limit=limit,
                        limit_key=None if limit is None else f"benchrun writes in a {path.name}")


def _invalid_line(path: Path, end: int, err: ValidationError) -> ArchiveError:
    """The error of the record line of `path` that ends at byte `end`, named by its line number."""
    with open(path, "rb") as handle:
        before = handle.read(end)
    number = before.count(b"\n") + (not before.endswith(b"\n"))
    return ArchiveError(f"line {number}: not a valid record: {_first(err)}", file=str(path))


def _first(err: ValidationError) -> str:
    """The first of a validation's errors, as `key: what`; a key or a schema version this benchrun does not know is
    said to be that, as a newer benchrun's file has them."""
    first = err.errors()[0]
    where = ".".join(map(str, first["loc"]))
    what = first["msg"]
    if first["type"] == "extra_forbidden" or (where == "schema_version" and first["type"] == "literal_error"):
        said = "a key" if first["type"] == "extra_forbidden" else f"schema version {first['input']!r},"
        what = f"{said} which this benchrun does not know (written by a newer benchrun? read it with that one)"
    return f"{where}: {what}" if where else what


def load_run(path: PathLike) -> Run:
    """The run in directory `path` (it must hold a run.json)."""
    path = Path(path)
    if not os.path.lexists(path / RUN):  # a link to nowhere: unreadable, said below
        raise ArchiveError("not a run directory (no run.json)", file=str(path))
    try:
        info = RunInfo.model_validate_json(archived(path / RUN, MAX_JSON_BYTES))
    except (ValidationError, json.JSONDecodeError, ValueError) as err:
        why = _first(err) if isinstance(err, ValidationError) else str(err).splitlines()[0]
        raise ArchiveError(f"unreadable: {why}", file=str(path / RUN)) from None
    return Run(path, info)


def run_dirs(root: PathLike = DEFAULT_ROOT) -> Iterator[Path]:
    """Every directory under `root` holding a run.json (sweep jobs, and runs made inside another run's directory,
    included); Hydra's folders skipped."""
    return (Path(found) for found in _walk(os.fspath(Path(root))) if isinstance(found, str))


def _walk(root: str) -> Iterator[str | ArchiveError]:
    """`run_dirs` as plain strings (a Path per directory visited costs more than reading its run.json), depth first
    in name order, and for a directory that cannot be listed the error saying so. Each directory is visited once,
    known by its device and inode, so a loop of symbolic links ends and a run linked twice is found once."""
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with reading(folder):
                status = os.stat(folder)
                if (status.st_dev, status.st_ino) in seen:
                    continue
                seen.add((status.st_dev, status.st_ino))
                entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except ArchiveError as err:
            if os.path.isdir(folder):  # not a link that leads nowhere, nor a root that is not there
                yield err
            continue
        if os.path.lexists(os.path.join(folder, RUN)):  # a run.json that is no file (a link to nowhere) is unreadable
            yield folder
        stack += [entry.path for entry in entries if not entry.name.startswith(".") and _is_dir(entry)]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether `entry` is a directory (or a link to one); a link that leads nowhere (or in a loop) is not."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def scan_runs(root: PathLike = DEFAULT_ROOT) -> Iterator[Run | ArchiveError]:
    """Every run under `root` in directory order, or for a run.json (or a directory) that cannot be read, the error
    saying so."""
    for found in _walk(os.fspath(Path(root))):
        if isinstance(found, ArchiveError):
            yield found
            continue
        try:
            yield load_run(found)
        except ArchiveError as err:
            yield err


def find_runs(root: PathLike = DEFAULT_ROOT) -> Iterator[Run]:
    """Every readable run under `root`, in directory order."""
    return (run for run in scan_runs(root) if isinstance(run, Run))


def resolve_run(ref: PathLike, root: PathLike = DEFAULT_ROOT) -> Run:
    """A run by path, or among the runs under `root` by its run id: whole, or a prefix of no other run's id."""
    ref = named(ref)
    if Path(ref).is_dir():
        if not os.path.lexists(Path(ref) / RUN):  # a sweep's directory, an archive root: where its runs are said
            raise ArchiveError(f"not a run directory (no run.json){_runs_in(Path(ref))}", file=ref)
        return load_run(ref)
    found = list(scan_runs(root))
    matches = [run for run in found if isinstance(run, Run) and run.id.startswith(ref)]
    if len(whole := [run for run in matches if run.id == ref] or matches) == 1:  # an id given whole names its run
        return whole[0]
    if not matches:  # a root that is no folder (`--root` mistyped) was said to be looked in
        where = f"under {root}" if os.path.isdir(root) else f"(no archive directory '{root}' to look it up in)"
        raise ArchiveError(f"no run directory or run id '{ref}' {where}{_unread(found)}")
    shown = ", ".join(f"{run.id} ({run.path})" for run in matches[:5])
    raise ArchiveError(f"run id prefix '{ref}' is ambiguous: {shown}")


def _unread(found: list[Run | ArchiveError]) -> str:
    """What a search could not look in (a folder, a run.json), which may hold the run sought: said, never unsaid."""
    if not (errors := [err for err in found if isinstance(err, ArchiveError)]):
        return ""
    places = "place under it" if len(errors) == 1 else "places under it"
    return f" that could be read; {len(errors)} {places} could not be, the first: {errors[0]}"


def named(ref: PathLike) -> str:
    """`ref` as given, refused when empty: an unset variable (`show "$RUN"`) would name the working directory (as a
    path) or every run (as a prefix of their ids). A leading `~` is the home directory (no run id holds one)."""
    if not (ref := os.fspath(ref)):
        raise ArchiveError("an empty run directory or run id names no run; give a run directory or a run id prefix")
    return os.fspath(expanded(ref, "")) if ref.startswith("~") else ref


def expand_runs(ref: PathLike, root: PathLike = DEFAULT_ROOT) -> list[Run]:
    """The run `ref` names (a path or an id prefix), or every job of a sweep directory, in job order."""
    path = Path(named(ref))
    if not path.is_dir() or os.path.lexists(path / RUN):  # a run.json that is no file is an unreadable run's
        return [resolve_run(ref, root)]
    if not (jobs := [d for d in job_dirs(path) if os.path.lexists(d / RUN)]):
        raise ArchiveError("neither a run nor a sweep directory (no run.json in it or the folders directly in it)"
                           f"{_runs_in(path)}", file=os.fspath(ref))
    return [load_run(job) for job in jobs]


def _runs_in(folder: Path) -> str:
    """Where the runs of a folder that is no run's are, as an error says it: a sweep's jobs, or runs deeper in it."""
    if jobs := [d for d in job_dirs(folder) if os.path.lexists(d / RUN)]:
        return f"; it is a sweep's directory: name one of its jobs ({', '.join(map(str, jobs[:2]))}{', ...' * (len(jobs) > 2)})"
    deeper = next(run_dirs(folder), None)  # an archive's root: its runs lie deeper, in dated folders
    return f"; runs lie deeper in it ({deeper}): name them (benchrun-audit list {folder})" if deeper else ""


def job_dirs(sweep_dir: PathLike) -> list[Path]:
    """The job directories of a sweep (`<number>_<model>`): its subdirectories, by job number then name."""
    dirs = [d for d in Path(sweep_dir).iterdir() if d.is_dir() and not d.name.startswith(".")]
    return sorted(dirs, key=_job_order)


def _job_order(path: Path) -> tuple[int, str]:
    number = number_in(path.name.split("_")[0])
    return (1 << 30 if number is None else number, path.name)
