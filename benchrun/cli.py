"""The Hydra application behind `python -m benchrun`: Hydra composes the config, `benchrun.app.run` does the rest."""

from __future__ import annotations

import io
import os
import re
import sys
import traceback
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import hydra
import omegaconf
import yaml
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException, MissingConfigException, OverrideParseException, SearchPathException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import (
    ConfigTypeError,
    GrammarParseError,
    InterpolationResolutionError,
    OmegaConfBaseException,
    ValidationError,
)

from benchrun.app import run
from benchrun.archive.claims import stray_job_dir
from benchrun.compose import overridewords, takeback
from benchrun.compose.commandline import not_held
from benchrun.compose.config import register_with_hydra, unresolvable
from benchrun.compose.labels import swept_keys, varied
from benchrun.compose.listitems import list_item_said
from benchrun.compose.takeback import forget_hydra_copies
from benchrun.console import output
from benchrun.core.errors import (
    EXIT,
    VERBOSE_ENV,
    BenchrunError,
    ConfigError,
    RunInterrupted,
    os_problem,
    refused_by_system,
)
from benchrun.core.filebytes import SAVE_UTF8, UNASKED, WIDE_SAMPLE, not_a_file, not_utf8_said, unasked_said, wide_text
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.layout import RUN
from benchrun.core.loading import load_failure, pythons_own
from benchrun.core.resources import PRIMARY_CONFIG, conf_dir
from benchrun.core.stdfds import display_streams
from benchrun.core.text import names_listed
from benchrun.core.unicodeforms import other_form
from benchrun.core.yamlfile import syntax_error

if TYPE_CHECKING:
    from benchrun.core.sweeprecords import SweepJob

HYDRA_CODE = tuple(str(Path(package.__file__).parent) + os.sep for package in (hydra, omegaconf))
"""Where Hydra's own modules are (its core plugins, the basic sweeper and launcher, among them), and OmegaConf's,
which Hydra composes the config with."""

register_with_hydra()  # at import, so launchers' worker processes (joblib, submitit) resolve conf/ too


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name=PRIMARY_CONFIG)
def hydra_main(cfg: DictConfig) -> int:
    """One job: run it; a user-facing error is one line. Its exit code ends the process, or in a sweep is returned to
    the launcher (a dry run's jobs: benchrun.callbacks.SweepSummaryCallback)."""
    display_streams()  # here too, for a launcher's worker process: its output is a display as well
    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    worker = not INTERRUPTS.installed()  # a launcher's worker process (joblib's, a Slurm job's): see interrupted()
    INTERRUPTS.install()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    overrides = OmegaConf.to_container(hydra_cfg.overrides.task)  # as given: `${...}` in one is not resolved
    sweep = Path(hydra_cfg.sweep.dir).absolute() if multirun else None
    try:
        code = run(cfg, run_dir, overrides=overrides, sweep=sweep,
                   varied=varied(overrides, swept_keys(sweep)) if sweep else None)
    except KeyboardInterrupt as err:
        code = interrupted(err, run_dir, worker)
    except BenchrunError as err:  # reported here: a task function that raises makes Hydra print more than one line
        if sweep is not None and stray_job_dir(run_dir, sweep) is not None:
            takeback.forget_copies_through(run_dir)
        if os.environ.get(VERBOSE_ENV) == "1":
            raise
        output.error(str(err))
        code = err.exit_code
    except Exception as err:
        if os.environ.get(VERBOSE_ENV) == "1" or (said := _unexpected(err)) is None:
            raise
        if not (run_dir / RUN).exists():
            forget_hydra_copies(run_dir)
        output.error(said[0])
        code = said[1]
    if code and not multirun:
        sys.exit(code)
    return code


def _unexpected(err: Exception) -> tuple[str, int] | None:
    """The line and exit code for an error no part of the run said: the system refusing a run before it claimed its
    directory (a run's own is said with what it records: out of memory, or of threads), or a module benchrun loads
    lazily that fails to load (`load_failure`); None for any other (a bug: its traceback)."""
    if isinstance(err, (MemoryError, RuntimeError)) and refused_by_system(err):
        return f"{os_problem(err)} before the run started: nothing was asked or recorded", EXIT["archive"]
    line = load_failure(err)
    return None if line is None else (line, EXIT["usage"])


