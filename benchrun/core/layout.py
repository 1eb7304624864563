"""The names of a run directory's files and the statuses of a run (the run-directory contract of DESIGN.md): each
written here once, and nowhere else."""

from __future__ import annotations

from typing import Literal, get_args

from benchrun.core.text import undecoded

OUTPUTS = "outputs"
"""The archive root, where run directories go unless `outputs=` says otherwise (relative to the working directory)."""
CONFIG, MANIFEST, RUN, SUMMARY, SEAL = "config.yaml", "manifest.json", "run.json", "summary.json", "seal.json"
RESPONSES, SCORES = "responses.jsonl", "scores.jsonl"
DIGESTS = "records.sha256"
"""One line per record line, so verify can name the line that changed (the format is benchrun.archive.ledger's)."""
LOG = "benchrun.log"
"""The run's log: Hydra's job log (hydra.job.name is benchrun), where what user code prints goes too."""
LOCK = "run.lock"
"""Held (flock) by the one process writing the directory (benchrun.archive.dirlock)."""
RESERVE = ".reserve"
"""Space a writer holds while it writes, given back for the final run.json (not part of the run)."""
HYDRA_COPIES = ".hydra"
"""Hydra's own copies of the config and the overrides, in the run directory."""
HYDRA_COPY_FILES = (CONFIG, "hydra.yaml", "overrides.yaml")
"""The files Hydra writes into its copies folder (HYDRA_COPIES)."""
JUDGEMENTS = "judgements.jsonl"
"""One line per judge call, in a run whose tasks have judges."""
RECORD_FILES = (RESPONSES, SCORES)
"""The record files of every run."""
JUDGED_FILES = (*RECORD_FILES, JUDGEMENTS)
"""The record files of a run with judges."""
APPENDED = (*JUDGED_FILES, DIGESTS)
"""The run's files a writer appends to, line by line."""
DigestedFile = Literal["config.yaml", "responses.jsonl", "scores.jsonl", "judgements.jsonl", "records.sha256",
                       "summary.json"]
"""The files whose digests run.json holds when the run ended: no other name (`/etc/shadow`, which verify would
digest and say how many lines it has) is read from a planted run.json."""
RUN_FILES = (CONFIG, MANIFEST, RUN, *JUDGED_FILES, DIGESTS, SUMMARY, SEAL)
"""The files that make a run; a directory holding any of them holds a run."""
RESCORES, RESCORE_FILE, RESCORE_LOG = "rescores", "rescore.json", "rescore.log"
"""`rescores/NNN/` under a run: each later re-scoring, its rescore.json written last, and what its scorers printed."""


def number_in(name: str) -> int | None:
    """The number a name of the archive's spells in ASCII digits (a rescore's folder `003`, the `0` of a sweep job's
    `0_llama3.2`), else None: a folder named `²` or `٣` (which str.isdigit() takes, and int() refuses or reads as
    another number) numbers nothing."""
    return int(name) if name.isascii() and name.isdigit() else None


SWEEP_FILE = "sweep.json"
"""In a sweep directory: its jobs and their metrics side by side."""
MULTIRUN_FILE = "multirun.yaml"
"""Hydra's copy of the sweep's config in the sweep directory, written before the first job starts."""
MANIFEST_VERSION = 1
"""The manifest's schema_version this benchrun reads and writes; another is a newer benchrun's, which no reader takes."""
NEWER_VERSION = "which this benchrun does not know (written by a newer benchrun? read it with that one)"
"""What a reader says of a key or a schema version of a file it does not know."""


def is_version(found: object, known: int) -> bool:
    """Whether a file's schema_version `found` is `known` as benchrun writes it: a whole number (1.0 and true, which
    Python takes for 1, are not)."""
    return type(found) is int and found == known


def unknown_version(found: object, known: int) -> str:
    """What a reader that knows schema version `known` says of a file's `found`: a newer benchrun's, when it is a
    larger whole number; else one no benchrun writes (an older number, text, null: the file was edited)."""
    shown = repr(found)[:40]
    if isinstance(found, int) and not isinstance(found, bool) and found > known:
        return f"schema version {shown}, {NEWER_VERSION}"
    return f"schema version {shown}, which no benchrun writes (this one writes {known}): the file was edited"
RUN_OWN = (*RUN_FILES, LOCK, RESERVE, LOG, RESCORES, HYDRA_COPIES)
"""The names in a run directory that are the run's own (its files, its lock, its log, Hydra's copies, its rescores):
nothing but the run's writers makes or replaces them."""
NAME_MAX, PATH_MAX = 255, 4096
"""The bytes a file system takes of one name in a path, and of a whole path (Linux's, and macOS's names)."""
OWN_PATH_BYTES = 512
"""What a run's own names add to the directory it is put in (its date, time, benchmark and model, a sweep job's folder,
`.hydra/overrides.yaml`, `rescores/NNN/`), held back from PATH_MAX for them."""


def unusable_directory(path: str) -> str | None:
    """Why `path` cannot be a directory that run directories go under (`outputs`), else None: empty (as a prefix,
    `${outputs}/<date>/...`, the file system's root), a name in it of more than NAME_MAX bytes (in UTF-8), or so long
    a path that a run's files under it would pass PATH_MAX, or a name that is not UTF-8 (run.json keeps the path as
    text)."""
    if (shown := undecoded(path)) is not None:
        return (f"'{shown}' is not UTF-8 text, and a run records its directory's path as text (run.json): name a "
                "directory whose name is")
    if not path.strip():
        return ("empty: name a directory (by default, outputs); an empty one would put run directories at the file "
                "system's root")
    if (name := max(_bytes(part) for part in path.split("/"))) > NAME_MAX:
        return f"a name of {name:,} bytes, more than a file system takes ({NAME_MAX}): name a shorter directory"
    if (size := _bytes(path)) > PATH_MAX - OWN_PATH_BYTES:
        return (f"a path of {size:,} bytes, too long for a run's files under it (a file system takes {PATH_MAX:,} in "
                f"all, and a run's own names need {OWN_PATH_BYTES}): name a shorter directory")
    return None


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


FORMAT_VALID = "format_valid"
"""The pseudo-scorer that checks each response against its response class; first of every sample's score lines."""
RESERVED_SCORERS = frozenset({FORMAT_VALID})
"""Names of benchrun's own scores, which no scorer function may take."""

Status = Literal["running", "completed", "completed_with_errors", "failed", "interrupted"]
"""A run's status in run.json."""
UNFINISHED: tuple[Status, ...] = ("running", "interrupted", "failed")
"""The statuses `resume` finishes in place."""
FINISHED: tuple[Status, ...] = ("completed", "completed_with_errors", "failed")
"""The statuses of a run that ended by itself, whose failed samples `retry` asks again."""
NO_RUN, UNREADABLE = "missing", "unreadable"
"""A sweep job that left no run.json; a run whose run.json cannot be read (as `list` and the sweep summary say)."""
JobStatus = Literal[Status, "missing", "unreadable"]
"""A sweep job's status: its run's, or NO_RUN, or UNREADABLE."""
FAILED_JOB: frozenset[str] = frozenset(get_args(JobStatus)) - {"completed", "completed_with_errors"}
"""The job statuses that make a sweep fail (exit 1)."""
