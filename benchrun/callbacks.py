"""Hydra callbacks: refuse an empty `outputs` and a directory that already holds a run (or is a file) before Hydra
writes into it (noting the new ones, for benchrun.compose.takeback); summarise a sweep."""

from __future__ import annotations

import fcntl
import functools
import os
import re
import resource
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

from hydra.core.override_parser.types import Override
from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from benchrun.archive.claims import archive_around, holds_sweep, refusal
from benchrun.archive.dirlock import own_file
from benchrun.archive.sweep import write_sweep_summary
from benchrun.archive.sweepsources import changed_source
from benchrun.compiler.tasksdir import bench_around, tasks_around
from benchrun.compose import hydragiven, hydranames, lokykeys, slurmoptions, slurmqueue, sweepsize, sweptonce, takeback
from benchrun.compose.config import checked_directory
from benchrun.compose.lokykeys import JOBLIB_LAUNCHER
from benchrun.compose.rundirs import DRY_RUN_DIRS, stood_for
from benchrun.compose.sweptvalues import refuse_refused_values
from benchrun.console import output
from benchrun.core.errors import EXIT, ArchiveError, BenchrunError, ConfigError, WriteFailed, making_said, os_error_line
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.keys import override_key
from benchrun.core.layout import HYDRA_COPIES, HYDRA_COPY_FILES, LOG, MULTIRUN_FILE
from benchrun.core.text import counted

Hook = Callable[..., None]


def _one_line(hook: Hook) -> Hook:
    """`hook`, an error in which ends benchrun in one line with its exit code: Hydra turns a callback's error into a
    warning of several lines and goes on, past the check (or, after a sweep, without its summary, exit 0)."""
    @functools.wraps(hook)
    def reported(self: Callback, config: DictConfig, **kwargs: Any) -> None:
        try:
            hook(self, config, **kwargs)
        except Exception as err:
            code, line = _said(err)
            output.error(line)
            sys.exit(code)
    return reported


def _said(err: Exception) -> tuple[int, str]:
    """The exit code and the line for an error met in a callback."""
    if isinstance(err, BenchrunError):
        return err.exit_code, str(err)
    if isinstance(err, OSError):
        return EXIT["archive"], os_error_line(err)
    from benchrun.cli import hydra_error  # loaded already: the application's entry, which Hydra calls back

    return EXIT["usage"], hydra_error(err) or f"{type(err).__name__}: {err}"


class RunDirCheck(Callback):
    """Before Hydra creates or writes the run (or sweep) directory: refuse one that already holds a run (or is not a
    directory), so that nothing there changes (Hydra would rewrite its .hydra/ copies), and hold it from another run
    starting there at once (`_hold`). The run's own claim of the directory, under its lock, is what guarantees it;
    this only keeps Hydra's hands off."""

    @_one_line
    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        hydragiven.refuse_given(config)
        run_dir = Path(config.hydra.run.dir)
        if why := hydranames.secret_refusal("hydra.run.dir", run_dir) or hydranames.tilde_refusal(
                "hydra.run.dir", str(config.hydra.run.dir)):  # a dry run's own directory holds neither
            _refuse(why)
        _check_outside_tasks(config, "hydra.run.dir", run_dir)
        _check_inside(config)  # a dry run's too: `hydra.output_subdir=/a/run` rewrote that run's config.yaml
        if config.get("dry_run"):  # Hydra's copies go to its private directory, or to one hydra.run.dir names
            if why := _tmpdir_refusal(run_dir) or refusal(run_dir) or _unowned_hydra_file(run_dir):
                _refuse(why)
            top = takeback.first_made(Path(os.path.abspath(run_dir)))  # hydra.run.dir's folders, if it makes them
            _hold(run_dir)
            takeback.note_new_run(run_dir, top)
            return
        _check_outputs(config, "hydra.run.dir")
        why = refusal(run_dir) or _unowned_hydra_file(run_dir)
        if why:
            _refuse(why)
        top = takeback.first_made(Path(os.path.abspath(run_dir)))
        _hold(run_dir)
        takeback.note_new_run(run_dir, top)

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        _let_go()

    @_one_line
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        hydragiven.refuse_given(config)
        swept = sweepsize.swept(config)
        sweepsize.refuse_varied(swept)
        jobs = sweepsize.checked_size(swept)
        launcher = str(OmegaConf.select(config, "hydra.launcher._target_", default=""))
        if launcher == JOBLIB_LAUNCHER and (why := lokykeys.workers_refusal(config.hydra.launcher, jobs)):
            _refuse(why)
        _check_inside(config)
        if why := hydranames.tilde_refusal("hydra.sweep.dir", str(config.hydra.sweep.dir)):
            _refuse(why)
        if config.get("dry_run"):  # Hydra's copies (multirun.yaml, each job's .hydra) go where hydra.sweep.dir says
            _check_sweep_dir(Path(config.hydra.sweep.dir))
            _check_subdir(config, jobs)
            sweptonce.refuse_swept_twice(swept, config)
            refuse_refused_values(swept, config)
            _check_slurm(config, launcher, jobs)
            would_be = Path(stood_for(config.hydra.sweep.dir))  # what its own directory stands in for, as launched
            if launcher.endswith(".SlurmLauncher") and (why := slurmoptions.patterned(would_be)):
                _refuse(why)
            with read_write(config.hydra), open_dict(config.hydra):
                config.hydra.launcher = {"_target_": BASIC_LAUNCHER}
            return
        _check_outputs(config, "hydra.sweep.dir")
        sweep_dir = Path(config.hydra.sweep.dir)
        if why := hydranames.secret_refusal("hydra.sweep.dir", sweep_dir):  # its jobs would keep it in their records
            _refuse(why)
        _check_sweep_dir(sweep_dir)
        _check_subdir(config, jobs)
        sweptonce.refuse_swept_twice(swept, config)
        refuse_refused_values(swept, config)
        _check_slurm(config, launcher, jobs)
        _check_outside_tasks(config, "hydra.sweep.dir", sweep_dir, swept)
        top = takeback.first_made(sweep_dir)
        _claim(sweep_dir)
        if top is not None:  # made for this sweep: taken back if it never launches a job
            takeback.MADE.new_sweeps.append((sweep_dir, top))
        takeback.MADE.sweeps.append(sweep_dir)
        _pin_sweep_dir(config, sweep_dir)
        if not launcher.endswith(".BasicLauncher"):
            threading.excepthook = _launcher_thread_died
        if launcher.endswith(".LocalLauncher"):
            takeback.MADE.local_sweeps.append(sweep_dir)
        if launcher.endswith(".SlurmLauncher"):
            slurmoptions.leave_outer_job()
            takeback.MADE.slurm_sweeps.append(sweep_dir)
            slurmqueue.watch(INTERRUPTS.stop)


