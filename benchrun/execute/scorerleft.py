"""What a scorer's call can leave in the scorer process that the process cannot put back as the first call found it
(`scorer_worker._Found` puts back the rest): a priority it lowered (`os.nice(19)`: every later call slowed, past
scorer_timeout_s) or a scheduling policy it set (`os.SCHED_IDLE`), a user or root directory it changed as root
(`os.setuid`, `os.chroot`), the process forbidden to gain privileges (`PR_SET_NO_NEW_PRIVS`), run under a seccomp filter
(`PR_SET_SECCOMP`: a call that forbade `mkdir` forbade it every later call) or forbidden writable and executable memory
(`PR_SET_MDWE`), its capabilities changed (`PR_CAPBSET_DROP`) or its namespaces (`unshare`), a flag of
`prctlstate.FLAGS` set past putting back (a security bit locked), a thread left running (it runs on in the later calls;
not a thread of a pool the scorers' modules made as they were imported), a library holding state for every caller first
imported in the call (numpy's generator seeded there: no state "as first found" to put back; HOLDING), an audit hook, a
fork handler or a codec search function added or taken away (`sys.addaudithook`, `os.register_at_fork`,
`codecs.register`, `codecs.unregister`, and `_codecs`' own, which they are: none can be listed), a class registered with
an abstract base class (`numbers.Number.register(str)`: every later call's `isinstance(x, numbers.Number)` true of a
string; no registration can be taken back). The process ends after such a call, its reply sent (naming the libraries of
HOLDING it first imported), and the run starts another for the next sample, which imports those libraries before its
first call (`preload`): once per run, not per call. The four that cannot be listed are seen by wrapping their entry
points before the benchmark's modules are imported (`Watch`): what a module does as it is imported (the scorers'
modules, a library imported first in a call) is as the first call found it, in every process alike."""

from __future__ import annotations

import _codecs
import abc
import codecs
import contextlib
import gc
import importlib
import os
import posix
import sys
import threading
import time
from typing import Any, Callable

from benchrun.core.prctlstate import (
    capabilities,
    denies_write_exec,
    gains_no_privileges,
    process_flags,
    seccomp_filters,
)

HOLDING = ("numpy", "pandas", "yaml", "omegaconf", "scipy.special")
"""Libraries holding state for every caller that `scorer_worker._held_by_libraries` puts back where they were
imported before the first call."""
TASKS = "/proc/self/task"
NAMESPACES = "/proc/self/ns"
SETTLE_S = 0.05
"""How long a thread the call joined is given to be gone from TASKS."""


