"""Whether the benchmark's source files a run read are still as it read them (verify's `sources` findings)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from benchrun.archive.reader import PathLike, Run
from benchrun.audit.finding import Finding
from benchrun.core.errors import ArchiveError, BenchrunError
from benchrun.core.layout import CONFIG, MANIFEST
from benchrun.core.manifest import SourceFile
from benchrun.core.text import counted


def check_sources(run: Run, cwd: PathLike) -> list[Finding]:
    """The benchmark's source files now against the manifest's list: changed, missing and new files."""
    if run.info.manifest_id is None or not (run.path / MANIFEST).is_file():
        return []
    try:
        run.config["task"]["path"]  # the benchmark is located by it
    except (BenchrunError, yaml.YAMLError, KeyError, TypeError):
        return [Finding(False, CONFIG, "missing or unreadable: the benchmark's sources cannot be located")]
    try:
        bench = run.bench_dir(cwd)
    except BenchrunError as err:  # as the run's own error says it: where it looked, and a name in another form
        return [Finding(True, "sources", f"{err}: not checked")]
    from benchrun.compiler.plan import source_files

    if not _the_runs(run):  # read whole only once it is the run's: a planted one may be gigabytes
        return [Finding(True, "sources", "not checked: manifest.json is not the run's")]
    try:
        recorded = manifest_files(run.manifest_bytes)
    except (ValueError, RecursionError):  # not JSON, not a manifest's, or nested deeper than Python recurses
        return [Finding(True, "sources", "not checked: manifest.json is not canonical JSON")]
    try:  # a source now a pipe, a folder, too large or unreadable is not the file the run read
        return compare_sources(recorded, source_files(bench, [f.path for f in recorded]), bench)
    except BenchrunError as err:
        return [Finding(False, "sources", f"{err} (in {bench}): not what the run read")]


def _the_runs(run: Run) -> bool:
    """Whether manifest.json is the run's: no larger than its can be, hashing to its manifest id."""
    try:
        return run.manifest_sha256() == run.info.manifest_id
    except ArchiveError:
        return False


def manifest_files(data: bytes) -> list[SourceFile]:
    """The `files` of a manifest, decoding only the top-level values before it (not the samples)."""
    text, decoder, pos = data.decode("utf-8"), json.JSONDecoder(), 1
    while pos < len(text) and text[pos] != "}":
        key, pos = decoder.raw_decode(text, pos)
        value, pos = decoder.raw_decode(text, pos + 1)
        if key == "files":
            if not isinstance(value, list):  # a manifest hashing to its id may still not be benchrun's
                raise ValueError("files: not a list")
            return [SourceFile.model_validate(f) for f in value]
        pos += text[pos] == ","
    return []


def compare_sources(recorded: list[SourceFile], current: tuple[SourceFile, ...], bench: Path) -> list[Finding]:
    before, after = {f.path: f.sha256 for f in recorded}, {f.path: f.sha256 for f in current}
    findings = []
    for path in sorted(before.keys() | after.keys()):
        if path not in after:
            findings.append(Finding(False, f"sources {path}", f"missing from {bench}"))
        elif path not in before:
            findings.append(Finding(False, f"sources {path}", f"new in {bench}: not part of the run"))
        elif before[path] != after[path]:
            findings.append(Finding(False, f"sources {path}", f"changed since the run (sha256 "
                                                                f"{before[path][:12]}… now {after[path][:12]}…)"))
    return findings or [Finding(True, "sources", f"{counted(len(before), 'file')} unchanged in {bench}")]