def _check_sweep_dir(sweep_dir: Path) -> None:
    """Refuse a sweep directory that holds a sweep, or is a file or a run's directory: the sweep would be in it."""
    if holds_sweep(sweep_dir):
        _refuse(f"{sweep_dir} already holds a sweep; nothing was changed; pick a new directory "
                "(hydra.sweep.dir=...)")
    if why := refusal(sweep_dir, "hydra.sweep.dir=..."):
        _refuse(why)


def _check_slurm(config: DictConfig, launcher: str, jobs: float) -> None:
    """Refuse a Slurm sweep whose job options would stop, lose or misplace every job, or whose jobs one job array
    cannot hold, and a submitit_local sweep of more than one task a job or of no time; a dry run's too."""
    options = config.hydra.launcher
    if launcher.endswith(".SlurmLauncher") and (why := slurmoptions.refusal(options, Path(config.hydra.sweep.dir))
                                                or slurmoptions.array_too_long(jobs)):
        _refuse(why)
    local = launcher.endswith(".LocalLauncher")
    if local and (why := slurmoptions.one_task(options) or slurmoptions.local_time(options)):
        _refuse(why)


BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"
"""Hydra's launcher of a sweep's jobs one after another in this process (`hydra/launcher=basic`): a dry run's, whatever
hydra.launcher says, so that each job's plan (or its benchmark's mistake) is printed here and nothing is submitted (a
Slurm sweep's dry run was submitted as jobs, their plans and errors in their logs, exit 0)."""


def _launcher_thread_died(args: threading.ExceptHookArgs) -> None:
    """`threading.excepthook` of a process whose launcher runs the sweep's jobs in other processes (joblib, Slurm):
    a thread of the launcher's that died (loky's, which could not start a thread at the limit of processes, `ulimit
    -u`) left the sweep waiting for ever for jobs never handed over. It ends the sweep as a signal would."""
    if issubclass(args.exc_type, SystemExit):
        return
    soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    limit = "" if soft == resource.RLIM_INFINITY else f"; this user may run {soft} processes and threads (ulimit -u)"
    name = args.thread.name if args.thread is not None else "a thread"
    INTERRUPTS.stop(f"the launcher's thread {name} failed ({args.exc_type.__name__}: {args.exc_value}){limit}")


HELD: list[int] = []
"""The open run directory this process holds (`_hold`), until its run ends or another run of it starts."""


