"""Hostile input, eighteenth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- a folder of 255 digits planted under a run's rescores/: every later `rescore` of the run failed `file name too
  long: .../rescores/1000...0` (exit 4), numbering on from it. Now a rescore numbers on from the largest number
  below 10**9 there (`audit.rescore.claim_dir`)

What held is in the pass's note.
"""
from __future__ import annotations

from pathlib import Path

from benchrun.core.errors import EXIT
from benchrun.core.layout import NAME_MAX
from benchrun.testing.inprocess import cli
from tests.helpers.archives import synthetic_run


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


# -- rescores/ ---------------------------------------------------------------------------------------------------------

def test_a_rescore_numbers_on_past_a_planted_folder_of_too_many_digits(tmp_path):
    """A folder named with 255 nines under rescores/ (anyone's, in a shared archive): the next rescore's number was
    one more, 256 digits, and every rescore of the run failed `file name too long`. Now it is passed over."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    (run_dir / "rescores" / ("9" * NAME_MAX)).mkdir(parents=True)
    (run_dir / "rescores" / "999999999").mkdir()
    (tmp_path / "mine.py").write_text("def closeness(response, sample):\n    return 1.0\n")
    for expected in ("1000000000", "1000000001"):
        done = audit(tmp_path, "rescore", str(run_dir), "--scorers", "mine.py", "--only")
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        assert done.stdout.splitlines()[-1] == f"rescore {expected} written to {run_dir / 'rescores' / expected}"
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"
