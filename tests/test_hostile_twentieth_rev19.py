"""Hostile input, twentieth pass, the review of the nineteenth pass's own new code (issue 19's fresh pass of the same
kinds): what it added, attacked, the cases found bad, each with the rule it now obeys.

- a base64 credential that begins with `/` (one in 64 of them: an AWS secret access key `/K7MDENG/bPxRfi...`) given a
  variable in a Slurm sweep's setup: taken for a path from the root, so the sweep went on and the key was written into
  multirun.yaml, each job's .hydra copies and the job's script. Now a path from the root goes through a folder named
  in lower case (`/home`, `/scratch`, `/Users`), which a key's mixed-case parts are not (`core.secrets.PATH_LIKE`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun

SECRET = ("benchrun: error: in 'config': {key}: secrets are never taken from the config, where they would be archived "
          "(a value given to {name}, a credential's name); put an API key in an environment variable and name it with "
          "runner.api_key_env, and give URLs without user names or passwords\n")


@pytest.mark.parametrize("key", ["/K7MDENG/bPxRfiCYEXAMPLEKEYwJalrXUtnFEMI", "/K7MDENGbPxRfiCYEXAMPLEKEYwJalrXUtnFEMI"])
def test_a_base64_credential_beginning_with_a_slash_given_a_variable_in_a_slurm_sweeps_setup_is_refused(tmp_path,
                                                                                                       key):
    """Before: taken for a path from the root (exit 0), the key written into multirun.yaml and the job's script."""
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         f"hydra.launcher.setup=['export AWS_SECRET_ACCESS_KEY={key}']", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", SECRET.format(key="hydra.launcher.setup", name="AWS_SECRET_ACCESS_KEY"))


def test_a_path_from_the_root_given_a_credentials_variable_in_a_slurm_sweeps_setup_is_taken(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         "hydra.launcher.setup=['export SSH_AUTH_SOCK=/tmp/ssh-AbCdEfGh1234/agent.5678', "
                         "'export GOOGLE_APPLICATION_CREDENTIALS=/Users/Me/Keys/service-account', "
                         "'export KEY_DIR=/scratch/project_4471/ModelKeys']", "dry_run=true", cwd=tmp_path)
    assert done.returncode == EXIT["ok"], done.stderr
