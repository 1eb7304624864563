"""The settings of Hydra's joblib launcher that joblib reads: Parallel's own, and what its loky backend (the one that
launcher always uses) takes by name on the way to its workers; joblib drops any other key unread."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping

from benchrun.core.cpus import usable_cores

JOBLIB_LAUNCHER = "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
"""The `_target_` of Hydra's joblib launcher, which hands every key of hydra.launcher to `joblib.Parallel`."""
FILLED = ("self", "cls", "parallel", "env", "context_id", "temp_folder_resolver", "unlink_on_gc_collect")
"""Parameters of the chain that joblib fills itself (a key of that name given too is a TypeError), never a setting."""


def loky_settings() -> list[str] | None:
    """The keys hydra.launcher may give the joblib launcher, or None if this joblib's chain cannot be followed."""
    try:
        steps = _chain()
    except (ImportError, AttributeError, KeyError):
        return None
    names: dict[str, None] = {}
    for step in steps:
        parameters = inspect.signature(step).parameters.values()
        names.update(dict.fromkeys(p.name for p in parameters if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)))
    return sorted(name for name in names if name not in FILLED)


def _chain() -> tuple[Callable[..., Any], ...]:
    """Where joblib hands on the keys it does not name: Parallel's `**backend_kwargs` to loky's `configure`, to the
    memmapping executor, to its reducers, which drop the rest."""
    from joblib import Parallel
    from joblib._memmapping_reducer import get_memmapping_reducers
    from joblib.executor import MemmappingExecutor
    from joblib.parallel import BACKENDS

    return (Parallel.__init__, BACKENDS["loky"].configure, MemmappingExecutor.get_memmapping_executor,
            get_memmapping_reducers)


def overridden_refusal(launcher: Mapping[str, Any]) -> str | None:
    """Why a joblib launcher setting the launcher overrides is refused (None if none is given): it always runs loky,
    each job a process of its own, so `backend=threading` (and `prefer=threads`, a hint joblib reads only when no
    backend is named) ran processes with nothing said."""
    backend, prefer = launcher.get("backend"), launcher.get("prefer")
    given = (f"backend={backend}" if backend not in (None, "loky") else
             f"prefer={prefer}" if prefer not in (None, "processes") else None)
    return given and (f"hydra.launcher.{given}: Hydra's joblib launcher runs each job in a process of its own "
                      "(joblib's loky backend) whatever it is given; leave it out")


def workers_refusal(launcher: Mapping[str, Any], jobs: float) -> str | None:
    """Why a joblib sweep's number of jobs at once (hydra.launcher.n_jobs of `launcher`, for a sweep of `jobs` jobs)
    is refused, None when it is not: one joblib refuses as it launches (`loky_refusal`), or more workers than the sweep
    has jobs and the machine has CPUs, which joblib started every one of at once (`n_jobs=100000` for a sweep of two
    jobs: processes without end, the machine brought to a halt)."""
    workers, cpus = launcher.get("n_jobs"), usable_cores()
    if refused := loky_refusal(workers):
        return (f"hydra.launcher.n_jobs={workers}: {refused} (joblib's words); give the number of jobs run at once "
                "(-1: one per CPU)")
    most = max(int(jobs), cpus)
    if isinstance(workers, int) and not isinstance(workers, bool) and workers > most:
        return (f"hydra.launcher.n_jobs={workers}: joblib starts that many worker processes at once, and the sweep has "
                f"{int(jobs)} jobs on {cpus} CPUs; give at most {most} (or leave it out: one a CPU)")
    return None


def loky_refusal(n_jobs: object) -> str | None:
    """What joblib's loky backend says of `n_jobs` as it launches (`n_jobs == 0 in Parallel has no meaning`), asked
    before: a dry run, which launches nothing, passed what the sweep then refused. None when it takes it."""
    try:
        from joblib.parallel import BACKENDS

        BACKENDS["loky"]().effective_n_jobs(n_jobs)
    except (ImportError, KeyError, TypeError):
        return None
    except ValueError as err:
        return str(err)
    return None