def interrupted(err: KeyboardInterrupt, run_dir: Path, worker: bool) -> int:
    """A signal stopped the job: before the run claimed its directory, take back what Hydra put there. In the process
    that read the command line it stops the sweep too (raised); a worker's job ends with its line and its exit code,
    as a failed job does: submitit passes on only an Exception (a job that raised KeyboardInterrupt left no result,
    and the sweep waited for it for ever) and a Slurm job cancelled with `scancel` is that job's end only."""
    if not isinstance(err, RunInterrupted) and not (run_dir / RUN).exists():
        forget_hydra_copies(run_dir)
    if not worker:
        raise err
    output.error(str(err) if isinstance(err, RunInterrupted) else
                 f"interrupted by {INTERRUPTS.signal_name() or 'SIGINT'} before the run started: nothing was asked or "
                 "recorded")
    return EXIT["interrupted"]


def hydra_error(err: Exception) -> str | None:
    """One line for an error of Hydra's or OmegaConf's (the composition, an override) or of a launcher plugin's
    (sbatch refusing the jobs, say); None for any other error."""
    if launched_by_plugin(err):
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        why = INTERRUPTS.stopped_for or (lines[-1] if lines else type(err).__name__)  # its own failure, not the stop's
        return f"hydra/launcher could not launch the sweep's jobs: {why}"
    if isinstance(err, yaml.MarkedYAMLError):  # a preset of the user's own (--config-dir DIR) that is not YAML
        mark = err.problem_mark or err.context_mark
        return str(ConfigError(syntax_error(err), file=mark.name if mark else None))
    if isinstance(err, yaml.reader.ReaderError):  # a character YAML reads in no file: a NUL of UTF-16, ESC
        return str(ConfigError(_unread_character(err), file=err.name))
    if isinstance(err, UnicodeDecodeError) and (read := _file_hydra_read(err)) is not None:  # nor UTF-8
        said = wide_text(err.object) or not_utf8_said(err) + SAVE_UTF8
        return str(ConfigError(said, file=read))
    if isinstance(err, RecursionError) and (loop := _defaults_loop(err)) is not None:
        return loop
    if (item := list_item_said(err)) is not None:  # an override into a list's item it does not hold
        return item
    if (kept := overridewords.kept_unread(err, sys.argv[1:])) is not None:
        return kept
    if not isinstance(err, (HydraException, OmegaConfBaseException)):
        return _hydras_own(err)
    if isinstance(err, InterpolationResolutionError):  # hydra.run.dir's name made of a value that cannot be had
        return str(unresolvable(err, sys.argv[1:]))
    if isinstance(err, OverrideParseException):
        return overridewords.unquoted_character(err) or overridewords.unreadable_override(err)
    if isinstance(err, SearchPathException) and (found := CONFIG_DIR.fullmatch(str(err))) and os.path.exists(found[1]):
        return (f"--config-dir: '{found[1]}' is {not_a_file(os.stat(found[1]).st_mode) or 'a file'}, not a folder: "
                "name the folder that holds your presets (runner/mine.yaml)")
    if isinstance(err, SearchPathException) and found and (other := other_form(Path(found[1]))) is not None:
        return f"--config-dir: '{found[1]}' is not there; {other}"
    if (unknown := not_held(err)) is not None:
        return unknown
    lines = [line.strip() for line in str(err).splitlines() if line.strip() and not line.strip().startswith(
        ("^", "See https://hydra.cc", "Config search path", "provider="))]
    if isinstance(err, MissingConfigException) and len(lines) > 2 and lines[1].startswith("Available options"):
        return f"{lines[0]}{_name_escaped(err)} (options: {names_listed(lines[2:])})"
    return " ".join(lines + _why(err)) or type(err).__name__


def _name_escaped(err: MissingConfigException) -> str:
    """The preset's name Hydra could not find, its characters beyond ASCII escaped (` (caf\\xe9)`), as the options
    listed beside it are: `café` given in one Unicode form and the file named in the other printed alike; else ''."""
    name = str(err.missing_cfg_file or "")
    return "" if name.isascii() else f" ({ascii(name)[1:-1]})"


CONFIG_DIR = re.compile(r"Additional config directory '(.*)' not found")
"""Hydra's words for a `--config-dir` that is no folder, whether it is missing or a file."""


MERGED = re.compile(r"Cannot merge (\w+) with (\w+)")
"""OmegaConf's words for an override whose value is of another kind than the node it replaces."""
MERGED_KINDS = {"DictConfig": "keys", "ListConfig": "a list"}


