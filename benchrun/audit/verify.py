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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchrun.archive import repair
from benchrun.archive.dirlock import ELSEWHERE, LockState, describe, live_writer, probe, writing_elsewhere
from benchrun.archive.headline import seal_missing
from benchrun.archive.lookup import resolve_run
from benchrun.archive.reader import PathLike, Run
from benchrun.archive.standins import stood_in
from benchrun.archive.trust import (
    CONVERTED,
    model_edited,
    records_converted,
    seal_broken,
    strays,
)
from benchrun.archive.writer import file_digest
from benchrun.archive.writerless import lock_told
from benchrun.audit import arguments
from benchrun.audit.conflictcopies import conflict_copies
from benchrun.audit.digests import check_file, check_manifest, config_twice, locate, run_manifest
from benchrun.audit.finding import Finding
from benchrun.audit.heldfiles import held
from benchrun.audit.rescorecheck import check_rescores
from benchrun.audit.sources import check_sources
from benchrun.audit.summarycheck import RunPass, disagreement
from benchrun.console import output
from benchrun.console.visible import shown_name
from benchrun.core.advice import audit_command
from benchrun.core.errors import EXIT, BenchrunError, without_file
from benchrun.core.layout import (
    CONFIG,
    DIGESTS,
    JUDGED_FILES,
    LOCK,
    RECORD_FILES,
    RUN,
    SEAL,
    UNFINISHED,
)


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
    kept = RunPass()
    rescores = check_rescores(run, kept)  # a finished rescore's books are kept in the run's one pass, which follows
    own = _own(run, kept)
    return Verdict(run, (*held(run.path, [*own, *rescores.findings(kept.read)]), *conflict_copies(run.path),
                         *check_lock(run), *check_sources(run, cwd or Path.cwd())))


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


def _own(run: Run, kept: RunPass | None = None) -> list[Finding]:
    return [*check_seal(run), *check_manifest(run), *check_files(run, kept)]


def check_seal(run: Run) -> list[Finding]:
    """run.json against the seal written when the run ended; without one, why (`unsealed`)."""
    path = run.path / SEAL
    if not os.path.lexists(path):
        return [unsealed(run)]
    try:
        seal = run.seal
    except BenchrunError as err:
        return [Finding(False, SEAL, without_file(err))]
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
        return Finding(False, SEAL, seal_missing(run) + (_sealing(run, probe(run.path / LOCK)) if info.files else ""))
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
                f"failed); {how} it with: {audit_command('resume', run.path)}")
    return ""


UNSEALED_LINES = f"record lines checked against {DIGESTS} only"


def check_files(run: Run, kept: RunPass | None = None) -> list[Finding]:
    """Each file digest in run.json; for a run that did not finish, each record line against records.sha256; and
    the files of a run's own names that a run which ended never wrote (`trust.strays`)."""
    return [*_digested(run, kept), *(Finding(False, name, why) for name, why in strays(run))]


def _digested(run: Run, kept: RunPass | None) -> list[Finding]:
    info = run.info
    if info.manifest_id is None:
        return [f for name, digest in info.files.items() for f in check_file(run.path, name, digest)]
    if not info.files:  # a run that says `running` was explained by check_seal
        finish = f"; finish it with: {audit_command('resume', run.path)}" if info.status in UNFINISHED else ""
        unfinished = [] if info.status == "running" else [  # a job its sweep's end said interrupted, say: resume ends it
            Finding(False, RUN, f"the run did not finish (status {info.status}): no final digests; {UNSEALED_LINES}"
                                f"{finish}")]
        present = [name for name in JUDGED_FILES if name in RECORD_FILES or (run.path / name).is_file()]
        located = [f for name in present for f in locate(run.path, name, run)]
        if not all(f.ok for f in located) and (crlf := records_converted(run.path)):
            located = [Finding(False, crlf, CONVERTED)]
        elif not all(f.ok for f in located) and (why := stood_in(run.path / DIGESTS)):  # its lines read as others
            located = [Finding(False, DIGESTS, why), *located]
        started = check_file(run.path, CONFIG, info.config_digest, when="started") if info.config_digest else []
        edited = model_edited(run, all(f.ok for f in started))
        started += [Finding(False, RUN, edited)] if edited else []
        return [*unfinished, *located, *started, *(() if not all(f.ok for f in located) else belonging(run, kept))]
    digested = [f for name, digest in info.files.items() for f in check_file(run.path, name, digest)]
    digested += config_twice(info)
    return [*digested, *(() if not all(f.ok for f in digested) else belonging(run, kept))]


def belonging(run: Run, kept: RunPass | None = None) -> list[Finding]:
    """The committed lines of a run that do not belong to its manifest, as a resume finds them (`repair.check`): of a
    run that did not end, records.sha256 alone covers them, which anyone can have rewritten to match; of one that
    ended, its writer wrote them (a sample answered twice, by a second writer a fork at import made, was sealed
    intact); else the first file or line that no reader reads as what it is (`trust.unreadable`), which every other
    command would stop at."""
    if (manifest := run_manifest(run)) is not None:
        if problems := repair.check(run.path, manifest, run.info).problems:
            return [Finding(False, problem.file, problem.message, problem.line) for problem in problems]
    elif not all(finding.ok for finding in check_manifest(run)):
        return []  # check_manifest says why; a manifest that is not the run's is never read whole
    kept = kept or RunPass()
    if found := kept.read_through(run):
        return [Finding(False, *found)]
    return [Finding(False, *found) for found in [kept.misgraded or kept.books and disagreement(run, kept.books),
                                                 kept.names.contradiction(run)] if found]


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
