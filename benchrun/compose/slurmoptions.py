"""The options a sweep's Slurm jobs are given, as sbatch will take them: the launcher's (`timeout_min`,
`signal_delay_s`, `submitit_folder`), unless its `additional_parameters` give them (submitit writes those over its
own), unless a `$SBATCH_...` variable does (sbatch takes its variables over what its script says). Those that would
stop every job as it starts, start it elsewhere or without this environment, or keep its files where benchrun does not
find them, are refused."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping

from benchrun.compose.slurmcommands import slurm
from benchrun.compose.takeback import LAUNCHER_FILES

SLURM_TIME = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?")
"""Slurm's time limits: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes,
days-hours:minutes:seconds."""
INFINITE = frozenset({"-1", "-1.0"})
"""The time limit Slurm reads as INFINITE, as it does `UNLIMITED` (and `--time=0`: "no time limit be imposed")."""
SIGNAL_TIME = re.compile(r"(?:[RB]+:)?\w+(?:@(\d+))?")
"""Slurm's `--signal=[{R|B}:]<signal>[@<seconds before the end>]` (60 s when not given)."""
SAYS_OTHERWISE = ("submitit reads each job's id from what sbatch says as it submits it ('Submitted batch job N'), "
                  "which this changes, so the sweep could not follow its jobs (submitted, or not at all)")
SUBMITITS_OWN = {"parsable": SAYS_OTHERWISE, "test-only": SAYS_OTHERWISE,
                 "array": "submitit makes the sweep's jobs one array itself, a task per job, and this would leave some "
                          "out, each then taken for lost (hydra.launcher.array_parallelism sets how many run at once)"}
"""sbatch's options that submitit sets or reads itself, and why one given otherwise loses the sweep's jobs."""
SUBMITITS_VARIABLES = {"array": "SBATCH_ARRAY_INX"}
"""The variables through which sbatch takes those of SUBMITITS_OWN that have one (over what its script says)."""
CHECKED = {"chdir": "ch", "workdir": "workdir", "export": "export", "parsable": "pars", "test-only": "te",
           "ntasks": "ntasks"}
"""The sbatch options benchrun checks in `additional_parameters` that submitit does not write itself, each with the
shortest beginning of its name that sbatch takes as that option alone (getopt_long's abbreviations: `--chd` is
--chdir; `--expo` is --export or --export-file, which sbatch refuses itself). One submitit writes (--time, --signal,
--array) follows any beginning of its name in the job's script, whose options it sorts, and is the one sbatch
takes."""


def moved_away(launcher: Mapping[str, Any]) -> str | None:
    """The refusal of jobs started in another directory than this one, where the sweep's relative paths (task.path,
    outputs, runner_file) are found: they asked the benchmark of that name there and wrote their runs there, the
    sweep listing none of them; None when they start here."""
    extra = _extra(launcher)
    where, given = _given(("$SBATCH_CHDIR", os.environ.get("SBATCH_CHDIR")), _of(extra, "chdir"),
                          _of(extra, "workdir"))  # its older name
    if given is None or os.path.realpath(str(given)) == os.path.realpath(os.getcwd()):
        return None
    return (f"{where}={given}: a job of the sweep would start in that directory, where its relative paths (task.path, "
            "outputs, runner_file) name other files than where the sweep was started, and its run would be written "
            "there, outside the sweep; leave it out (jobs start where the sweep is started)")


def submitits_own(launcher: Mapping[str, Any]) -> str | None:
    """The refusal of sbatch options that submitit sets or reads itself: with `parsable` the jobs were submitted,
    submitit could not read their id, and the sweep said it launched nothing (`you may however set the job job_id
    manually`), took its directory back and left them queued; with `array=0-0` (or `$SBATCH_ARRAY_INX=0-0`) the
    second job was never submitted and said lost; None when none is given."""
    extra = _extra(launcher)
    for name, why in SUBMITITS_OWN.items():
        variable = SUBMITITS_VARIABLES.get(name, "")
        where, value = _given((f"${variable}", os.environ.get(variable)), _of(extra, name))
        if value is not None:
            return f"{where}={str(value).lower() if isinstance(value, bool) else value}: {why}; leave it out"
    return None


def no_environment(launcher: Mapping[str, Any]) -> str | None:
    """The refusal of jobs started without this process's environment (`--export=NONE`, or naming only some
    variables, as some sites' profiles set `$SBATCH_EXPORT`): submitit could not tell in it that it ran in Slurm, and
    every job ended before it started, the sweep said only `srun: error: ...: Exited with exit code 1`; None for
    ALL (the default) or ALL with more."""
    where, given = _given(("$SBATCH_EXPORT", os.environ.get("SBATCH_EXPORT")), _of(_extra(launcher), "export"))
    if given is None or str(given).strip().upper().split(",")[0] == "ALL":
        return None
    return (f"{where}={given}: each job would start without this process's environment, in which submitit tells "
            "that it runs in Slurm (and benchrun finds PATH, HOME and the API key): every job would end before it "
            "starts; leave it out, or give ALL (ALL,NAME=value adds to it)")


