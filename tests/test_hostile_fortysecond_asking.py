"""The fortysecond hostile pass of issue 19, the asking side.

1. a scorer importing numpy, pandas, PyYAML, OmegaConf or scipy.special in its call (not at its file's top) ended the
   scorer process after every call, each sample's process importing it again (20 samples: 20 processes, 3.9 s of
   CPU): the process that replaces one imports, before its first call, the libraries the calls of those before it
   first imported (`execute.scorerleft.preload`), so the process ends once per run for such a scorer
2. the modules of the shipped benchmarks (`benchrun/demos/`) had their names put back after each call as if they were
   benchrun's own (a demo's scorer counting its calls in a global counted 1 each call, where the same file elsewhere
   counted on): they are a benchmark's own, whose names are the scorers' own (`core.stdlibnames.DEMOS`)
3. a seccomp filter a call installed (`prctl(PR_SET_SECCOMP, ...)`, as root; a user's after `PR_SET_NO_NEW_PRIVS`) ran
   on in every later call, forbidding what it forbade (`mkdir`: every later call's `os.mkdir` refused, EPERM): no
   process can take one away, so the process ends after such a call (`execute.scorerleft`,
   `core.prctlstate.seccomp_filters`)
4. memory a call locked (`mlockall(MCL_FUTURE)`) stayed locked, and so did every later call's allocations (under a
   user's RLIMIT_MEMLOCK, a MemoryError): unlocked again where the first call found none locked, with the
   interpreter's other settings (`compiler.runstate.SETTINGS`, `core.memlock`)
5. a name a call added to a class of the standard library or an installed library (`json.JSONEncoder.__eq__ = ...`:
   every later call's encoders equal; `pandas.api.extensions.register_dataframe_accessor("x")`: every later call's
   registering it warned that it overrode one) reached every later call, where a name it replaced did not: in the
   scorer process, a name a class gained in a call is taken away (`core.stdlibnames`, `classes_as_found`)
6. a call that made the process not dumpable (`PR_SET_DUMPABLE` 0: a user's process can no longer read its own /proc
   files), turned off its huge pages (`PR_SET_THP_DISABLE`) or set its execution domain (`personality
   (ADDR_NO_RANDOMIZE)`: every later call's programs started without address randomization), had its memory merged
   (`PR_SET_MEMORY_MERGE`), set its policy on memory errors (`PR_MCE_KILL`), its security bits (`PR_SET_SECUREBITS`:
   its programs run as root without root's capabilities) or kept its capabilities leaving root (`PR_SET_KEEPCAPS`)
   left them so for every later call: put back with the interpreter's other settings (`core.prctlstate.process_flags`)
7. a call that forbade memory both writable and executable (`PR_SET_MDWE`), dropped a capability from the bounding
   set (`PR_CAPBSET_DROP`, as root) or moved the process into a namespace of its own (`unshare(CLONE_NEWUTS)` and
   `sethostname`, as root: every later call's host name the call's) left every later call so: no process can take
   any back, so the process ends after such a call (`execute.scorerleft`, `core.prctlstate`); so does one that set a
   flag past putting it back (a security bit set and locked, `PR_SET_SECUREBITS`)
8. a call that wrote the process's core dump filter (`/proc/self/coredump_filter` 0) left it so: put back with its
   OOM score adjustment (`core.procfs.WRITTEN`)
9. a call that put the process in a group of its own (`os.setpgid(0, 0)`) left it there for every later call (and a
   benchmark's file doing so as the run imported it left the run outside the group a terminal's Ctrl-C reaches): put
   back with the interpreter's other settings (`compiler.runstate.SETTINGS`)
"""

from __future__ import annotations

import ctypes
import os
import re
from pathlib import Path

from benchrun.compiler.runstate import put_back_settings, settings_now
from benchrun.core import stdlibnames
from benchrun.core.memlock import memory_locked
from benchrun.core.prctlstate import denies_write_exec
from benchrun.core.resources import demos_dir
from tests.helpers.p38_asking import found_by
from tests.helpers.p42_asking import (
    ADDING,
    FILTERING,
    FLAGGING,
    FOREVER,
    IMPORTING,
    ends_and_scores,
    module_at,
    said_in_log,
)


def test_a_scorer_importing_numpy_in_its_call_ends_the_scorer_process_once_per_run(tmp_path):
    ends, scores = ends_and_scores(tmp_path, IMPORTING, 20)
    assert ends == 1
    assert [metrics["s.a"] for metrics, _ in scores] == list(range(20))
    assert [(metrics["s.first"], error) for metrics, error in scores].count((0, None)) == 19


def test_a_shipped_benchmark_s_module_s_names_are_the_scorers_own():
    kept = [stdlibnames._kept(name, module_at(name, file)) for name, file in (
        ("custom_scorer", demos_dir() / "listbench" / "custom_scorer.py"),
        ("benchrun.core.text", Path(stdlibnames.BENCHRUN) / "core" / "text.py"),
        ("custom_scorer", Path(stdlibnames.BENCHRUN) / "demos" / "listbench" / "custom_scorer.py"))]
    assert kept == [False, True, False]


def test_a_seccomp_filter_a_call_installed_reaches_no_later_call(tmp_path):
    assert found_by(tmp_path, FILTERING) == [({"s.filters": 0}, None)] * 3
    forbade = "forbade the process to gain privileges (PR_SET_NO_NEW_PRIVS); " if os.geteuid() else ""
    assert [re.sub(r"\([-\d, ]+\)", "{flags}", line) for line in said_in_log(tmp_path)] == [
        f"benchrun: scorer 's' {forbade}installed a seccomp filter (its Seccomp_filters 1, where they were 0): the "
        "system calls it forbids stay forbidden: the scorer process ends after its call, and the run starts another"]


def test_memory_a_call_locked_is_unlocked_where_none_was_found_locked():
    found = settings_now()
    ctypes.CDLL(None).mlockall(2)  # MCL_FUTURE: what is mapped from now on
    locked = memory_locked()
    put_back_settings(found)
    assert (locked != "0 kB", memory_locked()) == (True, "0 kB")


def test_a_name_a_call_added_to_a_standard_class_reaches_no_later_call(tmp_path):
    assert found_by(tmp_path, ADDING) == [({"s.equal": 0, "s.added": 0}, None)] * 3


def test_the_process_flags_a_call_set_reach_no_later_call(tmp_path):
    [(first, _), *later] = found_by(tmp_path, FLAGGING)
    assert later == [(first, None)] * 2
    assert (first["s.dumpable"], first["s.huge"], first["s.persona"]) == (1, 0, 0)


def test_what_no_process_takes_back_ends_the_scorer_process_after_the_call(tmp_path):
    [(first, _), *later] = found_by(tmp_path, FOREVER)
    assert later == [(first, None)] * 2
    said = [what for what, seen in (
        ("forbade the process to map memory both writable and executable (PR_SET_MDWE)", denies_write_exec() == 0),
        ("moved the process into new namespaces (uts: unshare, setns)", os.geteuid() == 0),
        ("set a process flag past putting back (prctl, personality: {flags}, where they were {flags}: a security bit "
         "locked, say)", os.geteuid() == 0),
        ("changed the process's capabilities (one dropped from its bounding or permitted set is gone for good)",
         os.geteuid() == 0)) if seen]
    ending = f"benchrun: scorer 's' {'; '.join(said)}: the scorer process ends after its call, and the run starts " \
             "another"
    assert [re.sub(r"\([-\d, ]+\)", "{flags}", line) for line in said_in_log(tmp_path)] == [ending] * bool(said)