def _why(err: Exception) -> list[str]:
    """OmegaConf's reason for a value Hydra could not merge (`Error merging override hydra.job.chdir=abc` said
    nothing more): `Value 'abc' is not a valid bool (type str)`, `no viable alternative at input '${x'` (an
    interpolation begun, never ended), `it holds keys, not a list` (`judge=[a]`); none for any other error."""
    cause = err.__cause__
    said = next(iter(str(cause).strip().splitlines()), "")
    merged = MERGED.fullmatch(said) if isinstance(cause, ConfigTypeError) else None
    if merged is not None:  # a list given where keys are (judge=[a]), or keys where a list is
        return [f"(it holds {MERGED_KINDS.get(merged[1], merged[1])}, not {MERGED_KINDS.get(merged[2], merged[2])})"]
    said = said if isinstance(cause, (ValidationError, GrammarParseError)) else ""
    return [f"({said.strip()})"] if said.strip() and said.strip() not in str(err) else []


def _defaults_loop(err: RecursionError) -> str | None:
    """The line of a config whose defaults list includes itself, directly or round a loop (`--config-dir DIR` with a
    task/self.yaml listing `self`), which Hydra followed to Python's recursion limit (a traceback of 2,500 lines);
    None for any other recursion."""
    chain: list[str] = []
    for frame, _ in traceback.walk_tb(err.__traceback__):
        if frame.f_code.co_name == "_create_defaults_tree_impl" and frame.f_code.co_filename.startswith(HYDRA_CODE):
            path = str(frame.f_locals["root"].node.get_config_path())
            if path in chain:
                loop = " -> ".join([*chain[chain.index(path):], path])
                return (f"in '{path}': its defaults list includes it again ({loop}), which Hydra would follow for "
                        "ever; take it out of the defaults")
            chain.append(path)
    return None


def _unread_character(err: yaml.reader.ReaderError) -> str:
    """Why YAML read no text of a preset: the file's wide encoding (a NUL of UTF-16 text without its mark), or the
    character it takes in no file, as a benchmark's file says it."""
    try:
        with open(err.name, "rb") as file:
            head = file.read(WIDE_SAMPLE)
    except OSError:
        head = b""
    char = chr(err.character) if isinstance(err.character, int) else str(err.character)
    said = unasked_said(char, raw=True) if UNASKED.match(char) else f"{char!r}, which YAML takes in no file"
    return wide_text(head) or f"character {err.position + 1:,}: {said}"


def _file_hydra_read(err: Exception) -> str | None:
    """The name of the file Hydra's own code was reading as `err` was raised (a config file of its search path, a
    preset of the user's own); None when it was reading none."""
    frames = [frame for frame, _ in traceback.walk_tb(err.__traceback__)
              if frame.f_code.co_filename.startswith(HYDRA_CODE)]
    files = [value.name for frame in reversed(frames) for value in frame.f_locals.values()
             if isinstance(value, io.IOBase) and isinstance(getattr(value, "name", None), str)]
    return next(iter(files), None)


def _hydras_own(err: Exception) -> str | None:
    """One line for an error raised in Hydra's (or OmegaConf's) own code that is not one of its errors: a sweeper or
    a launcher refusing a value (`hydra.sweeper.max_batch_size=0`: a bare AssertionError, the failed assertion its
    message), a plugin that is none (`hydra.launcher._target_=os.system`), a merge OmegaConf cannot make
    (`hydra.sweeper.params={...}` into its None: an AttributeError, the key it was merging said after it); None for
    any other error, and for an OSError or one it caused (the job's log on a disk out of inodes: the entry point's
    last resort says it). An error of Python's own modules Hydra called is said with its cause (`hydra_logging`)."""
    frames = [frame for frame in traceback.extract_tb(err.__traceback__) if not pythons_own(frame.filename)]
    refused = isinstance(err, OSError) or isinstance(err.__cause__, OSError)
    if refused or not frames or not frames[-1].filename.startswith(HYDRA_CODE):
        return None
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    said = next(iter(lines), "") or (frames[-1].line or "")
    at = next((f" (at {line.removeprefix('full_key:').strip()})" for line in lines if line.startswith("full_key:")), "")
    cause = f" ({type(err.__cause__).__name__}: {err.__cause__})" if err.__cause__ else ""
    return f"Hydra could not go on: {type(err).__name__}: {said}".rstrip(": ") + cause + at


