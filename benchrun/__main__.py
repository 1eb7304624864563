"""`python -m benchrun` (installed as `benchrun`): SIGINT/SIGTERM handled from the first moment, then Hydra."""

from __future__ import annotations

import os
import sys

from benchrun.errors import EXIT, RunInterrupted
from benchrun.interrupts import INTERRUPTS

VERBOSE_FLAG = "--verbose"


def main() -> None:
    """Strip `--verbose` (full tracebacks), handle SIGINT/SIGTERM, and hand over to Hydra."""
    INTERRUPTS.install()
    if VERBOSE_FLAG in sys.argv:
        sys.argv.remove(VERBOSE_FLAG)
        os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        from benchrun.cli import hydra_main  # imported here: an interrupt while Hydra loads ends quietly too

        hydra_main()
    except RunInterrupted as err:
        _error(str(err))
        sys.exit(err.exit_code)
    except KeyboardInterrupt:  # before a run claimed its directory (or a dry run): nothing of benchrun's was written
        _error("interrupted before the run started: nothing was asked or recorded")
        sys.exit(EXIT["interrupted"])


def _error(message: str) -> None:
    from benchrun import console  # loaded only now, so nothing but the standard library stands before the handler

    console.error(message)


if __name__ == "__main__":
    main()
