"""The thirty-sixth hostile pass of issue 19, the asking side.

1. a variable a scorer set (or removed) past os.environ (`os.putenv("X", "1")`, ctypes' `setenv`, `unsetenv("PATH")`,
   an entry of an empty name by ctypes' `putenv`) reached every later call's subprocesses: only TZ was put back. The
   process's C environment is read as the first call found it and put back whole where it differs
   (`execute.cenviron`, in `scorer_worker._Found`); the time zone is set anew where it differs after
"""

from __future__ import annotations

import pytest

from tests.helpers.p35_asking import scores_of
from tests.helpers.p36_asking import SETTING_PAST_ENVIRON


@pytest.mark.slow  # the scorer process is a real subprocess
def test_a_variable_a_scorer_sets_past_os_environ_does_not_reach_the_next_calls_subprocesses(tmp_path):
    began = {"s.put": 0, "s.set": 0, "s.path": 1, "s.odd": 0}
    assert scores_of(tmp_path, SETTING_PAST_ENVIRON, n=2) == [(f"times7:a={a}", began, None) for a in range(2)]
