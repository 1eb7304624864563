"""`verify RUN`: prove a run is intact (seal, manifest id, file digests, per-line digests) and its sources unchanged.

The chain: seal.json holds the digest of the final run.json; run.json holds the manifest id (the sha256 of
manifest.json) and the digests of config.yaml, the record files, records.sha256 and summary.json; records.sha256
holds one digest per record line, so a changed line is named. None of it is a signature: whoever rewrites a file
and every digest above it consistently is not caught. What proves a run against that is a copy of the seal's
sha256 kept somewhere else (verify prints it). Only a run whose run.json its seal covers is intact: one without a
seal is explained (it ended and lost its seal, it is still being written, or its writer is gone), never passed."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchrun.archive import ledger, repair
from benchrun.archive.dirlock import ELSEWHERE, LockState, describe, live_writer, probe, run_writer, writing_elsewhere
from benchrun.archive.lookup import resolve_run
from benchrun.archive.reader import PathLike, Run, archived_model, validation_said
from benchrun.archive.trust import (
    CONVERTED,
    converted,
    model_edited,
    outgrown,
    records_converted,
    seal_broken,
    strays,
    unended,
    unreadable,
)
from benchrun.archive.writer import file_digest
from benchrun.archive.writerless import lock_told
from benchrun.audit import arguments
from benchrun.audit.finding import Finding
from benchrun.audit.heldfiles import held
from benchrun.audit.rescored import RESCORE_NUMBERS, RescoreInfo, covers_fewer
from benchrun.audit.sources import check_sources
from benchrun.audit.summarycheck import books_for, disagreement, rescore_disagreement
from benchrun.console import output
from benchrun.console.visible import shown_name
from benchrun.core.errors import EXIT, ArchiveError, BenchrunError, without_file
from benchrun.core.filebytes import missing, not_a_file
from benchrun.core.layout import (
    CONFIG,
    DIGESTS,
    JUDGED_FILES,
    JUDGEMENTS,
    LOCK,
    MANIFEST,
    RECORD_FILES,
    RESCORE_FILE,
    RESCORES,
    RUN,
    SCORES,
    SEAL,
    SUMMARY,
    UNFINISHED,
    number_in,
)
from benchrun.core.manifest import Manifest
from benchrun.core.records import FileDigest
from benchrun.core.text import NotJSON, counted


@dataclass(frozen=True)
class Verdict:
    """Every finding about a run; it is intact when all passed."""

    run: Run
    findings: tuple[Finding, ...]

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok]

    @property
    def intact(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run.id, "path": str(self.run.path), "intact": self.intact,
                "findings": [asdict(f) for f in self.findings]}


def verify_run(run: Run, cwd: PathLike | None = None) -> Verdict:
    """Check the manifest id, every file digest in run.json (locating changed lines with records.sha256), and
    the benchmark's source files if they can still be found (a relative task.path is tried from the directory
    the run was started in, then from `cwd`)."""
    return Verdict(run, (*held(run.path, [*_own(run), *check_rescores(run)]), *check_lock(run),
                         *check_sources(run, cwd or Path.cwd())))


def check_lock(run: Run) -> list[Finding]:
    """run.lock, which every writer of the run takes (rescore, resume, retry): a link, a pipe, a device or a folder in
    its place no writer can hold, nor will write the run (of a run that says `running`, `unsealed` says so)."""
    if run.info.status == "running" and not run.info.files:
        return []
    misplaced = probe(run.path / LOCK).misplaced
    return [] if misplaced is None else [Finding(False, LOCK, f"{misplaced} in its place, which no writer can hold: "
                                                              "rescore, resume and retry refuse the run until the "
                                                              "file itself (or none) is there")]


def check_run(run: Run) -> list[Finding]:
    """The run's own files (its seal, its manifest, each file against its digest), as `held` says of them: what
    merge and retry check of the runs they take, as verify does."""
    return held(run.path, _own(run))


def _own(run: Run) -> list[Finding]:
    return [*check_seal(run), *check_manifest(run), *check_files(run)]


def check_seal(run: Run) -> list[Finding]:
    """run.json against the seal written when the run ended; without one, why (`unsealed`)."""
    path = run.path / SEAL
    if not os.path.lexists(path):
        return [unsealed(run)]
    try:
        seal = run.seal
    except BenchrunError as err:
        return [Finding(False, SEAL, str(err))]
    if (broken := seal_broken(run, seal)) is not None:
        file, why = broken
        if file == RUN and run.info.status == "running" and not run.info.files:  # a resume's first write: the
            return [unsealed(run)]  # ended session's seal goes next (or its writer was stopped first)
        digests = (f": sha256 {file_digest(run.path / RUN).sha256[:12]}…, the seal has {seal.run_json.sha256[:12]}…"
                   if file == RUN and not why.endswith(CONVERTED) else "")
        return [Finding(False, file, why + digests)]
    return [Finding(True, RUN, f"matches its seal; keep the seal's sha256 elsewhere to prove this run later: "
                               f"{file_digest(path).sha256}")]


def unsealed(run: Run) -> Finding:
    """Why a run without a seal is not intact: it ended, or run.json holds what only an ended run's does (a seal was
    removed), or it is being written (run.lock is held: not intact yet), or it says `running` with no writer alive."""
    info = run.info
    if info.status != "running":
        return Finding(False, SEAL, f"missing: the run ended ({info.status}) but nothing covers run.json"
                                    f"{_sealing(run, probe(run.path / LOCK)) if info.files else ''}")
    if info.files:
        return Finding(False, SEAL, "missing: run.json says 'running' but holds the final digests of a run that "
                                    "ended: its seal was removed and run.json edited")
    told = lock_told(run)
    if told.misplaced is not None:
        return Finding(False, LOCK, f"{told.misplaced} in its place, which no writer can hold: the run says "
                                    f"'running', but none is writing it ({UNSEALED_LINES})")
    if told.writer:
        return Finding(False, RUN, f"not sealed yet: the run is being written ({told.writer}); verify it once it has "
                                   f"ended ({UNSEALED_LINES})")
    return Finding(False, RUN, f"says 'running', but no live process holds {LOCK}: {told.why} ({UNSEALED_LINES})")


def _sealing(run: Run, lock: LockState) -> str:
    """What run.lock tells of a run that ended without a seal: its writer is sealing it now, or died holding the
    lock after it wrote the final run.json (a writer that ends cleanly empties the lock), so a resume seals it."""
    if writer := live_writer(run.path / LOCK, lock):
        return f": its writer is sealing it now ({writer}); verify it once it has"
    if writing_elsewhere(lock.note):
        return f": {ELSEWHERE.format(describe(lock.note))}; verify the run where it is written"
    if lock.note:
        how = "finish" if run.info.status in UNFINISHED else "seal"  # an interrupted run has samples left to ask
        return (f": its writer ({describe(lock.note)}) was stopped before it sealed the run (killed, or its disk "
                f"failed); {how} it with: benchrun-audit resume {run.path}")
    return ""


UNSEALED_LINES = f"record lines checked against {DIGESTS} only"


def check_manifest(run: Run) -> list[Finding]:
    """manifest.json hashes to the manifest id in run.json."""
    expected = run.info.manifest_id
    if expected is None:
        return [Finding(True, MANIFEST, f"none: the run failed before it compiled ({run.info.reason})")]
    path = run.path / MANIFEST
    if not path.is_file():
        return [Finding(False, MANIFEST, missing(path))]
    try:
        actual = run.manifest_sha256()
    except ArchiveError as err:
        return [Finding(False, MANIFEST, without_file(err))]
    if actual != expected:
        return [Finding(False, MANIFEST, f"changed: its sha256 {actual[:12]}… is not the manifest id "
                                         f"{expected[:12]}… in run.json")]
    return [Finding(True, MANIFEST, f"hashes to the manifest id {expected[:12]}…")]


def check_files(run: Run) -> list[Finding]:
    """Each file digest in run.json; for a run that did not finish, each record line against records.sha256; and
    the files of a run's own names that a run which ended never wrote (`trust.strays`)."""
    return [*_digested(run), *(Finding(False, name, why) for name, why in strays(run))]


