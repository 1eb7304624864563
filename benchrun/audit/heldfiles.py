"""Whether the files a run directory holds are its own: no symbolic link, as its writers never make nor write through
one (`archive.dirlock.own_file`, which refuses them); a file of other names (hard links) is said, not failed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from benchrun.audit.finding import Finding
from benchrun.core.layout import LOCK, RESCORES, RUN_FILES

NOT_HELD = "the run directory no longer holds what it wrote there"


def held(run_dir: Path, findings: list[Finding]) -> list[Finding]:
    """`findings` with each of the run's own files (or a rescore's, or its folder) that is a symbolic link said to be
    one, in place of what passed of it: what a link points to is not what the run wrote there (a copy of the directory
    keeps the link, not the file; anyone may change it). A file of other names (hard links: `cp -al`, a backup tool's
    snapshot) holds what its digest says, checked as any file's: it passes, said to be one, as no writer takes it."""
    found = [_linked(run_dir, finding.file) for finding in findings]
    links = dict.fromkeys([name for name in RUN_FILES if (run_dir / name).is_symlink()] +
                          [link for link, finding in zip(found, findings) if link and (finding.ok or link != finding.file)])
    names = {name: n for name in dict.fromkeys([*RUN_FILES, LOCK, *(f.file for f in findings)])
             if (n := _names(run_dir / name)) > 1 and _linked(run_dir, name) is None}
    kept = [finding for link, finding in zip(found, findings) if link is None or not finding.ok]
    return [*kept, *(Finding(False, link, _link_said(run_dir, link)) for link in links),
            *(Finding(True, name, f"a file of {n} names (hard links, as `cp -al` or a backup's snapshot makes): what "
                                  "it holds is checked as any file's; benchrun writes into no such file (resume "
                                  "refuses it): copy the run with `cp -r` to resume it") for name, n in names.items())]


def _link_said(run_dir: Path, link: str) -> str:
    """What a symbolic link in place of the run's own file is: one to another of its names (`summary.json -> .s`), or
    to a file elsewhere."""
    target = os.readlink(run_dir / link)
    inside = Path(os.path.realpath(run_dir / link)).is_relative_to(os.path.realpath(run_dir))
    if inside:
        return (f"a symbolic link (to {target}, in the run directory) in place of the run's own file, which its writer "
                f"never makes: it reads another name's file, which no digest of the run names")
    return f"a symbolic link (to {target}) in place of the run's own file, which its writer never makes: {NOT_HELD}"


def _names(path: Path) -> int:
    """How many names the regular file at `path` has (1 for none there, a link or any other kind)."""
    try:
        found = path.lstat()
    except OSError:
        return 1
    return found.st_nlink if stat.S_ISREG(found.st_mode) else 1


def _linked(run_dir: Path, name: str) -> str | None:
    """The first part of the run's own file `name` (relative to `run_dir`: `scores.jsonl`, `rescores/001/...`)
    that is a symbolic link, else None."""
    parts = Path(name).parts
    if not parts or (parts[0] not in RUN_FILES and parts[0] != RESCORES):
        return None
    return next((str(Path(*parts[:n])) for n in range(1, len(parts) + 1) if (run_dir / Path(*parts[:n])).is_symlink()),
                None)
