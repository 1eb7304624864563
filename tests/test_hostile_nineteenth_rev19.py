"""Hostile input, nineteenth pass, the review of this pass's own new code (issue 19's fresh pass of the same kinds):
what the runs and rev18 sides merged, attacked, the cases it found bad, each with the rule it now obeys.

- a credential given a variable in a Slurm sweep's setup whose value holds base64's `/`, `+` or `=` (an AWS secret
  access key, `export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`): the check read a value only up
  to its first character not of a key's, so the sweep went on and the key was written into multirun.yaml, each job's
  .hydra copies and the job's script. Now the value is the whole word, base64's characters in it, and a path
  (`config/aws/credentials`, `keys/sa.json`, `/home/me/token`) is not taken for one (`core.secrets.assigned`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun

SECRET = ("benchrun: error: in 'config': {key}: secrets are never taken from the config, where they would be archived "
          "(a value given to {name}, a credential's name); put an API key in an environment variable and name it with "
          "runner.api_key_env, and give URLs without user names or passwords\n")
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(("given", "key", "name"), [
    (f"hydra.launcher.setup=['export AWS_SECRET_ACCESS_KEY={AWS}']", "hydra.launcher.setup", "AWS_SECRET_ACCESS_KEY"),
    (f"hydra.launcher.setup=['export AWS_SECRET_ACCESS_KEY=\"{AWS}\" && srun true']", "hydra.launcher.setup",
     "AWS_SECRET_ACCESS_KEY"),
    (f"+hydra.launcher.additional_parameters.export='ALL,AWS_SECRET_ACCESS_KEY={AWS},X=1'",
     "hydra.launcher.additional_parameters.export", "AWS_SECRET_ACCESS_KEY")])
def test_a_base64_credential_given_a_variable_in_a_slurm_sweeps_setup_is_refused(tmp_path, given, key, name):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", given, "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", SECRET.format(key=key, name=name))


def test_a_credentials_path_given_a_variable_in_a_slurm_sweeps_setup_is_taken(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         "hydra.launcher.setup=['export AWS_SHARED_CREDENTIALS_FILE=config/aws/credentials', "
                         "'export GOOGLE_APPLICATION_CREDENTIALS=keys/service-account-prod.json', "
                         "'export HF_TOKEN_PATH=/home/me/.cache/huggingface/token', 'export TOKENIZERS_PARALLELISM=false']",
                         "dry_run=true", cwd=tmp_path)
    assert done.returncode == EXIT["ok"], done.stderr
