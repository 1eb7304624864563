"""How benchrun starts a Python process of its own (the scorer process, the embedded engine's, the import check)."""

from __future__ import annotations

import sys

SAFE_PATH = "-P"
"""No folder of the start on sys.path (Python 3.11's `-P`): `-m` and `-c` put the working directory first, so a
`random.py` or `json.py` where benchrun was run stood in for the standard module in each such process (every user
scorer's score `ScorerUnavailable`, in a run that exited 0)."""


def own_python(*args: str) -> list[str]:
    """The command line of a Python of benchrun's own running `args`: this interpreter, SAFE_PATH."""
    return [sys.executable, SAFE_PATH, *args]
