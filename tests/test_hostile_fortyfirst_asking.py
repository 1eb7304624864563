"""The fortyfirst hostile pass of issue 19, the asking side.

1. what a scorer's call set in an installed library's own tables (`pandas.set_option("display.precision", 2)`, a
   tag's constructor by `yaml.add_constructor`, a word read as null by `yaml.add_implicit_resolver`, an OmegaConf
   resolver, which every later call's registering it was refused, `scipy.special.seterr(all="raise")`) reached every
   later call: each call starts with pandas' options, PyYAML's tables, OmegaConf's resolvers and scipy.special's
   handling of errors as the first call found them (`execute.libraryheld`)
2. the flags of the file a standard descriptor is, as a scorer's call set them (`os.set_blocking(2, False)`), reached
   every later call (a write past what the log's pipe held failed, BlockingIOError): put back with the interpreter's
   other settings (`compiler.runstate.SETTINGS`, `core.stdfds.statuses`)
3. a standard descriptor a scorer's call made not inherited (`os.set_inheritable(2, False)`) stayed so: every later
   call's subprocess started with it closed (`core.stdfds.statuses`)
4. the process's OOM score adjustment a call raised (`/proc/self/oom_score_adj` written 1000) stayed so: the scorer
   process the kernel's first pick when memory ran short, in every later call (`core.procfs.WRITTEN`)
5. the timer slack a call set (prctl's `PR_SET_TIMERSLACK`, 200 ms) delayed every later call's sleeps and timeouts (20
   sleeps of 0.1 ms took 4 s), and the I/O class it set (`IOPRIO_CLASS_IDLE`) starved every later call's disk reads:
   put back with the interpreter's other settings (`core.prctlstate`, `core.ioprio`); a call that forbade the process
   to gain privileges (`PR_SET_NO_NEW_PRIVS`, which no process can take back) ends the process (`execute.scorerleft`)
6. the default arguments a call set of a standard function (`json.dumps.__kwdefaults__["sort_keys"] = True`,
   `textwrap.fill.__defaults__ = (10,)`, a method's: `json.JSONEncoder.__init__`) reached every later call: put back
   with the names the modules hold (`core.stdlibnames`)
7. (the lead's review) on a system other than Linux, the new readings called Linux's prctl, and Linux's
   ioprio system call by its x86_64 number, which is another call there (macOS's 252); they now read
   nothing there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun.core import ioprio, prctlstate
from tests.helpers.p38_asking import found_by
from tests.helpers.p41_asking import DEFAULTS, PRCTL, PROCESS_FLAGS, library_tables_after_a_call


def test_what_a_call_set_in_pandas_yaml_omegaconf_or_scipy_s_tables_reaches_no_later_call():
    assert library_tables_after_a_call() == {"precision": 6, "tag": False, "word": "p41", "resolver": False,
                                             "special": "ignore"}


def test_a_standard_descriptor_made_non_blocking_or_not_inherited_or_the_oom_score_raised_reach_no_later_call(tmp_path):
    oom = int(Path("/proc/self/oom_score_adj").read_text())  # as the scorer process inherits it
    assert found_by(tmp_path, PROCESS_FLAGS) == [({"s.blocking": 1, "s.inherited": 1, "s.oom": oom}, None)] * 3


def test_a_timer_slack_an_io_class_or_privileges_forbidden_by_a_call_reach_no_later_call(tmp_path):
    assert found_by(tmp_path, PRCTL) == [({"s.slack": 1, "s.privileged": 1, "s.io": 1}, None)] * 3


def test_the_default_arguments_a_call_set_of_a_standard_function_reach_no_later_call(tmp_path):
    assert found_by(tmp_path, DEFAULTS) == [({"s.sorted": 0, "s.lines": 2, "s.encoder": 0}, None)] * 3


def test_the_linux_settings_are_read_on_linux_alone(monkeypatch: pytest.MonkeyPatch):
    """Case 7: another system's prctl is none, and its system call 252 is not ioprio_get."""
    monkeypatch.setattr("sys.platform", "darwin")
    assert (ioprio.io_priority(), prctlstate.timer_slack(), prctlstate.gains_no_privileges()) == (None, None, False)
