"""`python -m benchrun` (installed as `benchrun`): signals (core.interrupts) handled from the first moment, then Hydra.

Every error is one line and an exit code from `benchrun.core.errors.EXIT`, Hydra's own included (a mistyped key, a
preset that does not exist, an override Hydra cannot parse), and a file system's (a read-only or full disk, a path
that is not a directory, a link loop, ...); `--verbose` or HYDRA_FULL_ERROR=1 shows tracebacks. A Python warning
(Hydra's of a `hydra.searchpath` that is not there, of `-m` with `hydra.mode=RUN`) is one line too.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from pathlib import Path

from benchrun.compose.takeback import begin_command
from benchrun.core.commandstart import start_command
from benchrun.core.errors import (
    EXIT,
    VERBOSE_ENV,
    ArchiveError,
    BenchrunError,
    ConfigError,
    RunInterrupted,
    cwd_gone,
    making_said,
    os_error_line,
    os_problem,
    refused_by_system,
)
from benchrun.core.filemode import refuse_owner_masked
from benchrun.core.home import home
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.loading import load_failure, missing_line, plain_error, say_plainly
from benchrun.core.stacklimit import raise_stack_limit
from benchrun.core.stdfds import output_lost
from benchrun.core.text import undecoded, unreadable_here

VERBOSE_FLAG = "--verbose"
MULTIRUN_FLAGS = ("-m", "--multirun")
VALUE_FLAGS = ("--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd",
               "--experimental-rerun")
"""Hydra's flags that take the word after them as their value (unless given as `--flag=value`)."""
INFO_FLAGS = ("--info", "-i")
INFO_CHOICES = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")
"""`--info`'s value, which it may go without."""
LONG_FLAGS = ("--help", "--hydra-help", "--version", "--resolve", "--run", "--multirun", "--shell-completion", "--info",
              *(flag for flag in VALUE_FLAGS if flag.startswith("--")))
_HOME_VALUE = re.compile(r"^([+]{0,2}[\w.]+=)~(?=/|$)")
HYDRAS_PARSER = "Hydra"
"""The description of Hydra's command-line parser (hydra/_internal/utils.py's), which tells it from any other."""


def main() -> None:
    """Handle signals (core.interrupts), refuse credentials on the command line, hand over to Hydra, report in one line."""
    verbose = _prepared()
    if _asks_version(sys.argv[1:]):
        from benchrun.core.versions import version_line

        print(version_line())
        _said_whole()
        return
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises its errors instead of printing them; they are reported here
    if verbose:
        os.environ[VERBOSE_ENV] = "1"
    else:  # one inherited (a benchrun started by a verbose one's scorer) made each job's error two lines, Hydra's too
        os.environ.pop(VERBOSE_ENV, None)
    try:
        _launched()
    except SystemExit as err:  # Hydra ends its --help and --hydra-help so, past the check below
        if not err.code:
            _said_whole()
        raise
    except RunInterrupted as err:
        _stop_launched_jobs()
        sweep = _interrupted_sweep()
        _error(str(err) if sweep is None else f"{err}; {sweep}")
        sys.exit(err.exit_code)
    except KeyboardInterrupt:  # before a run claimed its directory (or a dry run): nothing of benchrun's was written
        _interrupted_before_a_run()
    except BenchrunError as err:
        if verbose:
            raise
        _error(str(err))
        sys.exit(err.exit_code)
    except ModuleNotFoundError as err:  # one of benchrun's own dependencies (a user's file's imports are its error)
        if verbose:
            raise
        plain_error(missing_line(err))
    except Exception as err:
        _failed(err, verbose)
    _said_whole()


def _prepared() -> bool:
    """Make the process ready for a command (standard descriptors, signals, warnings as one line) and take
    `--verbose` off the command line: whether it (or HYDRA_FULL_ERROR=1) asks for tracebacks."""
    begin_command()
    start_command()
    warnings.showwarning = _warning_line
    verbose = VERBOSE_FLAG in sys.argv or os.environ.get("HYDRA_FULL_ERROR") == "1"
    sys.argv = _flags_first([arg for arg in sys.argv if arg != VERBOSE_FLAG])
    return verbose


