"""The temporary files of a benchmark's code: in a folder of their own ($TMPDIR, `tempfile.tempdir`) for each process
that runs it (the import check's, the scorer process, the run's own as it imports), removed once that code is done.
A file that makes a folder at import and removes it as its process exits (`tempfile.TemporaryDirectory()`, or
`mkdtemp` and `atexit.register(shutil.rmtree, ...)`) left it in $TMPDIR with every run, every resume and every
replaced scorer process: the import check ends by os._exit, the scorer process is killed, and the run's process
keeps no exit function of user code (`compiler.runstate`)."""

from __future__ import annotations

import shutil
import tempfile

PREFIX = "benchrun-scratch-"


def scratch_folder() -> str:
    """A new folder for the temporary files of a process running a benchmark's code."""
    return tempfile.mkdtemp(prefix=PREFIX)


def remove_scratch(folder: str | None) -> None:
    """Remove `folder` and all in it, as far as it can be (a folder user code made unreadable stays)."""
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