def lost_sweep(err: Exception) -> str | None:
    """After a launcher plugin failed once a sweep's jobs had started (a worker killed, the out-of-memory killer):
    every job whose process died recorded as `interrupted`, sweep.json written and the sweep printed; the one line
    to say. None when no job had started, or the error is not a launcher's."""
    if not launched_by_plugin(err):
        return None
    said = _launcher_words(err)
    settled = _settle_sweep(f"its process died while the sweep ran (hydra/launcher: {said})")
    if settled is None or isinstance(settled, str):
        return settled and f"hydra/launcher lost the sweep's jobs: {said}; {settled}"
    sweep_dir, dead, jobs = settled
    return (f"hydra/launcher lost the sweep's jobs: {said}; {len(dead)} recorded as 'interrupted' in {sweep_dir}; "
            f"{_finishing([job for job in jobs if job.dir in dead], '')}")


def interrupted_sweep(signal_name: str) -> str | None:
    """After a signal stopped a sweep whose jobs had started: every job whose process died recorded as `interrupted`,
    sweep.json written and the sweep printed; what the line says of it. None when no job had started."""
    return stopped_sweep(f"interrupted by {signal_name}, with the sweep")


def stopped_sweep(reason: str) -> str | None:
    """After a sweep whose jobs had started stopped (`reason`: a signal, or an error Hydra's basic launcher met as it
    made a job's directory, a file planted there): as `interrupted_sweep` says it. None when no job had started."""
    settled = _settle_sweep(reason)
    if settled is None or isinstance(settled, str):
        return settled
    sweep_dir, _, jobs = settled
    statuses = [job.status for job in jobs]
    stopped = [job for job in jobs if job.status == "interrupted"]  # none: nothing to finish
    return (f"the sweep in {sweep_dir} is recorded in its sweep.json, {len(statuses)} "
            f"job{'s' * (len(statuses) != 1)} started "
            f"({', '.join(f'{n} {status}' for status, n in Counter(statuses).items())}); a job it does not list never "
            f"started" + (f"; {_finishing(stopped, ' interrupted one')}" if stopped else ""))


def _finishing(jobs: list[SweepJob], each: str) -> str:
    """How to finish the interrupted `jobs`: resume each that compiled; one stopped before it compiled asked nothing,
    and resume refuses it (`start a new run`), so it is started again."""
    unasked = [job.dir for job in jobs if job.manifest_id is None]
    if not unasked:
        return f"finish each{each} with: benchrun-audit resume RUN"
    they = len(unasked) > 1
    said = (f"{', '.join(unasked)} stopped before {'they' if they else 'it'} compiled and asked nothing: start "
            f"{'them' if they else 'it'} again")
    return said if len(unasked) == len(jobs) else f"{said}; finish each other{each} with: benchrun-audit resume RUN"


def _settle_sweep(reason: str) -> tuple[Path, list[str], tuple[SweepJob, ...]] | str | None:
    """The sweep this process launched, once its dead jobs are recorded as `interrupted` (with `reason`) and
    sweep.json is written and printed: its directory, the names of the jobs settled, every job as sweep.json lists
    it; what could not be recorded when its directory takes no more writes (read-only, full: that was a traceback,
    raised while the stop was being said). None if no job started."""
    from benchrun.archive.lookup import job_dirs  # loaded only when a sweep was stopped: the archive, not at start-up
    from benchrun.archive.sweep import settle_dead_jobs, write_sweep_summary

    for sweep_dir in takeback.MADE.sweeps:
        if not (sweep_dir.is_dir() and job_dirs(sweep_dir)):
            continue
        try:
            dead = [job_dir.name for job_dir in settle_dead_jobs(sweep_dir, reason)]
            summary = write_sweep_summary(sweep_dir)
        except BenchrunError as err:
            return (f"the sweep in {sweep_dir.absolute()} could not be recorded in its sweep.json ({err}); each job's "
                    "run.json says how far it got (benchrun-audit list)")
        output.print_sweep(summary, sweep_dir, output.stdout())
        return sweep_dir.absolute(), dead, summary.jobs
    return None


def _launcher_words(err: Exception) -> str:
    """What a launcher's error says, in one line: its first sentence, whose lines after the first begin in lower case
    (submitit's `Job 7 (task: 0) with path ...` goes on `has not produced any output (state: ...)`, which was cut
    off), and where its exit codes are."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    first = next((at for at, line in enumerate(lines[1:], 1) if not line[0].islower()), len(lines))
    said = lines[:first] + [line for line in lines[first:] if "exit code" in line]
    return " ".join(said) or type(err).__name__


def launched_by_plugin(err: BaseException) -> bool:
    """Whether `err` was raised through a Hydra launcher plugin's code (`hydra_plugins.*`)."""
    return any(f"{os.sep}hydra_plugins{os.sep}" in frame.filename for frame in traceback.extract_tb(err.__traceback__))