def _launched() -> None:
    """Check the command line as typed, then hand it to Hydra."""
    typed = sys.argv[1:]
    sys.argv[1:] = [_home(arg) for arg in typed]
    _text_words(typed, sys.argv[1:])
    from benchrun.cli import hydra_main  # imported here: an interrupt while Hydra loads is quiet too
    from benchrun.compose.commandline import refuse_bad_overrides, refuse_replaced_config
    from benchrun.compose.completion import refuse_bad_completion
    from benchrun.compose.infocompose import compose_before_info
    from benchrun.compose.presetpackage import refuse_moved_presets, refuse_preset_record
    from benchrun.compose.userpresets import refuse_expanding_presets
    from benchrun.core.shards import expand_shards

    _working_directory()
    refuse_owner_masked("benchrun")
    raise_stack_limit("benchrun")
    _flag_errors_in_one_line()
    refuse_bad_overrides(sys.argv[1:])  # first: it refuses a word holding a key without printing it
    refuse_replaced_config(sys.argv[1:])
    refuse_bad_completion(sys.argv[1:])
    refuse_moved_presets(sys.argv[1:])
    refuse_preset_record(sys.argv[1:])
    refuse_expanding_presets(sys.argv[1:])
    sys.argv[1:] = expand_shards(sys.argv[1:])
    compose_before_info(sys.argv[1:])
    hydra_main()


def _interrupted_before_a_run() -> None:
    """End a command interrupted before a run claimed its directory (or a dry run), or a sweep's jobs once begun."""
    _stop_launched_jobs()
    why, code = INTERRUPTS.stopped_for, INTERRUPTS.stopped_code if INTERRUPTS.stopped_for else EXIT["interrupted"]
    if (sweep := _interrupted_sweep()) is not None:  # a sweep's jobs, each in a process of its own, had begun
        _error(f"{why or 'interrupted by ' + (INTERRUPTS.signal_name() or 'SIGINT')}: {sweep}")
        _exit_now(code)
    _take_back()
    _error(f"{why or 'interrupted before the run started'}: nothing was asked or recorded")
    _exit_now(code)


def _failed(err: Exception, verbose: bool) -> None:
    """End a command whose error is no benchrun error: a lost sweep, Hydra's own, or the system's refusal, in one
    line; anything else raised on (a traceback: a bug)."""
    if (lost := _lost_sweep(err)) is not None:
        _error(lost)
        sys.exit(EXIT["sweep_failed"])
    line, code = _hydra_error(err), EXIT["usage"]
    if line is None and not verbose and (unloaded := load_failure(err)) is not None:
        plain_error(unloaded)
    if line is None and (cause := _refusal_of(err)) is not None:  # the last resort: the system's refusal
        line, code = _os_error_line(cause), EXIT["archive"]  # nothing nearer reported (Hydra making the run dir)
    _take_back()  # after the line is made: what it takes back may be what filled the disk's last inodes
    if verbose or line is None:
        raise err
    if (cli := sys.modules.get("benchrun.cli")) is not None and (sweep := cli.stopped_sweep(
            f"the sweep stopped: {line}")) is not None:  # its jobs had begun: sweep.json says which ran
        line = f"{line}; {sweep}"
    _error(line)
    sys.exit(code)


def _said_whole() -> None:
    """End with one line and exit 4 when what was printed was cut short (`> /dev/full`), as every command does."""
    if (lost := output_lost()) is not None:
        _error(lost)
        sys.exit(EXIT["archive"])


def _refusal_of(err: BaseException | None) -> BaseException | None:
    """The system's refusal (`refused_by_system`) `err` is, or was raised from (logging's `Unable to configure
    handler 'file'`, over the run's log file that Hydra could not make); None when none is (a chain of causes that
    comes back to itself, `raise err from err`, ends the search)."""
    seen: set[int] = set()
    while err is not None and not refused_by_system(err) and id(err) not in seen:
        seen.add(id(err))
        err = err.__cause__
    return err if err is not None and refused_by_system(err) else None


