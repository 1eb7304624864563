"""`python -m benchrun.audit <command>` (also `benchrun-audit`): each command lives in its own module; an error is
one line (the system's refusal nothing nearer reported too: an OSError, out of memory, no thread) and an exit code
from `benchrun.core.errors.EXIT`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, NoReturn, Sequence

from benchrun.core.errors import EXIT, BenchrunError, RunInterrupted, os_error_line, refused_by_system
from benchrun.core.loading import load_failure, missing_line, plain_error

try:
    from benchrun.console import output
except Exception as unloaded:  # rich missing, or hidden by a file of the working directory (`rich.py`): one line
    said = missing_line(unloaded) if isinstance(unloaded, ModuleNotFoundError) else load_failure(unloaded)
    if said is None or os.environ.get("HYDRA_FULL_ERROR") == "1" or "--verbose" in sys.argv:
        raise
    plain_error(said)
from benchrun.audit.onceoptions import once
from benchrun.core.commandstart import start_command
from benchrun.core.filemode import refuse_owner_masked
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.secrets import refuse_key_words
from benchrun.core.stacklimit import raise_stack_limit
from benchrun.core.stdfds import output_lost

COMMANDS = {
    "list": ("listing", "every run under the archive root, newest first"),
    "show": ("show", "one run: overrides, identity, metrics with 95% intervals; --samples for each sample; "
                     "--wrong METRIC: the samples below 1, side by side across runs"),
    "rescore": ("rescore", "score a run again from its archived responses, without any model server"),
    "compare": ("compare", "align runs by sample id: differing inputs, metric deltas, flips, significance"),
    "verify": ("verify", "prove a run is intact: manifest id, record hashes, benchmark sources"),
    "export": ("export", "one row per sample x metric as CSV or JSON Lines"),
    "resume": ("resume", "finish an interrupted run in place, from its own manifest"),
    "retry": ("retry", "ask a finished run's failed samples again, into a new run that names its parent"),
    "merge": ("merge", "join the runs of a manifest's shards (shard=i/n) into one verified run"),
    "report": ("report", "a self-contained HTML report of runs or a sweep"),
    "cache": ("cache", "the response cache: where it is, its size, entries per model; --clear empties it"),
}
WRITERS = ("rescore", "export", "resume", "retry", "merge", "report")
"""The commands that make folders or files (in the archive, or where `--out` says)."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage error says when a path given begins with `-`, which it reads as an option."""

    given: Sequence[str] = ()
    """The arguments being parsed."""

    def error(self, message: str) -> NoReturn:
        before = list(self.given)[:list(self.given).index("--")] if "--" in self.given else self.given
        dashed = next((arg for arg in before if arg.startswith("-") and arg != "-" and os.path.lexists(arg)), None)
        super().error(message if dashed is None else (
            f"{message} ('{dashed}' is a path that reads as an option: give it as ./{dashed}, or after --)"))

    def add_argument(self, *names: Any, **kwargs: Any) -> argparse.Action:
        """An argument; an option taking one value, given once (`onceoptions.Once`)."""
        return super().add_argument(*names, **(once(kwargs) if str(names[0]).startswith("-") else kwargs))


def parser_for(command: str | None) -> tuple[argparse.ArgumentParser, object | None]:
    """The top parser, with the chosen command's own options (only that command's module is imported). A command's
    help is written plainly (`95%`): argparse's %-formatting applies to help strings, not to descriptions."""
    parser = _Parser(prog="benchrun-audit", description="Audit past benchrun runs from the archive alone.")
    parser.add_argument("--verbose", action="store_true", help="show full tracebacks")
    parser.add_argument("--version", action=_Version, help="say benchrun's version (and Hydra's) and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    module = None
    for name, (module_name, help_text) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text.replace("%", "%%"), description=help_text)
        if name == command:
            module = importlib.import_module(f"benchrun.audit.{module_name}")
            module.configure(sub)
    return parser, module


class _Version(argparse.Action):
    """`--version`, said as `benchrun --version` says it; its line made only when asked (it loads Hydra)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from benchrun.core.versions import version_line

        print(version_line())
        parser.exit()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if a in COMMANDS), None)
    verbose = "--verbose" in argv or os.environ.get("HYDRA_FULL_ERROR") == "1"
    try:
        refuse_key_words(argv)
        raise_stack_limit("benchrun-audit")
        parser, module = parser_for(command)  # in here: an interrupt while the command's code loads is one line too
        _Parser.given = argv
        args = parser.parse_args(argv)
        if args.command in WRITERS:
            refuse_owner_masked(f"benchrun-audit {args.command}")
        with output.closing_pipe():
            return module.main(args)
    except BenchrunError as err:
        if verbose:
            raise
        output.error(str(err))
        return err.exit_code
    except (OSError, MemoryError, RuntimeError) as err:  # the last resort: the system's refusal (a file system
        if verbose or not refused_by_system(err):  # problem, out of memory or of threads) nothing nearer reported
            raise
        output.error(os_error_line(err))
        return EXIT["archive"]
    except RunInterrupted as err:
        output.error(str(err))
        return err.exit_code
    except KeyboardInterrupt:
        output.error(f"interrupted by {INTERRUPTS.signal_name() or 'SIGINT'}")
        return EXIT["interrupted"]
    except Exception as err:  # a library hidden by a file of the working directory (`yaml.py`), or that failed to load
        if verbose or (said := load_failure(err)) is None:
            raise
        output.error(said)
        return EXIT["usage"]


def entry() -> None:
    """main() with standard output a display, as a run's is: an encoding that cannot hold a character prints its
    escape, a reader that stops early ends the command quietly, any other failed write (a --help's too) is one line
    at the end."""
    start_command()
    try:
        code = main()
    except SystemExit as err:  # argparse ends --help (and a usage error) so, past the check below
        code = err.code
    if (lost := output_lost()) is not None:
        output.error(lost)
        code = code or EXIT["archive"]
    sys.exit(code)


if __name__ == "__main__":
    entry()