def _digested(run: Run) -> list[Finding]:
    info = run.info
    if info.manifest_id is None:
        return [f for name, digest in info.files.items() for f in check_file(run.path, name, digest)]
    if not info.files:  # a run that says `running` was explained by check_seal
        finish = f"; finish it with: benchrun-audit resume {run.path}" if info.status in UNFINISHED else ""
        unfinished = [] if info.status == "running" else [  # a job its sweep's end said interrupted, say: resume ends it
            Finding(False, RUN, f"the run did not finish (status {info.status}): no final digests; {UNSEALED_LINES}"
                                f"{finish}")]
        present = [name for name in JUDGED_FILES if name in RECORD_FILES or (run.path / name).is_file()]
        located = [f for name in present for f in locate(run.path, name, run)]
        if not all(f.ok for f in located) and (crlf := records_converted(run.path)):
            located = [Finding(False, crlf, CONVERTED)]
        started = check_file(run.path, CONFIG, info.config_digest, when="started") if info.config_digest else []
        edited = model_edited(run, all(f.ok for f in started))
        started += [Finding(False, RUN, edited)] if edited else []
        return [*unfinished, *located, *started, *(() if not all(f.ok for f in located) else belonging(run))]
    digested = [f for name, digest in info.files.items() for f in check_file(run.path, name, digest)]
    return [*digested, *(() if not all(f.ok for f in digested) else belonging(run))]


