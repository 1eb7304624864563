"""Finding runs: every run directory under an archive root, a run by its path or its run id prefix, a sweep's jobs.
What every command naming runs looks them up with, so a run that cannot be found is said the same way everywhere."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from benchrun.archive.arriving import arriving_run, may_be_arriving, run_arriving
from benchrun.archive.pathmax import run_or_too_long
from benchrun.archive.reader import DEFAULT_ROOT, PathLike, Run, load_run
from benchrun.core.advice import audit_command
from benchrun.core.errors import ArchiveError, cwd_gone, reading
from benchrun.core.home import expanded
from benchrun.core.layout import MULTIRUN_FILE, RESCORES, RUN, SWEEP_FILE, number_in
from benchrun.core.procfs import kernel_devices
from benchrun.core.text import counted


def run_dirs(root: PathLike = DEFAULT_ROOT) -> Iterator[Path]:
    """Every directory under `root` holding a run.json (sweep jobs, and runs made inside another run's directory,
    included); Hydra's folders skipped."""
    return (Path(found) for found in _walk(os.fspath(Path(root))) if isinstance(found, str))


def _walk(root: str) -> Iterator[str | ArchiveError]:
    """`run_dirs` as plain strings (a Path per directory visited costs more than reading its run.json), depth first
    in name order, and for a directory that cannot be listed the error saying so. Each directory is visited once,
    known by its device and inode, so a loop of symbolic links ends and a run linked twice is found once; a link in
    a sweep's directory is not followed (`sweep_jobs`); hidden folders and those an operating system keeps
    (`_os_kept`) are passed over, and so is a folder on one of the kernel's pseudo file systems (/proc, /sys and the
    like: `core.procfs.kernel_devices`), where no run is written: `list /` walked them for minutes."""
    seen: set[tuple[int, int]] = set()
    kernel = kernel_devices()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with reading(folder):
                status = os.stat(folder)
                if (status.st_dev, status.st_ino) in seen or status.st_dev in kernel:
                    continue
                seen.add((status.st_dev, status.st_ino))
                entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except ArchiveError as err:
            if os.path.isdir(folder):  # not a link that leads nowhere, nor a root that is not there
                yield err
            continue
        if run_or_too_long(folder):  # a run.json that is no file (a link to nowhere) is unreadable
            yield folder
        elif may_be_arriving(entry.name for entry in entries) and (where := run_arriving(Path(folder))):
            yield ArchiveError(where, file=folder)  # in the cloud, or being copied in: no run yet
        linked_jobs = any(entry.is_symlink() for entry in entries) and is_sweep(Path(folder))
        stack += [entry.path for entry in entries if not _os_kept(entry.name) and _is_dir(entry)
                  and not (linked_jobs and entry.is_symlink())]  # a link in a sweep's directory is none of its jobs


OS_KEPT = frozenset({"$recycle.bin", "recycler", "system volume information", "lost+found", "#recycle", "#snapshot",
                     "@eadir", "@recycle", "@recently-snapshot", "~snapshot", "network trash folder"})
"""Folders an operating system or a NAS keeps for itself, by name in lower case: Windows' recycle bin (the runs
deleted in Explorer, listed and taken for copies of live ones) and its system folder, fsck's lost+found (which only
root may read: a row `unreadable` in every list of the disk); a Synology's recycle bin and snapshots of a shared folder
(`#recycle`, `#snapshot`) and the index folder it puts in any folder (`@eaDir`, a folder of its own per file, named for
it: `@eaDir/run.json/`), a QNAP's recycle bin and snapshots (`@Recycle`, `@Recently-Snapshot`), a NetApp's snapshots as
a Windows share shows them (`~snapshot`), and the recycle bin of a Mac's shared folder (`Network Trash Folder`,
netatalk's and AFP's). Hidden ones (`.Trash-1000`, `.Trashes`, `.Spotlight-V100`, `.snapshot`) begin with a dot."""


SHOWN = 5
"""How many of the runs an id names are shown in the error that refuses it (the rest counted)."""


