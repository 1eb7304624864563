"""Hostile input, nineteenth pass, the files-and-processes side (issue 19's fresh pass of the same kinds): hostile
command lines, sweeps and process surroundings, the cases it found bad, each with the rule it now obeys.

- a sweep listing one value twice, once quoted (`-m runner.model=llama3.2,'llama3.2'`, `[a],['a']`): the check of a
  value listed twice compared the values as written, so the sweep ran two jobs of one label (`0_llama3.2`,
  `1_llama3.2`, two columns `llama3.2`) asking the same. Now the values are compared as each job is given them
  (`callbacks._job_values`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun

TWICE = ("benchrun: error: in 'config': {key}: the sweep lists {value!r} twice, so two of its jobs would have one label; "
         "list each value once (repeats=k asks every sample k times in one run)\n")


@pytest.mark.parametrize(("swept", "key", "value"), [
    ("runner.model=llama3.2,'llama3.2'", "runner.model", "llama3.2"),
    ('runner.model="gemma3",llama3.2,gemma3', "runner.model", "gemma3"),
    ("runner.options.stop=[a],['a']", "runner.options.stop", "[a]")])
def test_a_sweep_listing_one_value_twice_once_quoted_is_refused(tmp_path, swept, key, value):
    done = call_benchrun("-m", swept, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", TWICE.format(key=key, value=value))
    done = call_benchrun("-m", swept, "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", TWICE.format(key=key, value=value))
    assert list(tmp_path.iterdir()) == []