def files_elsewhere(launcher: Mapping[str, Any], sweep_dir: Path) -> str | None:
    """The refusal of a `submitit_folder` outside the sweep's directory, where benchrun finds the sweep's jobs: it
    watched none of them (a job that can never start pended for ever) and cancelled none when the sweep stopped (left
    queued, to run into the directory taken back); None for the preset's."""
    folder = launcher.get("submitit_folder")
    if Path(str(folder)) == sweep_dir / LAUNCHER_FILES / "%j":
        return None
    return (f"hydra.launcher.submitit_folder={folder}: benchrun finds a sweep's Slurm jobs by their files in the "
            f"sweep's directory ({LAUNCHER_FILES}/%j there), to watch them and to cancel them if the sweep stops; "
            "elsewhere they would be left queued; leave it out")


def patterned(sweep_dir: Path) -> str | None:
    """The refusal of a sweep directory holding '%', which sbatch reads in the paths of each job's log as its file
    name patterns (`%j` the job's id, `%%` a '%'): submitit's files of each job were written beside the sweep, in
    `out123_0/...`, or nowhere, the job then lost unstarted; None for a directory without."""
    if "%" not in str(sweep_dir):
        return None
    return (f"hydra.sweep.dir={sweep_dir}: Slurm reads a '%' in the paths of a job's files as a pattern of its own "
            "(%j the job's id, %% a '%'), so each job's files would be written to another directory than the "
            "sweep's, or to none (the job lost); name the directory without '%' (outputs=..., hydra.sweep.dir=...)")


def all_warning(launcher: Mapping[str, Any]) -> str | None:
    """The refusal of jobs whose time is no longer than their warning (every one stopped as it starts, nothing
    asked), naming where each was given; None when the jobs have time to run."""
    extra = _extra(launcher)
    time_key, minutes = _given(("$SBATCH_TIMELIMIT", os.environ.get("SBATCH_TIMELIMIT")), _of(extra, "time"),
                               ("hydra.launcher.timeout_min", launcher.get("timeout_min")))
    delay_key, delay = _given(("$SBATCH_SIGNAL", os.environ.get("SBATCH_SIGNAL")), _of(extra, "signal"),
                              ("hydra.launcher.signal_delay_s", launcher.get("signal_delay_s")))
    limit, warning = _seconds(minutes), _warning(delay)
    if limit is None or warning is None or limit > warning:
        return None
    said = f"{delay_key}={delay} seconds" if delay_key.endswith("_s") else f"{warning} seconds ({delay_key}={delay})"
    return (f"{time_key}={minutes}: Slurm warns a job {said} before its time is up, and a run ends at that warning "
            f"(interrupted, to be resumed), so every job would stop as it starts; give jobs more than {warning / 60:g} "
            f"minutes, or a smaller {delay_key}")


