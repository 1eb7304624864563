"""The environment of the processes that run a benchmark's code: the import check's and the scorer process."""

from __future__ import annotations

from benchrun.core.secrets import SECRETS

HASH_SEED = "0"
"""The hash seed of every process that runs a benchmark's code: Python's default, a new seed each process, gave a
scorer whose value follows `hash()` or a set's order (`next(iter(set(words)))`) another value in every rescore."""


def code_env(scratch: str) -> dict[str, str]:
    """This process's environment without a variable holding a registered key, the temporary files in `scratch`, one
    hash seed (HASH_SEED), and Python's UTF-8 mode: what the code prints, and a file it opens naming no encoding, are
    UTF-8 on every machine, as on one whose locale is (a scorer printing `猫` failed its sample where the locale was
    `de_DE.ISO-8859-1`)."""
    return {**SECRETS.child_env(), "TMPDIR": scratch, "PYTHONUTF8": "1", "PYTHONHASHSEED": HASH_SEED}
