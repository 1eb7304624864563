"""Whether a directory can take a new run: not a file, holding no run's files and no sweep (a run made in a sweep's
directory would stand for it in place of its jobs), and not inside another run's directory at any depth (the run
there would carry it in its files: `retry --into RUN/x`, a merge into a shard's folder, hydra.run.dir under a run);
why not, with what to do instead. And whether a file a user names to write (`--output`) is one of the archive's
own, which nothing but its writer may replace."""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path

from benchrun.core.advice import audit_command
from benchrun.core.errors import ArchiveError, BenchrunError
from benchrun.core.filebytes import MAX_JSON_BYTES, read_bounded
from benchrun.core.layout import LOCK, MULTIRUN_FILE, RESCORES, RUN, RUN_FILES, RUN_OWN, SWEEP_FILE, UNFINISHED
from benchrun.core.records import RunInfo

HYDRA_DIR = "hydra.run.dir=..."
"""What names a run's directory, for a run of `python -m benchrun` (retry and merge take --into DIR)."""


def holds_run(run_dir: Path) -> bool:
    """Whether `run_dir` holds any of a run's files; a folder that cannot be looked into (another user's, mode 700)
    holds none that could be read as a run, and is no reason to refuse the directory around it."""
    return any(os.path.lexists(run_dir / name) for name in RUN_FILES)


def is_run(folder: Path) -> bool:
    """Whether `folder` is a run's directory: its run.json and another of the files every run's writer makes (a
    project's own `config.yaml` alone, or a `run.json` alone, makes no folder a run's)."""
    return os.path.lexists(folder / RUN) and any(os.path.lexists(folder / name) for name in (*RUN_FILES, LOCK)
                                                 if name != RUN)


def enclosing_run(path: Path) -> Path | None:
    """The run directory `path` is inside of, at any depth, its links followed; None when it is inside none."""
    return next((folder for folder in Path(os.path.realpath(path)).parents if is_run(folder)), None)


def archive_around(path: Path) -> str | None:
    """Why `path` (links followed) is no place for what is not a run's or a sweep's own: it is such a directory
    (`a run's directory`), or inside one at any depth (`inside a sweep's directory (X)`); None when neither. A folder
    that cannot be looked into holds neither, as os.path.exists says (its own error is said where it is used)."""
    real = Path(os.path.realpath(path))
    for folder in (real, *real.parents):
        kind = "run" if is_run(folder) else "sweep" if any(
            os.path.exists(folder / name) for name in (SWEEP_FILE, MULTIRUN_FILE)) else None
        if kind is not None:
            where = f"a {kind}'s directory" if folder == real else f"inside a {kind}'s directory ({folder})"
            return f"{where}, which holds that {kind}'s files alone"
    return None


MAX_FOLDERS_LOOKED_INTO = 10_000
"""The most folders looked into for a run held in a directory that is to take a run or a sweep (outputs/ holds its
runs two and three levels down); a tree larger than that is looked into that far."""


def held_run(folder: Path) -> Path | None:
    """A run's directory inside `folder` at any depth (found breadth first, links not followed, no deeper than a run),
    looked for in MAX_FOLDERS_LOOKED_INTO folders at most; None when there is none."""
    waiting, looked = deque([folder]), 0
    while waiting and looked < MAX_FOLDERS_LOOKED_INTO:
        looked += 1
        try:
            with os.scandir(waiting.popleft()) as entries:
                inner = [Path(entry.path) for entry in entries if entry.is_dir(follow_symlinks=False)]
        except OSError:  # not a directory, or not there: it holds nothing
            continue
        if (run := next((path for path in inner if is_run(path)), None)) is not None:
            return run
        waiting.extend(inner)
    return None


def holds_sweep(folder: Path) -> bool:
    """Whether `folder` is a sweep's directory: its sweep.json, its multirun.yaml (made as a sweep starts, before
    any job: benchrun.callbacks), or a job's run in a folder of it."""
    return (folder / SWEEP_FILE).exists() or (folder / MULTIRUN_FILE).exists() or (folder.is_dir() and any(
        holds_run(job) for job in folder.iterdir() if os.path.isdir(job) and not job.name.startswith(".")))


def refusal(run_dir: Path, chosen_by: str = HYDRA_DIR, sweep: Path | None = None) -> str | None:
    """Why no run can start in `run_dir` (it is not a directory, or it holds a run; a job of the sweep in `sweep` whose
    directory is not its own, `stray_job_dir`), or None when one can."""
    if sweep is not None and (why := stray_job_dir(run_dir, sweep)) is not None:
        return why
    return _refused(made_as(run_dir), chosen_by)


def made_as(run_dir: Path) -> Path:
    """The folder `run_dir` is once made: a `..` after a folder not made yet (`RUN/new/..`, `a/b/../../..`) names
    none until it is, so such a path is resolved as the folder it then is; any other as given."""
    return Path(os.path.realpath(run_dir)) if ".." in run_dir.parts else run_dir


