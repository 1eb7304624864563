"""The environment of the processes that run a benchmark's code: the import check's and the scorer process."""

from __future__ import annotations

from benchrun.core.secrets import SECRETS

HASH_SEED = "0"
"""The hash seed of every process that runs a benchmark's code: Python's default, a new seed each process, gave a
scorer whose value follows `hash()` or a set's order (`next(iter(set(words)))`) another value in every rescore."""
INTERPRETER_TALK = ("PYTHONVERBOSE", "PYTHONPROFILEIMPORTTIME", "PYTHONMALLOCSTATS", "PYTHONDEBUG")
"""The switches that make Python itself write to standard error (each import, its time, its allocator's figures):
benchrun.log said the interpreter's hundreds of lines were what `custom_scorer.py printed while it was imported`."""


MACHINE_SAID = ("PYTHONBREAKPOINT",)
"""The switches by which a machine would decide what the benchmark's code does: `PYTHONBREAKPOINT=0` made a
`breakpoint()` left in a scorer nothing, its sample scored, where elsewhere it ended its call, that sample's error
(BdbQuit): a rescore on another machine scored it otherwise."""


def code_env(scratch: str) -> dict[str, str]:
    """This process's environment without a variable holding a registered key or one of INTERPRETER_TALK or
    MACHINE_SAID, the temporary files in `scratch`, one hash seed (HASH_SEED), and Python's UTF-8 mode: what the code
    prints, and a file it opens naming no encoding, are UTF-8 on every machine, as on one whose locale is (a scorer
    printing `猫` failed its sample where the locale was `de_DE.ISO-8859-1`)."""
    kept = {name: value for name, value in SECRETS.child_env().items()
            if name not in INTERPRETER_TALK and name not in MACHINE_SAID}
    return {**kept, "TMPDIR": scratch, "PYTHONUTF8": "1", "PYTHONHASHSEED": HASH_SEED}
