"""Hostile input, fourth pass, the compose, archive and audit side (issue 19's fresh pass): the cases it found bad,
each with the rule it now obeys.

- `compare` of runs that share no scored sample (another benchmark, say): a table of n=0 lines and exit 0; now such a
  run is named `not compared`, and a compare that compares nothing fails in one line
- a run's `rescores/` that is a symbolic link: `rescore` wrote its new directory where the link pointed; now refused
  in one line naming it, as for the run's own files
"""

from __future__ import annotations

from pathlib import Path

from benchrun.archive.reader import load_run
from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab
from tests.helpers.commands import call_benchrun, make_run


def audit_call(cwd: Path, *args: str):
    return call_benchrun(*args, cwd=cwd, module="benchrun.audit")


def test_compare_of_runs_with_no_sample_in_common_fails(tmp_path):
    folder = make_run(tmp_path / "a", "task=folderbench")
    listed = make_run(tmp_path / "b")
    base, other = load_run(folder), load_run(listed)
    result = audit_call(tmp_path, "compare", str(folder), str(listed))
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: nothing to compare: run {other.id} (llama3.2) has no sample scored in both it and the "
        f"baseline, run {base.id}\n"))
    again = make_run(tmp_path / "c", "task=folderbench")
    result = audit_call(tmp_path, "compare", str(folder), str(listed), str(again))
    assert result.returncode == EXIT["ok"], result.stderr
    assert result.stdout.splitlines()[2] == (f"vs llama3.2 {other.id} ({listed}): not compared: no sample scored in "
                                             f"both it and the baseline, run {base.id}")
    assert result.stdout.splitlines()[4] == f"vs llama3.2 {load_run(again).id} ({again})"


def test_a_rescores_folder_that_is_a_link_is_never_written_through(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run_dir / "rescores").symlink_to(elsewhere)
    result = audit_call(tmp_path, "rescore", str(run_dir))
    assert (result.returncode, result.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir / 'rescores'}': a symbolic link (to {elsewhere}), where the run's own folder "
        "belongs; benchrun never writes through one: put the folder itself there\n"))
    assert list(elsewhere.iterdir()) == []