def belonging(run: Run) -> list[Finding]:
    """The committed lines of a run that do not belong to its manifest, as a resume finds them (`repair.check`): of a
    run that did not end, records.sha256 alone covers them, which anyone can have rewritten to match; of one that
    ended, its writer wrote them (a sample answered twice, by a second writer a fork at import made, was sealed
    intact); else the first file or line that no reader reads as what it is (`trust.unreadable`), which every other
    command would stop at."""
    if (manifest := _manifest(run)) is not None:
        if problems := repair.check(run.path, manifest).problems:
            return [Finding(False, problem.file, problem.message, problem.line) for problem in problems]
    elif not all(finding.ok for finding in check_manifest(run)):
        return []  # check_manifest says why; a manifest that is not the run's is never read whole
    if found := unreadable(run, books := books_for(run)):
        return [Finding(False, *found)]
    return [Finding(False, *found) for found in [books and disagreement(run, books)] if found]


def check_file(run_dir: Path, name: str, expected: FileDigest, writer: tuple[str, str] = ("run", RUN),
               when: str = "finished") -> list[Finding]:
    """One file against its digest in the `writer`'s file (the run's run.json, a rescore's rescore.json), written as
    it `when` (finished; config.yaml as a run started); a changed record file is compared line by line to find where."""
    made_by, holder = writer
    path = run_dir / name
    if not path.is_file():
        return [Finding(False, name, f"{missing(path)} ({_lines(expected.lines)}, {expected.size} bytes when the "
                                     f"{made_by} {when})")]
    grown = outgrown(path, expected)
    actual = None if grown is not None else file_digest(path)
    if actual == expected and (why := unended(run_dir, name)):
        return [Finding(False, name, why)]
    if actual == expected:
        return [Finding(True, name, f"{_lines(expected.lines)} as written (sha256 {expected.sha256[:12]}…)")]
    if actual is not None and converted(path, expected.sha256):
        return [Finding(False, name, f"changed since the {made_by} {when}: {CONVERTED}")]
    if name in JUDGED_FILES and (run_dir / DIGESTS).is_file():
        located = [f for f in locate(run_dir, name) if not f.ok]
        if located:
            return located
    if actual is None:
        return [Finding(False, name, f"changed since the {made_by} {when}: {grown:,} bytes, {holder} has "
                                     f"{expected.size:,} ({_lines(expected.lines)}), more than its line ends made CRLF "
                                     "would be: not read")]
    lines = "" if actual.lines == expected.lines else \
        f"; {counted(expected.lines, 'line')} when written, {actual.lines:,} now"
    return [Finding(False, name, f"changed since the {made_by} {when}: sha256 {actual.sha256[:12]}…, {holder} has "
                                 f"{expected.sha256[:12]}…{lines}")]