def _os_kept(name: str) -> bool:
    """Whether the folder `name` is hidden or one an operating system keeps (OS_KEPT): no run is made there."""
    return name.startswith(".") or name.lower() in OS_KEPT


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
        if not run_or_too_long(Path(ref)):  # a sweep's directory, an archive root: where its runs are said
            raise ArchiveError(f"not a run directory (no run.json){_runs_in(Path(ref))}{_hidden(ref, root)}", file=ref)
        return load_run(ref)
    found = list(scan_runs(root))
    matches = [run for run in found if isinstance(run, Run) and run.id.startswith(ref)]
    if len(whole := [run for run in matches if run.id == ref] or matches) == 1:  # an id given whole names its run
        return whole[0]
    if not matches:  # a root that is no folder (`--root` mistyped) was said to be looked in
        where = f"under {root}" if os.path.isdir(root) else f"(no archive directory '{root}' to look it up in)"
        refuse_gone_cwd(ref, root)
        raise ArchiveError(f"no run directory or run id '{ref}' {where}{_other_case(ref, found)}{_unread(found)}")
    if len(ids := {run.id for run in whole}) == 1:  # a run copied: its id names each copy alike
        raise ArchiveError(f"run id {ids.pop()} is the id of {len(whole)} run directories (copies of one run?): "
                           f"{', '.join(str(run.path) for run in whole[:SHOWN])}; name the one meant by its path")
    shown = ", ".join(f"{run.id} ({run.path})" for run in matches[:SHOWN])
    more = f", and {len(matches) - SHOWN:,} more (give more of the id)" if len(matches) > SHOWN else ""
    raise ArchiveError(f"run id prefix '{ref}' is ambiguous: {shown}{more}")


def refuse_gone_cwd(*paths: PathLike) -> None:
    """Refuse, saying so, a relative path looked in when the working directory it is read from is gone (deleted since
    the shell entered it: `core.errors.cwd_gone`): no run is missing, none could be looked for."""
    if not all(os.path.isabs(path) for path in paths) and (gone := cwd_gone()) is not None:
        raise ArchiveError(gone)


def _hidden(ref: str, root: PathLike) -> str:
    """Said of a folder here that no run is: the run under `root` whose id `ref` begins, which the folder's name hides
    (`mkdir 5555`, then `show 5555` for run 555555555555), and the path that names it."""
    if os.sep in ref or (os.altsep and os.altsep in ref):
        return ""
    found = next((run for run in find_runs(root) if run.id.startswith(ref)), None)
    return "" if found is None else (f"; '{ref}' also begins run id {found.id} under {root}, which this folder's name "
                                     f"hides: name that run by its path ({found.path})")


def _other_case(ref: str, found: list[Run | ArchiveError]) -> str:
    """Said of a run id prefix that begins a run's id but for case (`ABCDEF`, copied from a tool that writes hex in
    capitals): the run it would name, as ids are told apart by case (another tool's `abc` and `ABC` are two runs)."""
    alike = [run for run in found if isinstance(run, Run) and run.id.casefold().startswith(ref.casefold())]
    if not alike:
        return ""
    more = f" (and {counted(len(alike) - 1, 'other run')})" if len(alike) > 1 else ""
    return (f"; run {alike[0].id} ({alike[0].path}){more} begins so but for case, and run ids are told apart by case: "
            "give it as the run's id is written")


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


def named_folder(path: Path) -> Path:
    """The folder `path` names as the file system gives it: one whose last part names none of its own (`.`, `..`,
    `link/..`) resolved whole, as the system resolves `..` (after a symbolic link, its target's parent), never
    collapsed by spelling; any other as given."""
    return Path(os.path.realpath(path)) if path.name in ("", "..") else path


def expand_runs(ref: PathLike, root: PathLike = DEFAULT_ROOT) -> list[Run]:
    """The run `ref` names (a path or an id prefix), or every job of a sweep directory, in job order."""
    return named_runs(ref, root)[0]


def named_runs(ref: PathLike, root: PathLike = DEFAULT_ROOT) -> tuple[list[Run], list[Run]]:
    """`expand_runs`'s runs, and of a sweep's directory the runs made in it later, which it passes over (`sweep_jobs`)."""
    path = Path(named(ref))
    if not path.is_dir() or run_or_too_long(path):  # a run.json that is no file is an unreadable run's
        return [resolve_run(ref, root)], []
    jobs, later = sweep_jobs(path)
    if not (jobs := [(folder, run) for folder, run in jobs if own_run(folder)]):
        what = ("a sweep's directory holding no job (no folder directly in it holds a run.json)" if is_sweep(path)
                else "neither a run nor a sweep directory (no run.json in it or the folders directly in it)")
        raise ArchiveError(f"{what}{_runs_in(path)}{_hidden(os.fspath(ref), root)}", file=os.fspath(ref))
    return [run or load_run(folder) for folder, run in jobs], later


