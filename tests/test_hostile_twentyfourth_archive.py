"""Hostile input, twenty-fourth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases
it found bad, each with the rule it now obeys.

- `verify` of a run whose `rescores` is a regular file, or a symbolic link to a folder elsewhere: `intact`, saying
  nothing of it, where it says what stands in place of the run's other parts. Now a FAIL naming what is there
  (`audit.verify.check_rescores`)

What held is in the pass's note.
"""
from __future__ import annotations

from pathlib import Path

from benchrun.core.errors import EXIT
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit


def _failed(cwd: Path, run_dir: Path) -> list[str]:
    """The FAIL lines and the last line `verify RUN` printed; it must have said the run is not intact."""
    done = audit(cwd, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"], done.stdout
    return [line for line in done.stdout.splitlines() if line.startswith(("FAIL", "NOT"))]


LINKED = "in place of the run's own file, which its writer never makes: the run directory no longer holds what it " \
         "wrote there"


# -- rescores that is no folder ----------------------------------------------------------------------------------------

def test_verify_says_a_rescores_that_is_a_file_or_a_link(tmp_path):
    """`rescores` a regular file, or a link to a folder elsewhere: verify passed over it and said `intact`."""
    as_file, as_link = synthetic_run(tmp_path / "f", [1, 0]), synthetic_run(tmp_path / "l", [1, 0])
    (as_file / "rescores").write_text("x")
    (tmp_path / "elsewhere").mkdir()
    (as_link / "rescores").symlink_to("../elsewhere")
    assert _failed(tmp_path, as_file) == [
        "FAIL  rescores: a file in place of the run's own folder, which only a rescore makes: no rescore of the run is "
        "there", "NOT intact: 1 problem"]
    assert _failed(tmp_path, as_link) == [
        "FAIL  rescores: a symbolic link (to ../elsewhere) in place of the run's own folder: the run directory no "
        "longer holds its rescores; none is checked", "NOT intact: 1 problem"]


# -- a run's own files as links ----------------------------------------------------------------------------------------
