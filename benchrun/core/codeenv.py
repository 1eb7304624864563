"""The environment of the processes that run a benchmark's code: the import check's and the scorer process."""

from __future__ import annotations

from benchrun.core.secrets import SECRETS


def code_env(scratch: str) -> dict[str, str]:
    """This process's environment without a variable holding a registered key, the temporary files in `scratch`, and
    Python's UTF-8 mode: what the code prints, and a file it opens naming no encoding, are UTF-8 on every machine, as
    on one whose locale is (a scorer printing `猫` failed its sample where the locale was `de_DE.ISO-8859-1`)."""
    return {**SECRETS.child_env(), "TMPDIR": scratch, "PYTHONUTF8": "1"}
