"""What Hydra made for a run or sweep that never started (a config that fails, a signal while Hydra writes its
copies, a launcher that cannot submit), taken back so that nothing is left but what a run recorded. Loads no Hydra."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchrun.compose.slurmcommands import slurm
from benchrun.core.layout import HYDRA_COPIES, HYDRA_COPY_FILES, LOG, MULTIRUN_FILE, RUN
from benchrun.core.procfs import PARENT, descendants, stat_fields

LAUNCHER_FILES = ".submitit"
"""What a launcher plugin writes into the sweep directory before any job starts (submitit's pickles and scripts)."""
LOCAL_STOP_S = 60
"""How long a stopped sweep waits for its local jobs to record how they ended."""
KILLED_S = 10
"""How long it then waits for what it killed to have ended (SIGKILL is delivered, not done, as `kill` returns): a job
still seen running was said `running` in sweep.json."""
SLURM_JOB = re.compile(r"([0-9]+)(_[0-9]+)?")
"""The name of the folder submitit keeps a Slurm job's files in (`<job id>` or `<array job id>_<task>`)."""


@dataclass
class Made:
    """What Hydra made for the command's runs and sweeps, noted as it made it."""

    new_sweeps: list[tuple[Path, Path]] = field(default_factory=list)
    """(sweep directory, its first ancestor that did not exist) for each sweep the command started."""
    sweeps: list[Path] = field(default_factory=list)
    """The sweep directory of each sweep the command launched (its jobs may have started)."""
    new_runs: list[Path] = field(default_factory=list)
    """The run directory of each single run the command started."""
    made_for_runs: dict[str, Path] = field(default_factory=dict)
    """A single run's directory (its absolute path) -> the first of its path's folders that was not there before
    Hydra made it for the run: what taking it back may remove."""
    found_in_runs: dict[str, set[str]] = field(default_factory=dict)
    """A single run's directory (its absolute path) -> which of Hydra's copies folder and the job's log were there
    before Hydra wrote for the run (another Hydra application's, the user's own): not taken back with what Hydra made."""
    slurm_sweeps: list[Path] = field(default_factory=list)
    """The sweep directory of each sweep the command launched as Slurm jobs."""
    local_sweeps: list[Path] = field(default_factory=list)
    """The sweep directory of each sweep the command launched as processes of its own (submitit_local), whose
    launcher files are named by each job's process id."""


MADE = Made()
"""What the command running in this process made (`begin_command`)."""


def begin_command() -> None:
    """Start a command knowing nothing an earlier one in this process made (a library caller of `benchrun.__main__`,
    the in-process test harness, run several): what it takes back is only its own."""
    global MADE
    MADE = Made()


def hydra_dir() -> Path | None:
    """The directory Hydra was last making for the command: a single run's, else a sweep's; None before either."""
    return (MADE.new_runs or MADE.sweeps or [None])[-1]


def forget_hydra_copies(run_dir: Path, secret: bool = False, keep: bool = False) -> None:
    """Delete what Hydra wrote for a run that will not start: its .hydra/ copies, the job's log (of a copies folder or
    a log that was there before, `note_found`, only the copies Hydra wrote into it), and each folder of the run's path
    that Hydra made for it (`note_new_run`: its date directory, `outputs/` and above) if that empties it; with `secret`
    also the sweep's multirun.yaml (its config may hold one). A sweep's job (`keep`) keeps its directory and log, the
    record of how it ended, and loses only what may hold a secret. Taken back as far as the system lets (out of
    memory, a folder it will not list): the error being said is the run's, not the taking back's."""
    with contextlib.suppress(OSError):
        _forget(run_dir, secret, keep)


def _forget(run_dir: Path, secret: bool, keep: bool) -> None:
    if not run_dir.is_dir():  # Hydra could not make it (a file stands there, or in its path): nothing to take back
        return
    path = Path(os.path.abspath(run_dir))
    found = MADE.found_in_runs.get(str(path), set())
    if (secret or not keep) and HYDRA_COPIES in found:  # only what Hydra wrote there: the folder's other files stay
        for name in HYDRA_COPY_FILES:
            (run_dir / HYDRA_COPIES / name).unlink(missing_ok=True)
    elif secret or not keep:
        shutil.rmtree(run_dir / HYDRA_COPIES, ignore_errors=True)
    if secret:
        (run_dir.parent / MULTIRUN_FILE).unlink(missing_ok=True)
    if keep:
        return
    if LOG not in found:
        (run_dir / LOG).unlink(missing_ok=True)
    if (top := MADE.made_for_runs.get(str(path))) is None:  # every folder of its path was there before the run
        return
    for folder in (folder for folder in (path, *path.parents) if folder.is_relative_to(top)):  # up to `top`, no further
        if not folder.is_dir() or any(folder.iterdir()):
            break
        folder.rmdir()


def forget_copies_through(job_dir: Path) -> None:
    """Take back what Hydra wrote for a sweep's job through `job_dir`, which is not the job's own folder (a symbolic
    link planted where it belongs, refused at the claim): its three copies of the config, their folder if that empties
    it, and the job's log if it holds nothing; nothing else there is touched, nor the link."""
    for name in HYDRA_COPY_FILES:
        (job_dir / HYDRA_COPIES / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty: it held more than Hydra's copies
        (job_dir / HYDRA_COPIES).rmdir()
    with contextlib.suppress(OSError):
        if (job_dir / LOG).stat().st_size == 0:
            (job_dir / LOG).unlink()


def note_new_run(run_dir: Path, top: Path | None) -> None:
    """Note `run_dir` as a single run's, with `top`, the first folder of its path that was not there before the run
    (`first_made`, found before the run's directory is made): no folder that was there before (one a script made for
    the run, its parent, a dry run's $TMPDIR) is taken back."""
    MADE.new_runs.append(run_dir)
    path = Path(os.path.abspath(run_dir))
    if top is not None:
        MADE.made_for_runs[str(path)] = top
    note_found(run_dir)


def note_found(run_dir: Path) -> None:
    """Note which of Hydra's copies folder and the job's log `run_dir` holds before Hydra writes for a run (a dry run's
    too): a run refused by its config took back another Hydra application's `.hydra/` whole and the user's own
    `benchrun.log`, which Hydra had only written into and appended to."""
    path = Path(os.path.abspath(run_dir))
    MADE.found_in_runs[str(path)] = {name for name in (HYDRA_COPIES, LOG) if os.path.lexists(path / name)}


def first_made(path: Path) -> Path | None:
    """The first folder of `path`, from the root, that is not there yet: the top of what making it makes."""
    return next((part for part in (*reversed(path.parents), path) if not part.exists()), None)


def take_back_unstarted() -> None:
    """Remove what Hydra made for a run that stopped before it claimed its directory (a signal while Hydra wrote
    its .hydra/ copies, say), then for sweeps that never launched a job."""
    for run_dir in MADE.new_runs:
        if not (run_dir / RUN).exists():
            forget_hydra_copies(run_dir)
    take_back_unlaunched_sweeps()


def take_back_unlaunched_sweeps() -> None:
    """Remove what a sweep that failed before any job started (a job's config did not compose, sbatch refused the
    jobs) created: its directory, holding only Hydra's multirun.yaml and the launcher's files, and the parents made
    for it."""
    for sweep_dir, top in MADE.new_sweeps:
        if sweep_dir.is_dir() and {p.name for p in sweep_dir.iterdir()} - {LAUNCHER_FILES} == {MULTIRUN_FILE}:
            shutil.rmtree(sweep_dir)
            for parent in sweep_dir.parents:
                if parent == top.parent or any(parent.iterdir()):
                    break
                parent.rmdir()


def cancel_slurm_jobs() -> None:
    """Cancel (scancel) the Slurm jobs of the sweeps the command launched, queued or running: a sweep stopped by a
    signal left them queued, to run later into a sweep directory it had said held nothing, or beside a sweep.json that
    did not list them; a running one is then recorded `interrupted`, as a cancelled job is."""
    ids = sorted({found[1] for sweep_dir in MADE.slurm_sweeps for entry in _entries(sweep_dir / LAUNCHER_FILES)
                  if (found := SLURM_JOB.fullmatch(entry.name))})
    if ids:  # no scancel here, or a controller that hangs: the stop is said anyway
        slurm("scancel", *ids)


def stop_launched_jobs() -> None:
    """Stop the jobs of the sweeps the command launched that a signal to it alone (`kill PID`) does not reach: its
    Slurm jobs, and its submitit_local job processes (they went on after the sweep said they were running, and its
    sweep.json said so for ever), then wait for every process below them. Not as submitit cancels (SIGINT to a job's
    controller, which SIGKILLs the job one second later, its run left `running` if it was slow to stop, and which a
    sweep run in a script's background ignores): each controller and the job it runs are sent SIGTERM, and the job
    SIGINT after it, which stops a job whose SIGTERM submitit's handler passes over until benchrun's own is set; what
    still runs LOCAL_STOP_S later (such a job in a script's background, which ignores SIGINT) is killed, as Slurm
    kills a cancelled job that has not ended, and recorded `interrupted` with the sweep."""
    cancel_slurm_jobs()
    me = str(os.getpid())
    pids = [int(entry.name) for sweep_dir in MADE.local_sweeps for entry in _entries(sweep_dir / LAUNCHER_FILES)
            if entry.name.isdigit() and (stat_fields(entry.name) or [None, None])[PARENT] == me]
    below = descendants(*pids)
    jobs = [pid for pid in below if (stat_fields(pid) or [None, None])[PARENT] in map(str, pids)]
    for pid, signum in [*((pid, signal.SIGTERM) for pid in pids + jobs), *((pid, signal.SIGINT) for pid in jobs)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    _wait_ended(below.union(pids), LOCAL_STOP_S)
    for pid in filter(_alive, below.union(pids)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _wait_ended(below.union(pids), KILLED_S)


def _wait_ended(pids: set[int], seconds: float) -> None:
    """Wait up to `seconds` for every process of `pids` to have ended."""
    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (neither gone nor ended, a zombie its parent has not yet waited for)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def _entries(folder: Path) -> list[Path]:
    return list(folder.iterdir()) if folder.is_dir() else []
