"""Hostile input, twenty-second pass, the files-and-processes side's second wave (issue 19's fresh pass of the same
kinds): hostile command lines, sweeps and launchers, the cases it found bad, each with the rule it now obeys.

- a typo in a setting of the joblib launcher (`hydra/launcher=joblib +hydra.launcher.n_job=2`): Hydra's launcher
  hands every key to joblib.Parallel, whose loky backend dropped the one it does not name: the sweep ran with
  joblib's default number of workers, nothing said. Now refused in one line with the name meant, a dry run alike,
  while the keys joblib reads down its loky chain (`idle_worker_timeout`) are taken
  (`compose.lokykeys`, asked by `compose.hydragiven._check_launcher_keys`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun


@pytest.mark.parametrize("dry", [[], ["dry_run=true"]])
def test_a_typo_in_a_joblib_launcher_setting_is_refused_not_dropped(tmp_path, dry):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=joblib", "+hydra.launcher.n_job=2",
                         "runner.host=http://127.0.0.1:9", *dry, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: hydra.launcher.n_job: unknown setting 'n_job' (did you mean 'n_jobs'?) of "
        "the joblib launcher, which joblib does not take (a key it does not name is dropped unread)\n")
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("setting", ["+hydra.launcher.idle_worker_timeout=10", "hydra.launcher.max_nbytes=2M",
                                     "hydra.launcher.n_jobs=2"])
def test_the_settings_joblib_reads_are_taken(tmp_path, setting):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=joblib", setting, "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert done.stdout.count("dry run: no model was called") == 2