class Watch:
    """The entry points of what cannot be listed, wrapped: a call to one during a call (`calling`) is noted."""

    def __init__(self) -> None:
        self.calling = False
        self.noted: list[str] = []
        sys.addaudithook = self._wrapped(sys.addaudithook, "added an audit hook (sys.addaudithook)")
        codecs.register = _codecs.register = self._wrapped(codecs.register, "registered a codec search function "
                                                                             "(codecs.register)")
        codecs.unregister = _codecs.unregister = self._wrapped(codecs.unregister, "unregistered a codec search "
                                                                                 "function (codecs.unregister)")
        fork_handler = self._wrapped(posix.register_at_fork, "registered a fork handler (os.register_at_fork)")
        os.register_at_fork = posix.register_at_fork = fork_handler
        abc.ABCMeta.register = self._wrapped(abc.ABCMeta.register, "registered a class with an abstract base class "
                                                                   "(ABCMeta.register)")

    def _wrapped(self, entry: Callable[..., Any], what: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self.calling and not _importing():
                self.noted.append(what)
            return entry(*args, **kwargs)
        wrapper.__doc__, wrapper.__name__ = entry.__doc__, entry.__name__
        return wrapper


def _importing() -> bool:
    """Whether a module is being imported: what its import registers (`concurrent.futures.thread`'s fork handler,
    imported first in a call) every process that imports it registers alike, as the first call found it."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


class Left:
    """The process as the first call found it, in what cannot be put back; `why` says what a call changed of it."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.priority, self.policy, self.threads, self.tasks = _priority(), _policy(), _threads(), _tasks()
        self.pools = _pools()
        self.identity, self.root, self.privileged = _identity(), _root(), gains_no_privileges()
        self.filters, self.write_exec, self.capabilities = seccomp_filters(), denies_write_exec(), capabilities()
        self.spaces, self.flags = _namespaces(), process_flags()
        self.holding = {name for name in HOLDING if name in sys.modules}

    def why(self) -> str | None:
        """What the last call left that cannot be put back, in words; None where it left nothing of it."""
        said = list(dict.fromkeys(self.watch.noted))
        self.watch.noted.clear()
        if (priority := _priority()) != self.priority:
            said.append(f"set the process's priority to {priority} (it was {self.priority})")
        if (policy := _policy()) != self.policy:
            said.append(f"set the process's scheduling policy to {policy} (os.sched_setscheduler; it was "
                        f"{self.policy})")
        if (identity := _identity()) != self.identity:
            said.append(f"changed the process's user or groups (uid, gid, groups {identity}, where they were "
                        f"{self.identity})")
        if _root() != self.root:
            said.append("changed the process's root directory (os.chroot)")
        if gains_no_privileges() != self.privileged:
            said.append("forbade the process to gain privileges (PR_SET_NO_NEW_PRIVS)")
        if (filters := seccomp_filters()) != self.filters:
            said.append(f"installed a seccomp filter (its Seccomp_filters {filters}, where they were "
                        f"{self.filters or 0}): the system calls it forbids stay forbidden")
        if denies_write_exec() != self.write_exec:
            said.append("forbade the process to map memory both writable and executable (PR_SET_MDWE)")
        if moved := sorted(name for name, space in _namespaces().items() if self.spaces.get(name) != space):
            said.append(f"moved the process into new namespaces ({', '.join(moved)}: unshare, setns)")
        if (flags := process_flags()) != self.flags:
            said.append(f"set a process flag past putting back (prctl, personality: {flags}, where they were "
                        f"{self.flags}: a security bit locked, say)")
        if capabilities() != self.capabilities:
            said.append("changed the process's capabilities (one dropped from its bounding or permitted set is gone "
                        "for good)")
        pooled = {thread.ident or 0 for pool in self.pools for thread in list(pool._threads)} - self.threads
        # `_threads`: the executor lists its threads nowhere public
        if _threads() - self.threads - pooled or _settled_more(self.tasks, len(pooled)):
            said.append("left a thread running")
        said += [f"first imported {name}, which holds state for every caller" for name in self.imported()]
        return "; ".join(said) or None

    def imported(self) -> list[str]:
        """The libraries of HOLDING imported since the first call: the process that replaces this one imports them
        before its first call (`preload`), so it ends for none of them."""
        return [name for name in HOLDING if name not in self.holding and name in sys.modules]


def preload(names: list[str]) -> None:
    """Import `names` (of HOLDING) before the first call, as the process replaced imported them in its calls: what
    the import sets is then as the first call finds it, and a call's importing them again changes nothing."""
    for name in names:
        if name in HOLDING:
            with contextlib.suppress(Exception):  # one that cannot be imported now: the call that imports it says why
                importlib.import_module(name)


def _settled_more(tasks: int, pooled: int) -> bool:
    """Whether the system lists more threads than `tasks` (besides `pooled` pool threads), still after SETTLE_S: a
    thread the call joined may be listed until its system thread is gone, a moment after `join` returned."""
    if _tasks() - pooled <= tasks:
        return False
    time.sleep(SETTLE_S)
    return _tasks() - pooled > tasks


def _pools() -> list[Any]:
    """The thread pools (`concurrent.futures.ThreadPoolExecutor`) the scorers' modules made as they were imported:
    a pool starts its threads at its first task, in a call, and keeps them for the calls after, as the first call
    found the pool."""
    thread = sys.modules.get("concurrent.futures.thread")
    if thread is None:
        return []
    return [found for found in gc.get_objects() if isinstance(found, thread.ThreadPoolExecutor)]


def _priority() -> int | None:
    try:
        return os.getpriority(os.PRIO_PROCESS, 0)
    except OSError:
        return None


def _policy() -> int | None:
    """How the system schedules the process (`os.SCHED_IDLE`: run only when nothing else would, which the process may
    not undo); None where it cannot say."""
    try:
        return os.sched_getscheduler(0)
    except (OSError, AttributeError):  # a system without it
        return None


def _identity() -> tuple[Any, ...]:
    """Who the process runs as: its real and effective user and group, and its groups (`os.setuid` as root cannot be
    undone)."""
    return os.getuid(), os.geteuid(), os.getgid(), os.getegid(), tuple(sorted(os.getgroups()))


def _root() -> tuple[int, int] | None:
    """Which directory the process's `/` is (its device and inode): `os.chroot` moves it for good."""
    try:
        found = os.stat("/")
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _namespaces() -> dict[str, str]:
    """The namespaces the process is in, by kind (`net`: `net:[4026531840]`): one a call moved it into (`unshare`, as
    root: a host name of its own, no network) no process can leave but into another it holds."""
    try:
        return {name: os.readlink(f"{NAMESPACES}/{name}") for name in os.listdir(NAMESPACES)}
    except OSError:
        return {}


def _threads() -> set[int]:
    """The Python threads alive: those threading knows, and those only the interpreter does (`_thread`'s)."""
    return {thread.ident or 0 for thread in threading.enumerate()} | set(sys._current_frames())


def _tasks() -> int:
    """How many threads the system says the process has (a library's own, started outside Python, too)."""
    try:
        return len(os.listdir(TASKS))
    except OSError:
        return 0