def _manifest(run: Run) -> Manifest | None:
    """The run's manifest, or None when it is not the run's (read whole only once it hashes to the manifest id: a
    planted file of gigabytes is never held) or cannot be read as one (check_manifest and check_sources say why)."""
    if not all(finding.ok for finding in check_manifest(run)):
        return None
    try:
        return run.manifest
    except BenchrunError:
        return None


def locate(run_dir: Path, name: str, unfinished: Run | None = None) -> list[Finding]:
    """A record file against its line digests in records.sha256: the first changed line, lines missing or added;
    of a run that did not end (`unfinished`), lines beyond the last digest that a writer stopped mid-commit (or
    writing now) leaves are said to be that, not lines the run did not write."""
    if not (run_dir / name).is_file():
        return [Finding(False, name, missing(run_dir / name))]
    if not (run_dir / DIGESTS).is_file():
        return [Finding(False, name, f"cannot locate changes: {DIGESTS} is missing")]
    found = ledger.check_file(run_dir, name, ledger.read_digests(run_dir).lines.get(name, []))
    findings = [Finding(False, name, problem.message, problem.line) for problem in found.problems]
    manifest = _manifest(unfinished) if found.tail_lines and unfinished is not None else None
    if manifest is not None and repair.left_by_a_writer(name, found, manifest):
        findings.append(Finding(False, name, f"{_lines(found.tail_lines)} after line {found.written} that {DIGESTS} "
                                             "does not cover yet: what a writer stopped mid-write (or writing now) "
                                             "leaves; a resume drops it and asks again", found.written + 1))
    elif found.tail_lines:
        findings.append(Finding(False, name, f"{_lines(found.tail_lines)} after line {found.written} not written by "
                                             "the run", found.written + 1))
    return findings or [Finding(True, name, f"{_lines(found.written)} match {DIGESTS}")]


def check_rescores(run: Run) -> list[Finding]:
    """Each finished rescore under rescores/: its rescore.json names this run and its files match their digests."""
    folder = run.path / RESCORES
    if folder.is_symlink():
        return [Finding(False, RESCORES, f"a symbolic link (to {os.readlink(folder)}) in place of the run's own folder: "
                                         "the run directory no longer holds its rescores; none is checked")]
    if os.path.lexists(folder) and not folder.is_dir():
        return [Finding(False, RESCORES, f"{not_a_file(folder.stat().st_mode) or 'a file'} in place of the run's own "
                                         "folder, which only a rescore makes: no rescore of the run is there")]
    if not folder.exists():
        return []
    numbered = sorted(p for p in folder.iterdir() if number_in(p.name) is not None)
    newest = max((p for p in numbered if number_in(p.name) < RESCORE_NUMBERS), key=lambda p: number_in(p.name),
                 default=None)  # the one a live rescore, holding the run's lock, writes
    writer = run_writer(run.path) if newest else None
    return [finding for path in numbered for finding in check_rescore(run, path, writer if path == newest else None)]