def _refused(run_dir: Path, chosen_by: str) -> str | None:
    """`refusal` of the folder a run is to be made in, as it is once made."""
    if run_dir.exists() and not run_dir.is_dir():
        return f"{run_dir} is not a directory; nothing was changed; pick a new directory ({chosen_by})"
    if holds_run(run_dir):
        return taken(run_dir, chosen_by)
    if os.path.lexists(run_dir / RESCORES):  # read as the new run's own rescores, which verify then fails as another's
        return (f"{run_dir} holds a {RESCORES}/ folder (another run's rescorings?), which a run made there would take "
                f"for its own; nothing was changed; pick a new directory ({chosen_by})")
    if (outer := enclosing_run(run_dir)) is not None:
        return (f"{run_dir} is inside the run directory {outer}: a run is never made among another run's files; "
                f"nothing was changed; pick a new directory ({chosen_by})")
    if holds_sweep(run_dir):  # a run there would stand for the sweep in place of its jobs (benchrun.archive.reader)
        return (f"{run_dir} holds a sweep (its jobs' runs), which a run made there would hide; nothing was changed; "
                f"pick a new directory ({chosen_by})")
    if (inner := held_run(run_dir)) is not None:  # every later run made where that one is would be refused as inside
        return (f"{run_dir} holds the run directory {inner}: a run is never made around another run's files; nothing "
                f"was changed; pick a new directory ({chosen_by})")
    return None


def stray_job_dir(job_dir: Path, sweep: Path) -> str | None:
    """Why `job_dir`, a job's directory of the sweep in `sweep`, is not a folder of its own inside the sweep's (a
    symbolic link planted where it belongs as the sweep ran, which Hydra made and wrote its copies through, and the
    run after them); None when it is one."""
    inside = os.path.join(os.path.realpath(sweep), os.path.relpath(os.path.abspath(job_dir), os.path.abspath(sweep)))
    if not os.path.islink(job_dir) and os.path.realpath(job_dir) == inside:
        return None
    what = f"a symbolic link (to {os.readlink(job_dir)})" if os.path.islink(job_dir) else \
        f"a way out of the sweep's directory (to {os.path.realpath(job_dir)})"
    return (f"{job_dir} is {what} where the job's own folder in the sweep {sweep} belongs; a job writes only into "
            "a folder of its own: nothing was recorded through it (Hydra's copies of the config were taken back); "
            "remove it and start the job again in a new sweep")


def taken(run_dir: Path, chosen_by: str = HYDRA_DIR) -> str:
    """Why a run cannot start in `run_dir`: the run it holds, and what to do instead."""
    new_dir = f"pick a new directory ({chosen_by})"
    try:
        info = RunInfo.model_validate_json(read_bounded(run_dir / RUN, str(run_dir / RUN), ArchiveError,
                                                                limit=MAX_JSON_BYTES))
    except (BenchrunError, ValueError):
        present = ", ".join(name for name in RUN_FILES if (run_dir / name).exists())
        return f"{run_dir} already holds a run's files ({present}); nothing was changed; {new_dir}"
    finish = f", or finish that run with: {audit_command('resume', run_dir)}" if info.status in UNFINISHED else ""
    return f"{run_dir} already holds run {info.run_id} ({info.status}); nothing was changed; {new_dir}{finish}"


def archive_file(path: Path) -> str | None:
    """Why `path`, its links followed, is no file for a user to write (`--output`): a run's own file or folder or a
    file in one, a file of its rescores, a sweep's sweep.json, which nothing but the archive's writer may replace; or a
    file named as a run's own are, which would make the folder it is in read as a run's (a run.json there, as
    `unreadable` by `list`). None when it is none of those."""
    real = Path(os.path.realpath(path))
    folder = real.parent
    name = found_name(real)
    if found_name(folder.parent) == RESCORES and holds_run(folder.parent.parent):
        return f"a file of rescore {folder.name} of the run in {folder.parent.parent}, which only benchrun writes"
    if name in RUN_OWN and holds_run(folder):
        return f"the {name} of the run in {folder}, which only benchrun writes"
    if (own := _own_folder(folder)) is not None:
        return f"a file in the {found_name(own)} of the run in {own.parent}, which only benchrun writes"
    if name in (SWEEP_FILE, MULTIRUN_FILE) and holds_sweep(folder):
        return f"the {name} of the sweep in {folder}, which only benchrun writes"
    if name in (*RUN_FILES, LOCK, SWEEP_FILE):
        whose = "a sweep's" if name == SWEEP_FILE else "a run's"
        return f"{real.name} is the name of {whose} own file: {folder} would be read as {whose} directory"
    return None


def _own_folder(folder: Path) -> Path | None:
    """The run's own folder (`rescores/`, `.hydra/`) that `folder` is, or is inside at any depth; None when none."""
    return next((own for own in (folder, *folder.parents) if found_name(own) in RUN_OWN and holds_run(own.parent)),
                None)


def found_name(path: Path) -> str:
    """`path`'s name as its folder's file system finds it: in lower case, as the archive's own names are, where
    names are found whatever their case (a FAT or exFAT disk, an SMB share, ext4's casefold folders), so that
    `Run.json` there is the run's run.json."""
    return path.name.lower() if path.name != path.name.lower() and _ignores_case(path.parent) else path.name


def _ignores_case(folder: Path) -> bool:
    """Whether `folder` finds names whatever their case: its first entry with a letter is found in the other case
    too, under a name the folder does not list (a FUSE file system's inode numbers tell nothing); an empty folder
    tells nothing: no."""
    try:
        with os.scandir(folder) as entries:
            other = next((entry.name.swapcase() for entry in entries if entry.name.swapcase() != entry.name), None)
        return other is not None and os.path.lexists(folder / other) and other not in os.listdir(folder)
    except OSError:  # no such folder, or one that cannot be read
        return False
