"""`--shell-completion` (`-sc`) as Hydra takes it: one of install=SHELL, uninstall=SHELL or query=SHELL, of a shell
Hydra completes in, checked before Hydra reads it. Hydra said `Expecting one subcommand ...`, or `No completion plugin
for 'tcsh' found, available`, the shells it has cut off its line, naming no flag."""

from __future__ import annotations

from typing import Sequence

from benchrun.compose.commandline import names_flag, override_words
from benchrun.core.errors import ConfigError

SUBCOMMANDS = ("install", "uninstall", "query")
"""What --shell-completion does: print the shell's script that installs, or uninstalls, the completion, or complete
the command line in $COMP_LINE."""


def refuse_bad_completion(argv: Sequence[str]) -> None:
    """Refuse --shell-completion given other than one SUBCOMMAND=SHELL, of a shell Hydra has a completion for."""
    if not any(word == "-sc" or names_flag(word, "--shell-completion") for word in argv):
        return
    given = [word for word in override_words(argv) if word.partition("=")[0] in SUBCOMMANDS]
    shells = _shells()
    form = f"{', '.join(f'{name}=SHELL' for name in SUBCOMMANDS)} (SHELL: {', '.join(shells)})"
    if len(given) != 1:
        raise ConfigError(f"--shell-completion takes one of {form}, " + (
            f"not {', '.join(given)}" if given else "and none is given"))
    if (shell := given[0].partition("=")[2].strip("'\"")) not in shells:
        raise ConfigError(f"--shell-completion {given[0]}: Hydra completes in no shell named {shell!r}; give one of "
                          f"{', '.join(shells)}")


def _shells() -> list[str]:
    """The shells Hydra's completion plugins complete in (bash, fish, zsh)."""
    from hydra.core.plugins import Plugins
    from hydra.plugins.completion_plugin import CompletionPlugin

    return sorted(plugin.provides() for plugin in Plugins.instance().discover(CompletionPlugin))
