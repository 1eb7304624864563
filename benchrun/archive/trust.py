"""Whether what a run's files say can be read as the run wrote it: run.json against its seal, the manifest against
its id, every file run.json digests (config.yaml, which resume and retry ask with, the records, records.sha256,
summary.json) against those digests, and for a run that did not end its record lines against records.sha256. What
every audit command checks before it reads a number (`Run.require_records`); `verify` says in full what changed. A
file whose line ends alone changed (made CRLF, as git's core.autocrlf=true checks files out) is said to be that."""

from __future__ import annotations

import hashlib
import os
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Protocol

from benchrun.archive import ledger, repair
from benchrun.archive.dirlock import run_writer
from benchrun.archive.headline import seal_missing, summary_dropped
from benchrun.archive.standins import NOT_THE_ID, stood_in
from benchrun.archive.writer import file_digest
from benchrun.core.advice import audit_command
from benchrun.core.errors import ArchiveError, BenchrunError, reading, without_file
from benchrun.core.filebytes import CHUNK_BYTES, kept_elsewhere, missing, missing_because
from benchrun.core.layout import (
    APPENDED,
    CONFIG,
    DIGESTS,
    JUDGED_FILES,
    MANIFEST,
    RECORD_FILES,
    RESPONSES,
    RUN,
    RUN_FILES,
    SEAL,
    SUMMARY,
)
from benchrun.core.records import FileDigest, JudgementRecord, ResponseRecord, ScoreRecord, Seal
from benchrun.core.text import counted

if TYPE_CHECKING:
    from benchrun.archive.reader import Run


CONVERTED = ("its line ends were made CRLF since it was written (as git's core.autocrlf=true does on checkout); with "
             "LF ones it is as written: check the run out again with core.autocrlf=false")
"""Why a file changed when only its line ends did: every `\\n` the run wrote is now `\\r\\n`."""


def covered(run: Run, name: str) -> int:
    """How many first lines of record file `name` the digests written with the run cover, all a reader reads: of a
    run that ended, run.json's (not a line appended since: by a resume begun after it was checked, say); of one that
    did not, records.sha256's (not what its writer, killed or writing now, had not committed: a line cut short, score
    lines a resume grades again)."""
    if run.info.files:
        return digest.lines if (digest := run.info.files.get(name)) else 0
    return len(ledger.read_digests(run.path).lines.get(name, ()))


def outgrown(path: Path, expected: FileDigest) -> int | None:
    """The size of the file at `path` when it is over a MiB (a read's piece) larger than the file `expected` digests,
    or that file with every line end made CRLF, can be: changed, said so without reading it (a planted file of
    gigabytes was hashed, then read again for its line ends, before it was said to have changed); else None (a file
    edited less is hashed, its digest said)."""
    size = path.stat().st_size
    return size if size > expected.size + expected.lines + CHUNK_BYTES else None


def converted(path: Path, sha256: str) -> bool:
    """Whether `path`, its CRLF line ends made LF again, is the file whose digest is `sha256` (and had any)."""
    found, digest, held = False, hashlib.sha256(), b""
    with open(path, "rb") as handle:
        while chunk := handle.read(ledger.PIECE_BYTES):  # in pieces: a line of gigabytes is never held whole
            data = held + chunk
            held = b"\r" if data.endswith(b"\r") else b""  # a CRLF may be split between two pieces
            data = data[:len(data) - len(held)]
            found |= b"\r\n" in data
            digest.update(data.replace(b"\r\n", b"\n"))
    digest.update(held)
    return found and digest.hexdigest() == sha256


def records_elsewhere(run_dir: Path) -> tuple[str, str] | None:
    """The first record file kept elsewhere (in the cloud, being copied in: `kept_elsewhere`), not on this disk, and
    what to do: a resume writes a missing one anew (--force too), as a file the run never had; None for none."""
    for name in (*RECORD_FILES, DIGESTS):
        if not os.path.lexists(run_dir / name) and (where := kept_elsewhere(run_dir / name)):
            return name, f"missing: {where}"
    return None


def records_converted(run_dir: Path) -> str | None:
    """Of a run's records, checked line by line (of a run that did not end, or as a resume checks them), the first
    file whose line ends were made CRLF (as a checkout with git's core.autocrlf=true makes them) when that is all
    that changed: read with LF ones, every line of records.sha256 is a digest line and every record line the one its
    digest names. None when no file starts with a CRLF line, or the records differ otherwise."""
    names = [name for name in JUDGED_FILES if name in RECORD_FILES or (run_dir / name).is_file()]
    crlf = next((name for name in (DIGESTS, *names) if _crlf(run_dir / name)), None)
    if crlf is None or not (run_dir / DIGESTS).is_file():
        return None
    digests = ledger.read_digests(run_dir, as_lf=True)
    if digests.problems or any(ledger.check_file(run_dir, name, digests.lines.get(name, []), as_lf=True).problems
                               for name in names):
        return None
    return crlf