def _runs_in(folder: Path) -> str:
    """Where the runs of a folder that is no run's are, as an error says it: a sweep's jobs, the runs in it (a dated
    folder of runs is no sweep's), the runs a retry or a merge made in a sweep's directory holding no job, or runs
    deeper in it."""
    if held := _rescores_of(folder):
        return held
    if cloud := run_arriving(folder):
        return f"; {cloud}"
    found, later = sweep_jobs(folder)
    if jobs := [d for d, _ in found if os.path.lexists(d / RUN)]:
        held = "it is a sweep's directory: name one of its jobs" if is_sweep(folder) else "it holds runs: name one"
        return f"; {held} ({_some(jobs)})"
    if later:
        return f"; it holds only runs made in it later by a retry or a merge: name one ({_some([r.path for r in later])})"
    deeper = next(run_dirs(folder), None)  # an archive's root: its runs lie deeper, in dated folders
    return f"; runs lie deeper in it ({deeper}): name them ({audit_command('list', folder)})" if deeper else ""


def _rescores_of(folder: Path) -> str:
    """Said of a run's rescores/ folder, or of one rescore in it (`verify .` there): the run whose it is, with which
    its readers read it."""
    whole = Path(os.path.abspath(folder))
    if whole.name == RESCORES and os.path.isfile(whole.parent / RUN):
        return f"; it is the {RESCORES}/ folder of the run in {whole.parent}: name that run, with which it is read"
    if whole.parent.name == RESCORES and os.path.isfile(whole.parent.parent / RUN):
        return f"; it is rescore {whole.name} of the run in {whole.parent.parent}: name that run, with which it is read"
    return ""


def _some(paths: list[Path]) -> str:
    return f"{', '.join(map(str, paths[:2]))}{', ...' * (len(paths) > 2)}"


def is_sweep(path: Path) -> bool:
    """A sweep directory: no run.json of its own, and Hydra's multirun.yaml or benchrun's sweep.json."""
    return (path.is_dir() and not run_or_too_long(path)
            and ((path / SWEEP_FILE).is_file() or (path / MULTIRUN_FILE).is_file()))


def job_dirs(sweep_dir: PathLike) -> list[Path]:
    """The run directories a folder of runs stands for, a sweep's jobs (`<number>_<label>`), by job number then name."""
    return [folder for folder, _ in sweep_jobs(sweep_dir)[0]]


def sweep_jobs(sweep_dir: PathLike) -> tuple[list[tuple[Path, Run | None]], list[Run]]:
    """The run directories a folder of runs stands for, each with its run where it was read, and the runs a `retry` of
    a job or a `merge` of its shard jobs made in a sweep's directory: no job of the sweep (a retry would repeat its
    parent's rows), read by their own paths. Each run.json of a sweep's directory is read once, to tell them apart;
    a folder that holds no sweep stands for every run in it."""
    folders = _folders(sweep_dir)
    if not is_sweep(Path(sweep_dir)):
        return [(folder, None) for folder in folders], []
    read = [(folder, _readable(folder)) for folder in folders]
    later = [run for _, run in read if run is not None and _made_later(run)]
    return [(folder, run) for folder, run in read if run is None or not _made_later(run)], later


def _folders(sweep_dir: PathLike) -> list[Path]:
    dirs = [d for d in Path(sweep_dir).iterdir() if os.path.isdir(d) and not d.name.startswith(".")]
    return sorted(dirs, key=_job_order)


def own_run(folder: Path) -> bool:
    """Whether `folder`, a job's, holds its run: a run.json (or what is in its place) in a folder of the sweep's own,
    not one a symbolic link there leads to (a job writes only into its own; what a link leads to is no job's)."""
    return not folder.is_symlink() and arriving_run(folder)


def _readable(folder: Path) -> Run | None:
    """The run in `folder`; None for none or an unreadable one (a job of its sweep, said as such by its readers)."""
    if folder.is_symlink() or not os.path.isfile(folder / RUN):
        return None
    try:
        return load_run(folder)
    except ArchiveError:
        return None


def _made_later(run: Run) -> bool:
    """Whether a retry or a merge made `run`."""
    return run.info.parent is not None or run.info.merged is not None


def _job_order(path: Path) -> tuple[int, str]:
    number = number_in(path.name.split("_")[0])
    return (1 << 30 if number is None else number, path.name)
