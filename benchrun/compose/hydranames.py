"""The names Hydra puts a run's and a sweep's files under (hydra.sweep.subdir, hydra.output_subdir, hydra.job.name):
why one would put them out of the sweep's readers' sight, out of the run's directory, or on a file of the run's own;
and the run's or sweep's whole path, which Hydra keeps in its config."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from pydantic import TypeAdapter, ValidationError

from benchrun.core import secrets
from benchrun.core.errors import ConfigError, problem_said
from benchrun.core.layout import HYDRA_COPIES, LOG, MULTIRUN_FILE, RUN_OWN, SWEEP_FILE
from benchrun.core.settings import Directory


def subdir_refusal(subdir: Any, jobs: float) -> str | None:
    """Why a job directory (hydra.sweep.subdir, as written) is refused, None when it is not: one that would not sit
    directly in the sweep directory, where sweep.json and every audit command look for the sweep's jobs, one that names
    a folder, or interpolates what
    may, for some job, hold a '/' (`${hydra.job.override_dirname}` of `runner.host=http://...`, `${runner.model}` of
    `hf.co/org/model`: each job made two folders down, and sweep.json listed a job missing where two completed); and,
    for a sweep of more than one job, one that names no job (`same`: every job's directory, the second refused there,
    and the sweep summed up as the first alone, exit 0). Nor a hidden one (`.x`: its run completed, and sweep.json,
    the sweep's table and `list` showed no job) or one of the sweep's own files (`sweep.json`: the sweep's summary
    failed, exit 4)."""
    written = str(subdir)
    if "/" in written or "\\" in written or written in ("", ".", ".."):
        return (f"hydra.sweep.subdir={written}: a job's directory is one name directly in the sweep directory "
                "(no '/', not '.' or '..'), where the sweep's jobs are found; leave hydra.sweep.subdir out")
    if written.startswith(".") or written in (SWEEP_FILE, MULTIRUN_FILE):
        return (f"hydra.sweep.subdir={written}: a job's directory is named apart from the sweep's own files "
                f"({SWEEP_FILE}, {MULTIRUN_FILE}) and is not hidden (a name starting with '.', which every reader of "
                "the sweep passes over); leave hydra.sweep.subdir out (benchrun names each job by what it varies), or "
                "name jobs by ${hydra.job.num}")
    if unsafe := [found for found in _interpolations(written) if not SAFE_SUBDIR.fullmatch(found)]:
        return (f"hydra.sweep.subdir={written}: a job's directory is one name directly in the sweep directory, and "
                f"{unsafe[0]} may hold a '/' for some job (an override's value: runner.host=http://...), which puts the "
                "job out of the sweep's sight; leave hydra.sweep.subdir out (benchrun names each job by what it "
                "varies), or name jobs by ${hydra.job.num}")
    if jobs > 1 and not _interpolations(written):
        return (f"hydra.sweep.subdir={written}: every job of the sweep would have this one directory, and a run "
                "directory holds one run (each job after the first refused there, the sweep summed up without it); "
                "leave hydra.sweep.subdir out (benchrun names each job by what it varies), or name jobs by "
                "${hydra.job.num}")
    return None


SAFE_SUBDIR = re.compile(r"\$\{hydra\.job\.(num|id)\}|\$\{sweep_label:.*\}", re.S)
"""The interpolations a job's directory may be named by: a job's number or id, and benchrun's own label (`/`-free)."""


def _interpolations(text: str) -> list[str]:
    """The outermost `${...}` interpolations of `text`, as written."""
    found, depth, start, at = [], 0, 0, 0
    while at < len(text):
        if text.startswith("${", at):
            start, depth, at = (at if depth == 0 else start), depth + 1, at + 2
            continue
        if text[at] == "}" and depth:
            depth -= 1
            if depth == 0:
                found.append(text[start:at + 1])
        at += 1
    return found


def inside_refusal(hydra: DictConfig) -> str | None:
    """Why a name Hydra puts a run's own files under is refused (one that would lead out of the run's directory),
    None when none is:
    hydra.output_subdir (its copies of the config, `.hydra`) and hydra.job.name (its log, `<name>.log`); `../x` put
    them beside the runs, where the next run's replaced them. The job's name is benchrun's: its log is the run's. Nor
    may the copies take a name of the run's own (`run.json`, `rescores`): the run was refused in the directory Hydra
    had just made for it (`holds a sweep`, `already holds a run's files`), which was left there."""
    for key, fix in (("output_subdir", "leave it out (.hydra)"), ("job.name", "leave it out")):
        value = OmegaConf.select(hydra, key)
        if value is not None and ("/" in str(value) or "\\" in str(value) or str(value) in ("", ".", "..")):
            return (f"hydra.{key}={value}: a name in the run's directory (no '/', not '.' or '..'), where its files "
                    f"are kept; {fix}")
    if (copies := OmegaConf.select(hydra, "output_subdir")) in set(RUN_OWN) - {HYDRA_COPIES}:
        return (f"hydra.output_subdir={copies}: a name the run's own files take, which Hydra's copies of the config "
                "would have (the run then refused in its own directory as holding a run or a sweep, or failing as it "
                f"writes); leave it out ({HYDRA_COPIES})")
    if (name := OmegaConf.select(hydra, "job.name")) != Path(LOG).stem:  # `foo`: the log went to foo.log
        return (f"hydra.job.name={name}: the job's name is benchrun's, and names the run's log ({LOG}); leave "
                "hydra.job.name out")
    return None


def secret_refusal(key: str, directory: Path) -> str | None:
    """Why a run's or sweep's directory (`key`, as Hydra resolved it) is refused for holding a credential (the value of
    $HF_TOKEN, a key told by its prefix), read through task.name, runner.model or an interpolation
    (`hydra.run.dir=outputs/${oc.env:V}`): its name was kept in run.json and every record; None when it holds none."""
    if (why := secrets.secret_value(str(directory))) is None:
        return None
    return (f"in 'config': {key}: the directory's path would hold {why} (through task.name, the model's name or an "
            "interpolation); secrets are never put in the archive")


def refuse_unusable_path(key: str, directory: str, given: bool) -> None:
    """Refuse a run's or sweep's directory (its one check) whose absolute path (the working directory's, for a relative
    one) `outputs`' check would refuse (empty, a line break: `run directory:` printed over two lines), said of the value
    when the value is at fault, or that holds `${`, which Hydra, keeping the path in its config (the run's log, its
    output directory), read as an interpolation: a run in a folder named `a${x}` was `cannot resolve: Interpolation key
    'x' not found`, said of hydra.job_logging. `given`: the command line names `key`, which outputs= then does not
    set."""
    whole = os.path.abspath(directory) if directory.strip() else directory  # an empty one is no working directory
    if (why := _unusable(whole)) is not None:
        if (own := _unusable(directory)) is not None:  # the value's own fault, wherever benchrun runs
            raise ConfigError(f"{key}: {own}", file="config")
        raise ConfigError(f"{key}: its path {whole}: {why}; "
                          f"{_way_out(key, directory, given, 'another folder', 'another directory')}", file="config")
    if "${" in whole:
        raise ConfigError(f"{key}: its path {whole} holds '${{', which Hydra reads as an interpolation where it keeps "
                          "the path in its config (the run's log, its output directory); " + _way_out(
                              key, directory, given, "a folder whose path holds no '${'",
                              "a directory whose path holds none"), file="config")


def tilde_refusal(key: str, directory: str) -> str | None:
    """Why a run's or sweep's directory given with a leading `~` (quoted, or by a preset: the command line's unquoted
    one is the home directory already) is refused, a dry run's too: Hydra made a folder named `~` in the working
    directory, where `outputs`' `~` is the home directory (compose.rundirs.outputs_path); None for any other."""
    if not directory.startswith("~"):
        return None
    return str(ConfigError(f"{key}: '{directory}' starts with '~', which Hydra takes as a folder named so in the "
                           "working directory: give the home directory's path, or outputs=~/... for runs beneath it",
                           file="config"))


def _unusable(path: str) -> str | None:
    """Why `path` cannot be a run's or sweep's directory, as `outputs` is checked (settings.Directory); None if it can."""
    try:
        TypeAdapter(Directory).validate_python(path)
    except ValidationError as err:
        return problem_said(err.errors()[0])
    return None


def _way_out(key: str, directory: str, given: bool, folder: str, elsewhere: str) -> str:
    """What mends a refused run or sweep `directory`: `key` given `elsewhere` when the command line names it, or
    outputs=; and running benchrun in `folder`, when the path is the working directory's."""
    named = f"give {key} {elsewhere}" if given else f"give outputs= {elsewhere}"
    return named if os.path.isabs(directory) else f"run benchrun in {folder}, or {named}"