def check_rescore(run: Run, path: Path, writer: str | None = None) -> list[Finding]:
    """One rescore: unfinished (no rescore.json: `writer` writes it now, or it was stopped, so it claims nothing), or
    its claims checked."""
    name = f"{RESCORES}/{path.name}"
    if not path.is_dir():  # a name that numbers a rescore is its folder; a link to one is said by `held`
        kind = (f"a symbolic link (to {os.readlink(path)})" if path.is_symlink()
                else not_a_file(path.stat().st_mode) or "a file")
        return [Finding(False, name, f"{kind} in place of a rescore's folder, which only a rescore makes")]
    if not os.path.lexists(path / RESCORE_FILE):
        how = f"being written now ({writer}); verify it once it has ended" if writer else "it was stopped"
        return [Finding(True, name, f"unfinished (no {RESCORE_FILE}: {how}): claims nothing, not checked")]
    try:
        info = archived_model(path / RESCORE_FILE, RescoreInfo)
    except (ArchiveError, ValueError) as err:  # a newer benchrun's is said to be that, as its run.json is
        why = (str(err) if isinstance(err, ArchiveError) else f"unreadable: {validation_said(err)}"
               if isinstance(err, ValidationError) else f"unreadable: {err}" if isinstance(err, NotJSON)
               else "unreadable: not a rescore's JSON")
        return [Finding(False, f"{name}/{RESCORE_FILE}", why)]
    if (info.run_id, info.manifest_id) == (run.id, run.info.manifest_id) and info.rescore != path.name:
        return [Finding(False, f"{name}/{RESCORE_FILE}", f"is rescore {info.rescore} of this run, in folder "
                                                        f"{path.name}: a copy of it, which no rescore makes")]
    if (info.rescore, info.run_id, info.manifest_id) != (path.name, run.id, run.info.manifest_id):
        return [Finding(False, f"{name}/{RESCORE_FILE}", f"is rescore {info.rescore} of run {info.run_id} (manifest "
                                                        f"{str(info.manifest_id)[:12]}…), not of this run")]
    strays = [file for file in info.files if Path(file).name != file or file in (".", "..")]
    if strays:
        return [Finding(False, f"{name}/{RESCORE_FILE}", f"names a file outside its folder: {strays[0]!r}")]
    undigested = [file for file in (SCORES, SUMMARY) if file not in info.files]
    if undigested:
        return [Finding(False, f"{name}/{RESCORE_FILE}", f"holds no digest of {' or '.join(undigested)}, which "
                                                        "every rescore writes: nothing covers what they say")]
    if info.judge is not None and JUDGEMENTS not in info.files:
        return [Finding(False, f"{name}/{RESCORE_FILE}", f"holds no digest of {JUDGEMENTS}, which a rescore with "
                                                        "--rejudge writes: nothing covers the grades it asked")]
    partial = [Finding(True, name, said) for said in [covers_fewer(info, run.info.counts.responses)] if said]
    own = Finding(True, f"{name}/{RESCORE_FILE}", f"rescore {info.rescore} of this run")  # a link in its place: `held`
    digested = [replace(f, file=f"{name}/{f.file}") for file, digest in info.files.items()
                for f in check_file(path, file, digest, ("rescore", RESCORE_FILE))]
    return [own, *digested, *partial, *(_numbers(run, path, info) if all(f.ok for f in digested) else ())]


def _numbers(run: Run, path: Path, info: RescoreInfo) -> list[Finding]:
    """A rescore's numbers that its records do not make (`rescore_disagreement`), or the record it cannot read."""
    try:
        return [Finding(False, *found) for found in [rescore_disagreement(run, path, info)] if found]
    except ArchiveError as err:
        return [Finding(False, f"{RESCORES}/{path.name}", str(err))]


def _lines(n: int) -> str:
    return f"{n} line{'s' * (n != 1)}"


def print_verdict(verdict: Verdict) -> None:
    out = output.stdout()
    output.say(out, f"verify {verdict.run.id}  {shown_name(str(verdict.run.path))}")
    for finding in verdict.findings:
        output.say(out, shown_name(finding.text()), style=None if finding.ok else "bold red")
    problems = len(verdict.problems)
    out.print("intact" if verdict.intact else f"NOT intact: {problems} problem{'s' * (problems > 1)}",
              style="bold green" if verdict.intact else "bold red")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="run directory or run id prefix")
    arguments.add_root(parser)
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")


def main(args: argparse.Namespace) -> int:
    verdict = verify_run(resolve_run(args.run, args.root))
    if args.json:
        json.dump(verdict.to_json(), sys.stdout, indent=2)
        print()
    else:
        print_verdict(verdict)
    return EXIT["ok"] if verdict.intact else EXIT["not_intact"]