def _hold(run_dir: Path) -> None:
    """Hold `run_dir` for this run (a lock on the directory itself) before Hydra writes its copies there: of two runs
    started into it at once, the one the run's claim refused wrote its copies over the other's, or took them back."""
    _let_go()
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        opened = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # Hydra, making it next, says what is wrong, as it did
        return
    fd = fcntl.fcntl(opened, fcntl.F_DUPFD_CLOEXEC, 3)  # not standard output's number, when that was closed (>&-)
    os.close(opened)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        _refuse(f"{run_dir} was taken by another run as this one started (the same run started twice?); nothing was "
                "changed; pick a new directory (hydra.run.dir=...)")
    except OSError:
        os.close(fd)
        return
    HELD.append(fd)


def _let_go() -> None:
    """Let go of the run directory this process held: its run ended (its own lock, run.json, says the rest)."""
    while HELD:
        os.close(HELD.pop())


def _claim(sweep_dir: Path) -> None:
    """Claim `sweep_dir` for this sweep by making its multirun.yaml, as only one process can (Hydra writes the file's
    content next): a sweep started twice with one hydra.sweep.dir (a script run twice) went on into it, each sweep's
    jobs refused where the other's ran, and each sweep.json telling of the other's jobs as its own."""
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise WriteFailed(making_said(err, "sweep directory", sweep_dir, "hydra.sweep.dir")) from None
    try:
        (sweep_dir / MULTIRUN_FILE).open("x").close()
    except FileExistsError:
        _refuse(f"{sweep_dir} was taken by another sweep as this one started (the same sweep started twice?); nothing "
                "was changed; pick a new directory (hydra.sweep.dir=...)")


def _pin_sweep_dir(config: DictConfig, sweep_dir: Path) -> None:
    """Every job of the sweep in `sweep_dir`. Hydra composes each job's config afresh from the command line's hydra
    overrides and the job's own, so a sweep directory named by what the sweep varies (`-m task.path=a,b`, whose name
    is `<task.name>_sweep`) was a directory per job, and the sweep's own (sweep.json) listed none of them: the
    directory is added to those hydra overrides as it was resolved here, and whole, so that a job started in another
    directory (a Slurm job whose `hydra.launcher.setup` runs `cd`) writes its run into it all the same (it wrote its
    run there, the sweep listing no job, exit 0)."""
    with read_write(config.hydra.overrides):
        config.hydra.overrides.hydra.append(f"hydra.sweep.dir={_quoted(str(sweep_dir.absolute()))}")


def _quoted(value: str) -> str:
    """`value` as a quoted value of Hydra's override grammar: a quote escaped, and the backslashes before a quote or
    at the end doubled (any other character stands as it is)."""
    escaped = re.sub(r"(\\*)'", lambda found: found[1] * 2 + "\\'", value)
    return "'" + re.sub(r"(\\+)$", lambda found: found[1] * 2, escaped) + "'"


def _check_outputs(config: DictConfig, directory: str) -> None:
    """Refuse an `outputs` the config check would refuse, and a run or sweep directory (`directory`: hydra.run.dir or
    hydra.sweep.dir) it would refuse as `outputs` (a line break in it), before Hydra makes a directory under it."""
    try:
        checked_directory("outputs", config.get("outputs"))
        hydranames.refuse_unusable_path(directory, OmegaConf.select(config, directory), _given(config, directory))
    except ConfigError as err:
        _refuse(str(err))


def _check_outside_tasks(config: DictConfig, directory: str, made: Path, swept: list[Override] | None = None) -> None:
    """Refuse a run or sweep directory inside the tasks/ folder of the benchmark (of any a sweep runs: `swept`), each
    of whose folders is read as a task (`compiler.tasksdir.tasks_around`), or that is the benchmark's folder or holds
    it (`bench_around`)."""
    paths = next(([value for _, value in sweepsize.job_values(override)] for override in swept or ()
                  if override.key_or_group == "task.path"),
                 [OmegaConf.select(config, "task.path", default=None, throw_on_resolution_failure=False)])
    for check, tail in ((tasks_around, ", the run's own among them"), (bench_around, "")):
        if why := next((why for path in paths if isinstance(path, str) and path and (why := check(path, made))), None):
            scratch = stood_for(str(made)) != str(made)  # a dry run's own folder, made in $TMPDIR
            _refuse(f"{directory}={made}: {why}{tail}; " + (
                "a dry run's files go to a folder of $TMPDIR: set TMPDIR elsewhere" if scratch else
                f"give another {directory}" if _given(config, directory) else "put runs elsewhere (outputs=DIR)"))