def _os_error_line(err: OSError | MemoryError | RuntimeError) -> str:
    """The last resort's line; an OSError that names no path (a write that failed) came from Hydra writing its
    files, one that names the run's directory, or a folder on its way, from Hydra making it."""
    from benchrun.compose.takeback import MADE, hydra_dir

    where = hydra_dir() if isinstance(err, OSError) else None
    if where is None or not isinstance(err, OSError):
        return os_error_line(err)
    if err.filename is None:
        return f"{os_problem(err)} writing Hydra's files in {where} (its copies of the config); nothing was recorded"
    if where in MADE.new_runs and where.is_relative_to(os.fsdecode(err.filename)):
        return making_said(err, "run directory", where, "hydra.run.dir")
    return os_error_line(err)


def _working_directory() -> None:
    """Refuse to start in a working directory that cannot be had (deleted since the shell entered it, say) or whose
    path is not UTF-8 (a run failed in a traceback writing it): Hydra and run.json record it, and relative paths are
    read from it."""
    if (gone := cwd_gone()) is not None:
        raise ArchiveError(gone)
    cwd = os.getcwd()
    if (shown := undecoded(cwd)) is not None:
        raise ConfigError(f"the working directory {shown} " + (unreadable_here(cwd) or (
            "is not UTF-8 text, and a run records it as text (run.json's cwd); cd to a directory whose path is")))


def _flag_errors_in_one_line() -> None:
    """Hydra's parser refusing a flag (`--dry-run`, `--cfg=foo`, `--config-dir` without its directory) says so in one
    line: argparse printed Hydra's usage, seven lines, then `__main__.py: error: unrecognized arguments: --dry-run`.
    Any other parser (a benchmark's own code's) refuses as argparse does."""
    refuse = argparse.ArgumentParser.error

    def error(parser: argparse.ArgumentParser, message: str) -> None:
        if parser.description != HYDRAS_PARSER:
            refuse(parser, message)
        raise ConfigError(f"{message}; benchrun --hydra-help lists its flags, and a setting is key=value (dry_run=true)")

    argparse.ArgumentParser.error = error  # type: ignore[method-assign]


def _text_words(typed: list[str], given: list[str]) -> None:
    """Refuse a word of the command line that is not text (bytes that are not UTF-8, or UTF-8 the locale left
    undecoded), as typed or once its `~` is $HOME (`given`): Python keeps such bytes as lone surrogates, which an
    override carried into run.json as a traceback, after the run's directory was made."""
    for word, expanded in zip(typed, given):
        if (shown := undecoded(expanded)) is None:
            continue
        what = f"{shown}'" if undecoded(word) is not None else f"{word}' (~ is {_home_named()})"
        raise ConfigError(f"the command line's word '{what} " + (unreadable_here(expanded) or (
            "is not UTF-8 text (a run records its command line as text, in run.json); give it in UTF-8")))


def _home_named() -> str:
    """`$HOME, '/home/me'`: what `~` stood for, and where it came from ($HOME, or the user's entry when it is unset)."""
    where = "$HOME" if "HOME" in os.environ else "the home directory of this user's entry (HOME is unset)"
    return f"{where}, '{undecoded(str(Path.home())) or Path.home()}'"


def _exit_now(code: int) -> None:
    """Exit with `code` as it is. After a KeyboardInterrupt that escaped code Python ran through exec (the signal
    can land mid-import) CPython exits by SIGINT instead of with the code sys.exit gives; nothing is left to write.
    The exit functions are not run, so a dry run's own directories are removed here (they were left in $TMPDIR)."""
    import logging  # loaded by Hydra already, as a rule; not before the signal handler

    logging.shutdown()
    if (rundirs := sys.modules.get("benchrun.compose.rundirs")) is not None:  # not loaded: no dry run began
        rundirs.remove_dry_run_dirs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _hydra_error(err: Exception) -> str | None:
    """One line for an error of Hydra's (see benchrun.cli.hydra_error); None for any other, or before it was loaded."""
    cli = sys.modules.get("benchrun.cli")
    return None if cli is None else cli.hydra_error(err)


