"""The commands benchrun advises (`benchrun-audit resume RUN`), written as a shell runs them: pasted, they do what they
say."""

from __future__ import annotations

import re
import shlex
from typing import Any

UNDECODED = re.compile("[\udc80-\udcff]")
"""A byte of a file name that is not UTF-8, as Python decodes it (os.fsdecode: `b'\\xff'` is U+DCFF)."""


def audit_command(command: str, *words: Any) -> str:
    """`benchrun-audit COMMAND WORDS...`, each word quoted as a shell needs it: a run directory holding a space
    (`/tmp/my runs/r1`) was two arguments, a `$` or a `;` in it a variable or a second command."""
    return shell_command("benchrun-audit", command, *words)


def shell_command(*words: Any) -> str:
    """`WORDS...`, each word quoted as a shell needs it (`_quoted`)."""
    return " ".join(_quoted(str(word)) for word in words)


def _quoted(word: str) -> str:
    """`word` as a shell reads it back: shlex's quoting, or for a path holding bytes that are not UTF-8 (no text a
    terminal shows, so shown as U+FFFD, which names another path) bash's `$'...'` with each such byte as `\\xNN`."""
    if not UNDECODED.search(word):
        return shlex.quote(word)
    escaped = word.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + UNDECODED.sub(lambda byte: f"\\x{ord(byte[0]) - 0xDC00:02x}", escaped) + "'"