def _extra(launcher: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """The launcher's `additional_parameters` by the sbatch option each is, with where it was given and its value:
    submitit writes `test_only` as --test-only, and sbatch takes a beginning of an option's name as the option
    (`chd` as --chdir), which passed every check made of the whole name; of two naming one option, the one sbatch
    takes, the last in the script (submitit writes them sorted)."""
    found = {}
    for key, value in sorted((launcher.get("additional_parameters") or {}).items(), key=lambda item: str(item[0])):
        flag = str(key).replace("_", "-")
        name = next((name for name, least in CHECKED.items() if name.startswith(flag) and flag.startswith(least)), flag)
        found[name] = (f"hydra.launcher.additional_parameters.{key}", value)
    return found


def _of(extra: dict[str, tuple[str, Any]], name: str) -> tuple[str, Any]:
    """(where, value) of sbatch's option `name` in `extra` (`_extra`); its value None where none gives it."""
    return extra.get(name, (f"hydra.launcher.additional_parameters.{name}", None))


def _given(*places: tuple[str, Any]) -> tuple[str, Any]:
    """The first of (where, value) that gives a value, else the last."""
    return next((place for place in places if place[1] is not None), places[-1])


def _seconds(limit: Any) -> float | None:
    """A Slurm time limit in seconds (a number is minutes); None for none (`UNLIMITED`; a limit of 0 and -1, which
    sbatch reads as none: `timeout_min=0` was refused, its jobs said to stop as they start) or one not understood."""
    seconds = None if str(limit).strip() in INFINITE else _written_seconds(limit)
    return None if seconds == 0 else seconds


def _written_seconds(limit: Any) -> float | None:
    """A Slurm time limit in seconds as written (a number is minutes); None for one not understood."""
    if isinstance(limit, (int, float)) and not isinstance(limit, bool):
        return limit * 60
    if not isinstance(limit, str) or not (found := SLURM_TIME.fullmatch(limit.strip())):
        return None
    days, first, second, third = (int(part) if part else None for part in found.groups())
    if days is not None:
        return days * 86400 + first * 3600 + (second or 0) * 60 + (third or 0)
    if third is not None:
        return first * 3600 + second * 60 + third
    return first * 60 + (second or 0)


def _warning(delay: Any) -> int | None:
    """How many seconds before a job's end its warning comes: signal_delay_s, or a `--signal` value's."""
    if isinstance(delay, int) and not isinstance(delay, bool):
        return delay
    if not isinstance(delay, str) or not (found := SIGNAL_TIME.fullmatch(delay.strip())):
        return None
    return int(found[1] or 60)


def refusal(launcher: Mapping[str, Any], sweep_dir: Path) -> str | None:
    """Why the sweep's Slurm job options would stop, lose or misplace every job; None when none would."""
    return (all_warning(launcher) or moved_away(launcher) or no_environment(launcher) or patterned(sweep_dir)
            or files_elsewhere(launcher, sweep_dir) or submitits_own(launcher) or one_task(launcher))


MAX_ARRAY = re.compile(r"^MaxArraySize\s*=\s*(\d+)\s*$", re.M)
"""The line of `scontrol show config` saying how many tasks one job array may have (1001 unless configured)."""


def array_too_long(jobs: float) -> str | None:
    """The refusal of a sweep of more jobs than one job array holds on this cluster: submitit makes a sweep's jobs one
    array, which sbatch refused (`Invalid job array specification`, naming neither the limit nor the fix) only after
    Hydra had composed every job's config, minutes for 1,500; None when it fits, or Slurm cannot say."""
    said = slurm("scontrol", "show", "config")
    most = MAX_ARRAY.search(said.stdout) if said is not None and not said.returncode else None
    if most is None or jobs <= int(most[1]):
        return None
    return (f"in 'config': the sweep makes {int(jobs):,} jobs, and this cluster's Slurm takes at most "
            f"{int(most[1]):,} in one job array (MaxArraySize), which submitit makes of a sweep's jobs; sweep fewer "
            "values, or split the sweep")


TASKS = ("tasks_per_node", "nodes")
"""The launcher's keys (Slurm's and submitit_local's) that give a job more than one task."""
TASKS_GIVEN = ("ntasks", "ntasks-per-node", "nodes")
"""sbatch's options, in additional_parameters, that do (the last two, which submitit writes itself, by their whole
name only)."""


def one_task(launcher: Mapping[str, Any]) -> str | None:
    """The refusal of more than one task a job: each task runs the job whole, so `tasks_per_node=3` started its run
    three times at once in its one directory, one asking, the others refused there (`already holds run ...
    (running)`, with the advice to resume it), each holding the job's CPUs and memory; None for one task."""
    extra = _extra(launcher)
    places = [*(_of(extra, name) for name in TASKS_GIVEN),
              *((f"hydra.launcher.{key}", launcher.get(key)) for key in TASKS)]
    where, given = next(((where, value) for where, value in places if value is not None and str(value) != "1"),
                        (None, None))
    if where is None:
        return None
    return (f"{where}={given}: every task of a job runs the whole job, so each run would be started that many times "
            "at once in its one directory (one asking, the others refused there); leave it out (one task a job)")


OUTER_JOB = ("SLURM_", "SLURMD_", "SRUN_", "SUBMITIT_")
"""What the variables a Slurm job or step sets in its processes' environment begin with (submitit's `clean_env`
drops these, and SBATCH_*, which are a user's own defaults for sbatch)."""
KEPT_OUTSIDE_JOBS = ("SLURM_CONF",)
"""Of those, what a site or a user sets outside any job: where Slurm's configuration is."""


def local_time(launcher: Mapping[str, Any]) -> str | None:
    """The refusal of a submitit_local job time of no minutes (`timeout_min=0`, or below 0): submitit kills each job
    before it starts (nothing recorded, the sweep's error a line of dashes); None for any other."""
    minutes = launcher.get("timeout_min")
    if not isinstance(minutes, int) or minutes > 0:
        return None
    return (f"hydra.launcher.timeout_min={minutes}: submitit_local kills a job once it has run that many minutes, so "
            "every job would be killed before it starts; give the minutes a job may run (at least 1)")


def leave_outer_job() -> None:
    """A sweep of Slurm jobs launched from inside a Slurm job or step (an `salloc` session, an sbatch script, an
    `srun`): drop what that job set in this process's environment (as submitit's `clean_env` does), which sbatch
    passes on to every job of the sweep. Each job's srun then failed at once (`SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU,
    and SLURM_MEM_PER_NODE are mutually exclusive`, the outer job's memory beside the sweep's `mem_gb`), leaving no
    result, and with Slurm's accounting off the sweep waited for it for ever."""
    if "SLURM_JOB_ID" not in os.environ:
        return
    for name in [name for name in os.environ if name.startswith(OUTER_JOB) and name not in KEPT_OUTSIDE_JOBS]:
        del os.environ[name]