def _lost_sweep(err: Exception) -> str | None:
    """What to say of a sweep whose launcher lost its jobs (see benchrun.cli.lost_sweep); None otherwise."""
    cli = sys.modules.get("benchrun.cli")  # not loaded: the error came before Hydra, no sweep was launched
    return None if cli is None else cli.lost_sweep(err)


def _interrupted_sweep() -> str | None:
    """What to say of a sweep a signal stopped once its jobs had begun (see benchrun.cli.interrupted_sweep)."""
    cli = sys.modules.get("benchrun.cli")
    return None if cli is None else cli.interrupted_sweep(INTERRUPTS.signal_name() or "SIGINT")


def _stop_launched_jobs() -> None:
    """Stop the jobs of a sweep a signal stopped (see benchrun.compose.takeback.stop_launched_jobs)."""
    from benchrun.compose.takeback import stop_launched_jobs

    stop_launched_jobs()


def _take_back() -> None:
    """Remove what Hydra made for a run or sweep that never started."""
    from benchrun.compose.takeback import take_back_unstarted

    take_back_unstarted()


def _flags_first(argv: list[str]) -> list[str]:
    """Hydra's flags before the overrides, `-m` (`--multirun`) first, each other flag with its value in the order
    given: after an override a flag (`-m`, `--cfg job`, `--config-dir DIR`) was Hydra's usage message of nine lines
    (`unrecognized arguments: ...`), the overrides after it not taken."""
    flags: list[str] = []
    overrides: list[str] = []
    at = 1
    while at < len(argv):
        word, at = argv[at], at + 1
        if not word.startswith("-"):
            overrides.append(word)
            continue
        given = at < len(argv) and (_takes_value(word) or (word in INFO_FLAGS and argv[at] in INFO_CHOICES))
        flags.append(word if given or word not in INFO_FLAGS else "--info=all")  # bare, it took the next override
        if given:
            flags.append(argv[at])
            at += 1
    multirun = [flag for flag in flags if flag in MULTIRUN_FLAGS]
    return [argv[0], *multirun[:1], *(flag for flag in flags if flag not in MULTIRUN_FLAGS), *overrides]


def _asks_version(argv: list[str]) -> bool:
    """Whether Hydra's parser would read `--version` (or a head of it, `--vers`) among the flags of `argv`: it said
    `Hydra 1.3.8`, which a user (a bug report, a script checking what is installed) takes for benchrun's version."""
    at = 0
    while at < len(argv):
        word, at = argv[at], at + 1
        if len(word) >= len("--v") and "--version".startswith(word):
            return True
        if word.startswith("-") and _takes_value(word):  # its value (`--config-dir --v`) is no flag
            at += 1
    return False


def _takes_value(flag: str) -> bool:
    """Whether Hydra's parser takes the word after `flag` as its value: a flag of VALUE_FLAGS without `=`, or a long
    flag's head that only such flags begin with (`--config-d`)."""
    if "=" in flag:
        return False
    if not flag.startswith("--"):
        return flag in VALUE_FLAGS
    named = [given for given in LONG_FLAGS if given.startswith(flag)]
    return bool(named) and all(given in VALUE_FLAGS for given in named)


def _home(arg: str) -> str:
    """`task.path=~/benchmarks/arith` as a shell would give it for an assignment: ~ is the home directory, $HOME; one
    set empty is refused (~ was the file system's root: `outputs=~` put run directories there)."""
    return _HOME_VALUE.sub(lambda m: m[1] + str(home(f"the override {arg!r}", "give the path itself")), arg)


def _warning_line(message: Warning | str, *_: object, **__: object) -> None:
    """`warnings.showwarning` for benchrun: the warning's words on one line, without the file and line of the library
    that gave it (Hydra's were three lines naming its own source)."""
    from benchrun.console import output

    output.warning(" ".join(str(message).split()))


def _error(message: str) -> None:
    """Say `message` as benchrun's error line; without benchrun.console where memory is too short to load it (a
    `ulimit -v` of 50 MB: its MemoryError was a traceback in place of the line)."""
    try:
        from benchrun.console import output  # loaded only now: nothing but the standard library before the handler
    except MemoryError:
        say_plainly(message)
        return
    output.error(message)


if __name__ == "__main__":
    main()
