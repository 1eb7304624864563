"""The commands benchrun advises (`benchrun-audit resume RUN`), written as a shell runs them: pasted, they do what they
say."""

from __future__ import annotations

import shlex
from typing import Any


def audit_command(command: str, *words: Any) -> str:
    """`benchrun-audit COMMAND WORDS...`, each word quoted as a shell needs it: a run directory holding a space
    (`/tmp/my runs/r1`) was two arguments, a `$` or a `;` in it a variable or a second command."""
    return " ".join(["benchrun-audit", command, *(shlex.quote(str(word)) for word in words)])