def _given(config: DictConfig, directory: str) -> bool:
    """Whether the command line names the run's or sweep's `directory` (hydra.run.dir=...), which outputs= then does
    not set."""
    return any(override_key(o) == directory for o in OmegaConf.to_container(config.hydra.overrides.hydra))


def _unowned_hydra_file(run_dir: Path) -> str | None:
    """Why Hydra cannot write a run's log or its copies of the config in `run_dir`: one there already that is not a
    file of its own (`own_file`: a named pipe held the run at its start for good, waiting for a reader; a symbolic
    link was written through); None when it can."""
    copies = run_dir / HYDRA_COPIES
    try:
        own_file(copies, "folder")
        for path in (run_dir / LOG, *(copies / name for name in HYDRA_COPY_FILES)):
            own_file(path)
    except ArchiveError as err:
        return f"{err}; nothing was changed; pick a new directory (hydra.run.dir=...)"
    return None


def _check_subdir(config: DictConfig, jobs: float) -> None:
    """Refuse a job directory (hydra.sweep.subdir, as written) out of the sweep's readers' sight
    (`hydranames.subdir_refusal`)."""
    if why := hydranames.subdir_refusal(OmegaConf.to_container(config.hydra.sweep, resolve=False)["subdir"], jobs):
        _refuse(why)


def _tmpdir_refusal(run_dir: Path) -> str | None:
    """Why a dry run's own directory is refused when $TMPDIR, where it is made, is in or inside a run's or a sweep's
    directory: said of the variable, not of a directory the user never named (with `hydra.run.dir=` for advice)."""
    if str(run_dir) not in DRY_RUN_DIRS or not (archived := archive_around(Path(tempfile.gettempdir()))):
        return None
    return (f"$TMPDIR ({tempfile.gettempdir()}) is {archived}, and a dry run makes its own directory there; set "
            "TMPDIR to another folder")


def _check_inside(config: DictConfig) -> None:
    """Refuse a name Hydra puts a run's own files under that leads out of the run's directory or takes a name of the
    run's own (`hydranames.inside_refusal`)."""
    if why := hydranames.inside_refusal(config.hydra):
        _refuse(why)


def _refuse(message: str) -> None:
    output.error(message)
    sys.exit(EXIT["usage"])


class SweepSummaryCallback(Callback):
    """After a multirun, summarise the sweep from disk; exit 1 if any job failed (a dry run's too: its jobs' codes,
    each job's mistake said as it was met), or left no directory to sum up, or read its benchmark otherwise than
    another job (`changed_source`)."""

    def __init__(self) -> None:
        self.dry_run_failed = False

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if config.get("dry_run") and job_return.status == JobStatus.COMPLETED and job_return.return_value:
            self.dry_run_failed = True

    @_one_line
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if config.get("dry_run"):
            if self.dry_run_failed:
                sys.exit(EXIT["sweep_failed"])
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        summary = write_sweep_summary(sweep_dir)
        output.print_sweep(summary, sweep_dir, output.stdout())
        launched = int(sweepsize.checked_size(sweepsize.swept(config)))
        if len(summary.jobs) < launched:  # a job's directory removed as it ran: its failure was said, then summed as none
            output.error(f"the sweep launched {counted(launched, 'job')}, and {sweep_dir.absolute()} holds {len(summary.jobs)} of "
                         "them (a job's directory removed while the sweep ran?): sweep.json lists only those")
        if changed := changed_source([sweep_dir / job.dir for job in summary.jobs]):
            output.error(changed)
        if summary.failed or len(summary.jobs) < launched or changed:
            sys.exit(EXIT["sweep_failed"])


LAUNCHER_PID = "BENCHRUN_LAUNCHER_PID"
"""The pid of a sweep's launching process, set for the worker processes it starts (joblib's)."""


class LauncherGone(Callback):
    """In a launcher's worker process (joblib's), after a job: a worker whose launching process has gone (SIGKILLed,
    the OOM killer) ends too, not waiting for ever for jobs that could never come (loky's resource tracker too). Any
    other launch clears a LAUNCHER_PID it found (one set by hand ended a basic sweep after its first job)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        os.environ.pop(LAUNCHER_PID, None)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        os.environ.pop(LAUNCHER_PID, None)
        if OmegaConf.select(config, "hydra.launcher._target_", default="") == JOBLIB_LAUNCHER:
            os.environ[LAUNCHER_PID] = str(os.getpid())  # its workers' parent, which they may outlive

    def on_job_end(self, config: DictConfig, **kwargs: Any) -> None:
        launcher = os.environ.get(LAUNCHER_PID, "")
        if launcher.isdigit() and int(launcher) not in (os.getpid(), os.getppid()):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT["ok"])