def _crlf(path: Path) -> bool:
    """Whether the first line of the regular file `path` ends with CRLF (a first line over 1 MiB is not looked at)."""
    if not path.is_file():
        return False
    with open(path, "rb") as handle:
        return handle.readline(ledger.PIECE_BYTES).endswith(b"\r\n")


@dataclass(frozen=True)
class Trust:
    """What a check of a run found (what does not match its digests), and of which state of its files."""

    state: tuple[tuple[int, int, int, int] | None, ...]
    problems: tuple[str, ...]


def checked(run: Run, last: Trust | None) -> Trust:
    """`last` while none of the run's files changed since it was made (an os.stat of each: `_stat`), else
    the run checked again: a Run kept open (in a notebook, over a run being written) never reads a line edited or
    appended since it was checked as one that was."""
    state = tuple(_stat(run.path / name) for name in RUN_FILES)
    if last is not None and last.state == state:
        return last
    return Trust(state, tuple(unverified(run)))


def _stat(path: Path) -> tuple[int, int, int, int] | None:
    """What tells `path` changed: its inode, size, modification time and change time (which a write sets, and which,
    unlike the modification time, `touch -r` or os.utime cannot set back)."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns


class Keeper(Protocol):
    """What keeps a run's records as they are read (verify's books, `audit.summarycheck.RunPass`)."""

    def response(self, response: ResponseRecord) -> None: ...

    def judgements(self, calls: Iterable[JudgementRecord]) -> None: ...

    def scores(self, scores: Iterable[ScoreRecord]) -> None: ...


def unreadable(run: Run, kept: Keeper | None = None) -> tuple[str, str, int | None] | None:
    """The first of the run's files that a reader does not read as what it is, its digests matching: its manifest,
    summary.json, then the record lines it reads (an older benchrun's, one sealed again since it was rewritten), as
    (file, what is wrong, its line); None when every reader can read them. Each record read is `kept` when given
    (verify's summary checks, made in the same pass)."""
    try:
        run.manifest, run.summary
        responses, judgements, scores = run.responses(), run.judgements(), run.scores()
        if kept is not None:
            for response in responses:
                kept.response(response)
            kept.judgements(judgements)
            kept.scores(scores)
        for records in (responses, judgements, scores):
            deque(records, maxlen=0)  # what `kept` did not read
    except ArchiveError as err:
        why = without_file(err)
        return Path(err.file or RUN).name, why, int(line[1]) if (line := re.match(r"line (\d+): ", why)) else None
    return None


def unverified(run: Run) -> list[str]:
    """What of the run does not match the digests written with it (`file: why`), seal first; of a run that failed
    before it compiled (it wrote no records), only the files it never wrote."""
    if run.info.manifest_id is None:
        return [f"{name}: {why}" for name, why in strays(run)]
    return [*_seal(run), *beneath_seal(run)]


def beneath_seal(run: Run) -> list[str]:
    """What of the run does not match the digests its run.json holds (`file: why`), the seal aside: the manifest
    against its id, each file against its digest (a run that did not end: its record lines), and the files it never
    wrote."""
    return [*_manifest(run), *_files(run), *(f"{name}: {why}" for name, why in strays(run))]


STOPPED_UNCOMPILED = "was stopped before it compiled (its writer killed, or its disk failed)"
"""What became of a `running` run with no manifest whose writer is gone: it asked nothing, and resume cannot go on."""


def not_finished(run: Run, command: str) -> str:
    """What a `command` that takes finished runs only says of `run`, which did not finish: to wait for its live
    writer, or, its writer gone (killed), to finish it with resume, which nothing else will (or, stopped before it
    compiled, to start a new run: resume has nothing to go on from)."""
    writer = run_writer(run.path)
    if writer:
        return f"it has not finished; it is being written ({writer}): {command} it once it has ended"
    if run.info.manifest_id is None:
        return f"it {STOPPED_UNCOMPILED} and asked nothing; start a new run"
    return f"it has not finished; finish it with {audit_command('resume', run.path)}"


def uncompiled(run: Run) -> str:
    """Why a run with no manifest has no answers to resume, retry, rescore or merge: it ended, or its writer was
    stopped, before it compiled."""
    how = STOPPED_UNCOMPILED if run.info.status == "running" else f"ended before it compiled ({run.info.reason})"
    return f"run {run.id} {how} and asked nothing; start a new run"


def config_changed(run: Run) -> str | None:
    """Why config.yaml is not the one run.json digests (None when it is, or run.json digests none: an older run's)."""
    return next(_config(run), None)


def _config(run: Run) -> Iterator[str]:
    """config.yaml against its digest at the run's end, or for a run that did not end at its start (records.sha256
    has no lines of it: not read)."""
    if (expected := run.info.files.get(CONFIG)) is not None:
        yield from _changed(run.path, CONFIG, expected)
    elif (started := run.info.config_digest) is not None:
        yield from _changed(run.path, CONFIG, started, since="started")


def model_edited(run: Run, config_unchanged: bool) -> str | None:
    """Why run.json's model is not the one a run that did not end was asked with, config.yaml's runner.model (None
    when it is, or config.yaml cannot say: `config_unchanged` is False, the caller having found it changed since the
    run started, and said so): its writer writes them alike, and no seal covers its run.json yet, so a model edited
    there would be shown, and recorded by a resume, as the one that answered."""
    if run.info.files or run.info.config_digest is None or not config_unchanged:
        return None
    try:
        runner = run.config.get("runner")
    except ArchiveError:
        return None
    asked = runner.get("model") if isinstance(runner, dict) else None
    if not isinstance(asked, str) or asked == run.info.model:
        return None
    return (f"says model {run.info.model[:200]!r}, but {CONFIG}, as the run started (its digest in {RUN} checked), "
            f"says runner.model {asked[:200]!r}, which the run was asked with and a resume goes on asking with: {RUN} "
            "was edited")


def strays(run: Run) -> list[tuple[str, str]]:
    """The files of a run's own names that a run which ended did not write, (file, why): the final digests in its
    run.json name every file it wrote (judge calls only with judges), and a run its writer sealed before it compiled
    wrote no manifest and no records (a sweep job settled as interrupted by another process, unsealed, may have been
    killed as it wrote its manifest). Such a file was put there since (a judgements.jsonl beside a run without judges,
    records beside one that asked nothing), and no reader may take it for the run's; and a summary.json it wrote,
    gone with its digest (`headline.summary_dropped`)."""
    info = run.info
    if info.manifest_id is None and info.status != "running" and os.path.lexists(run.path / SEAL):
        why = f"the run ended ({info.status}) before it compiled, and wrote no manifest and no records"
        candidates = (MANIFEST, *JUDGED_FILES, DIGESTS, SUMMARY)
    elif info.files:
        why = (f"the run ended ({info.status}), and the final digests in {RUN}, which name every file it wrote, do not "
               "name it")
        candidates = (*JUDGED_FILES, DIGESTS, SUMMARY)
    else:
        return []
    return [*((name, f"not the run's: {why}; it was put there since") for name in candidates
              if name not in info.files and os.path.lexists(run.path / name)),
            *((SUMMARY, why) for why in [summary_dropped(run)] if why)]



def _seal(run: Run) -> Iterator[str]:
    """What of run.json its seal does not cover; nothing while a live writer holding run.lock is between two writes
    (a final run.json, its seal not yet written; a resume's run.json `running`, the ended session's seal not yet
    gone). A seal that does not cover a run.json that says the run ended is refused whoever holds the lock."""
    found = list(_unsealed(run))
    between = not (run.path / SEAL).exists() or (run.info.status == "running" and not run.info.files)
    if found and not (between and run_writer(run.path) is not None):
        yield from found


def _unsealed(run: Run) -> Iterator[str]:
    if not (run.path / SEAL).exists():
        if run.info.files or run.info.status != "running":  # what only an ended run writes: it was sealed
            yield f"{SEAL}: {seal_missing(run)}"
        return
    try:
        seal = run.seal
    except BenchrunError as err:  # it names the seal
        yield str(err)
        return
    if (broken := seal_broken(run, seal)) is not None:
        yield f"{broken[0]}: {broken[1]}"


def seal_broken(run: Run, seal: Seal) -> tuple[str, str] | None:
    """(file, why) when `seal` does not cover the run's run.json: it is another run's seal (copied over this one's),
    or run.json changed since it was sealed; None when it covers it."""
    if seal.run_id != run.id:
        return SEAL, f"the seal of run {seal.run_id[:64]!r}, not of this run ({run.id}): nothing covers {RUN}"
    if file_digest(run.path / RUN).sha256 != seal.run_json.sha256:
        alone = f": {CONVERTED}" if converted(run.path / RUN, seal.run_json.sha256) else ""
        return RUN, f"changed since the run was sealed{alone}"
    return None


def _manifest(run: Run) -> Iterator[str]:
    path = run.path / MANIFEST
    if not path.is_file():  # a compiled run's questions gone, or a pipe, a device or a folder there (never read)
        yield f"{MANIFEST}: {missing(path)}"
        return
    try:  # in pieces, once no larger than the run's can be: a planted file of gigabytes is never held
        changed = run.manifest_sha256() != run.info.manifest_id
    except ArchiveError as err:
        yield f"{MANIFEST}: {without_file(err)}"
        return
    if changed:
        yield f"{MANIFEST}: changed: {stood_in(path, run.info.manifest_id) or NOT_THE_ID}"


def _files(run: Run) -> Iterator[str]:
    digests = ledger.read_digests(run.path)
    if run.info.files:
        for name, expected in run.info.files.items():
            changed = list(_changed(run.path, name, expected, digests))
            yield from changed or [f"{name}: {why}" for why in [unended(run.path, name)] if why]
        return
    yield from _unfinished(run, digests)
    yield from (config := list(_config(run)))
    if (edited := model_edited(run, not config)) is not None:
        yield f"{RUN}: {edited}"


def _unfinished(run: Run, digests: ledger.Digests) -> Iterator[str]:
    """A run that did not end: records.sha256 there and every line of it a digest, each record file's lines against
    it, and no more lines beyond the last digest than a writer killed mid-commit leaves (one commit's, in one file:
    one response line, or the score or judge lines written together), which readers would read as the run's; and
    then, as a resume checks them (`repair.check`), every committed line belonging to the manifest: records.sha256,
    which no seal covers yet, may have been rewritten to match lines no run writes (a judge call of a sample with no
    response, a line repeated)."""
    if not (run.path / DIGESTS).is_file():
        yield f"{DIGESTS}: {missing_because(run.path / DIGESTS, 'nothing covers the record lines')}"
        return
    checked = {name: ledger.check_file(run.path, name, digests.lines.get(name, [])) for name in JUDGED_FILES
               if name in RECORD_FILES or (run.path / name).is_file()}
    problems = [str(problem) for problem in digests.problems]
    problems += [str(problem) for found in checked.values() for problem in found.problems]
    tails = [found for found in checked.values() if found.tail_lines]
    beyond = [found for found in tails if len(tails) > 1 or (found.path.name == RESPONSES and found.tail_lines > 1)]
    problems += [f"{found.path.name}: {counted(found.tail_lines, 'line')} after line {found.written} that {DIGESTS} "
                 "does not cover, more than a writer killed mid-write leaves" for found in beyond[:1]]
    if problems and (crlf := records_converted(run.path)):
        problems = [f"{crlf}: {CONVERTED}"]
    yield from problems or _foreign(run, digests, checked)


def _foreign(run: Run, digests: ledger.Digests, checked: dict[str, ledger.Checked]) -> list[str]:
    """The committed lines that do not belong to the manifest, as a resume finds them (`repair.check`, on the lines
    already checked against their digests); none when the manifest cannot be read as one (each reader says why as
    it reads it)."""
    try:
        manifest = run.manifest
    except BenchrunError:
        return []
    return [str(problem) for problem in repair.check(run.path, manifest, run.info, digests, checked).problems]


def unended(run_dir: Path, name: str) -> str | None:
    """Why a line file of a run that ended (its records, records.sha256), which matches its digest, is not as its
    writer left it: its last line has no newline (the writer ends each line it writes, and readers read whole lines
    only, so they would pass over what the digest covers); None when it is."""
    if name not in APPENDED:
        return None
    with reading(run_dir / name), open(run_dir / name, "rb") as handle:
        if handle.seek(0, os.SEEK_END) == 0 or (handle.seek(-1, os.SEEK_END), handle.read(1))[1] == b"\n":
            return None
    return ("its last line has no newline at its end, which the run's writer ends every line with: readers read only "
            "whole lines, and would pass over it")


def _changed(run_dir: Path, name: str, expected: FileDigest, digests: ledger.Digests | None = None,
             since: str = "ended") -> Iterator[str]:
    """`name` against the digest run.json holds of it, written as the run `since` (ended, or started); a changed
    record file's first changed line, when known."""
    path = run_dir / name
    if not path.is_file():
        yield f"{name}: {missing(path)}"
        return
    actual = None if outgrown(path, expected) else file_digest(path)
    if actual is not None and actual != expected and converted(path, expected.sha256):
        yield f"{name}: changed since the run {since}: {CONVERTED}"
    elif actual is not None and actual != expected and (why := stood_in(path, expected.sha256)):
        yield f"{name}: changed since the run {since}: {why}"
    elif actual != expected:
        found = ledger.check_file(run_dir, name, digests.lines[name]) if digests and name in digests.lines else None
        yield str(found.problems[0]) if found and found.problems else f"{name}: changed since the run {since}"
