"""The stack benchrun's processes grow into: Linux's usual 8 MiB where the machine's hard limit allows. Under
`ulimit -Ss 128` (or a hard limit of 256 KiB), a task file nested 900 deep killed the run with a segmentation fault
(exit 139, no line, the run left `running`), where the usual stack refuses it in one line: Python's recursion limit
only holds with the stack it was made for."""

from __future__ import annotations

import resource
import threading

from benchrun.core.errors import ArchiveError

STACK_BYTES = 8 * 1024 * 1024
LEAST_BYTES = 1024 * 1024
"""Below this stack a file nested past Python's recursion limit can end the process before the limit says so
(256 KiB did; 512 KiB held): a hard limit below it is refused."""


def raise_stack_limit(command: str) -> None:
    """Raise the soft stack limit to STACK_BYTES, or to the hard limit below it, for this process's main thread, the
    threads it starts (glibc sizes a program's threads by the limit it began under, so Python's are given it too) and
    the processes it starts; refuse, before `command` makes anything, a hard limit below LEAST_BYTES."""
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if soft == resource.RLIM_INFINITY or soft >= STACK_BYTES:
        return
    wanted = STACK_BYTES if hard == resource.RLIM_INFINITY else min(hard, STACK_BYTES)
    if wanted < LEAST_BYTES:
        raise ArchiveError(f"the stack limit is {wanted // 1024} KiB (ulimit -s), which {command} cannot raise (its "
                           f"hard limit): a file nested deep could end it without a word before Python says so; give "
                           f"it {LEAST_BYTES // 1024} KiB at least: ulimit -s 8192")
    if wanted > soft:
        resource.setrlimit(resource.RLIMIT_STACK, (wanted, hard))
        threading.stack_size(wanted)
