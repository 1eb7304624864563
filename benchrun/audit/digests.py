"""Each of a run's files against the digest written of it: manifest.json against the manifest id, a file against
its digest in run.json (or a rescore's rescore.json), a record file line by line against records.sha256."""

from __future__ import annotations

from pathlib import Path

from benchrun.archive import ledger, repair
from benchrun.archive.reader import Run
from benchrun.archive.standins import stood_in
from benchrun.archive.trust import CONVERTED, converted, outgrown, unended
from benchrun.archive.writer import file_digest
from benchrun.audit.finding import Finding
from benchrun.core.errors import ArchiveError, BenchrunError, without_file
from benchrun.core.filebytes import missing
from benchrun.core.layout import CONFIG, DIGESTS, JUDGED_FILES, MANIFEST, RUN
from benchrun.core.manifest import Manifest
from benchrun.core.records import FileDigest, RunInfo
from benchrun.core.text import counted


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
        why = stood_in(path, expected) or f"its sha256 {actual[:12]}… is not the manifest id {expected[:12]}… in {RUN}"
        return [Finding(False, MANIFEST, f"changed: {why}")]
    return [Finding(True, MANIFEST, f"hashes to the manifest id {expected[:12]}…")]


def run_manifest(run: Run) -> Manifest | None:
    """The run's manifest, or None when it is not the run's (read whole only once it hashes to the manifest id: a
    planted file of gigabytes is never held) or cannot be read as one (check_manifest and check_sources say why)."""
    if not all(finding.ok for finding in check_manifest(run)):
        return None
    try:
        return run.manifest
    except BenchrunError:
        return None


def config_twice(info: RunInfo) -> list[Finding]:
    """Why a finished run.json's two digests of config.yaml differ (as its start wrote it, `config_digest`, and at the
    end, `files`): config.yaml is written once, as the run starts. None found when they agree, or one is not given."""
    started, ended = info.config_digest, info.files.get(CONFIG)
    if started is None or ended is None or started == ended:
        return []
    return [Finding(False, RUN, f"config_digest gives {CONFIG} as its start wrote it, {_digest(started)}, where "
                                f"files gives it at the end as {_digest(ended)}: {CONFIG} is written once, as the "
                                "run starts")]


def _digest(digest: FileDigest) -> str:
    return f"sha256 {digest.sha256[:12]}… ({counted(digest.size, 'byte')})"


def check_file(run_dir: Path, name: str, expected: FileDigest, writer: tuple[str, str] = ("run", RUN),
               when: str = "finished") -> list[Finding]:
    """One file against its digest in the `writer`'s file (the run's run.json, a rescore's rescore.json), written as
    it `when` (finished; config.yaml as a run started); a changed record file is compared line by line to find where."""
    made_by, holder = writer
    path = run_dir / name
    if not path.is_file():
        return [Finding(False, name, missing(path, f"{_lines(expected.lines)}, {expected.size} bytes when the "
                                                   f"{made_by} {when}"))]
    grown = outgrown(path, expected)
    actual = None if grown is not None else file_digest(path)
    if actual == expected and (why := unended(run_dir, name)):
        return [Finding(False, name, why)]
    if actual == expected:
        return [Finding(True, name, f"{_lines(expected.lines)} as written (sha256 {expected.sha256[:12]}…)")]
    if actual is not None and actual.sha256 == expected.sha256:  # the file is as written; its digest's counts are not
        return [Finding(False, holder, f"files.{name}: {counted(expected.size, 'byte')} and "
                                       f"{counted(expected.lines, 'line')}, where the file its sha256 is of has "
                                       f"{counted(actual.size, 'byte')} and {counted(actual.lines, 'line')}: a digest "
                                       f"no {made_by} writes")]
    if actual is not None and converted(path, expected.sha256):
        return [Finding(False, name, f"changed since the {made_by} {when}: {CONVERTED}")]
    if actual is not None and (why := stood_in(path, expected.sha256)):
        return [Finding(False, name, f"changed since the {made_by} {when}: {why}")]
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


def locate(run_dir: Path, name: str, unfinished: Run | None = None) -> list[Finding]:
    """A record file against its line digests in records.sha256: the first changed line, lines missing or added;
    of a run that did not end (`unfinished`), lines beyond the last digest that a writer stopped mid-commit (or
    writing now) leaves are said to be that, not lines the run did not write."""
    if not (run_dir / name).is_file():
        return [Finding(False, name, missing(run_dir / name))]
    if not (run_dir / DIGESTS).is_file():
        return [Finding(False, name, f"cannot locate changes: {DIGESTS} is {missing(run_dir / DIGESTS)}")]
    found = ledger.check_file(run_dir, name, ledger.read_digests(run_dir).lines.get(name, []))
    findings = [Finding(False, name, problem.message, problem.line) for problem in found.problems]
    manifest = run_manifest(unfinished) if found.tail_lines and unfinished is not None else None
    if manifest is not None and repair.left_by_a_writer(name, found, manifest):
        findings.append(Finding(False, name, f"{_lines(found.tail_lines)} after line {found.written} that {DIGESTS} "
                                             "does not cover yet: what a writer stopped mid-write (or writing now) "
                                             "leaves; a resume drops it and asks again", found.written + 1))
    elif found.tail_lines:
        findings.append(Finding(False, name, f"{_lines(found.tail_lines)} after line {found.written} not written by "
                                             "the run", found.written + 1))
    return findings or [Finding(True, name, f"{_lines(found.written)} match {DIGESTS}")]


def _lines(n: int) -> str:
    return f"{n} line{'s' * (n != 1)}"
