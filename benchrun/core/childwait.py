"""Waiting for a child process with a time limit, woken the moment it ends (a pidfd on Linux): Python's
`Popen.wait(timeout)` polls with sleeps of up to 50 ms, most of a short child's wait."""

from __future__ import annotations

import os
import select
import subprocess


def waited(child: subprocess.Popen, timeout: float) -> int:
    """`child.wait(timeout)`: its exit code, or subprocess.TimeoutExpired when it has not ended within `timeout`."""
    try:
        fd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later, or the child already reaped
        return child.wait(timeout=timeout)
    try:
        ready = select.poll()
        ready.register(fd, select.POLLIN)
        if not ready.poll(timeout * 1000):
            raise subprocess.TimeoutExpired(child.args, timeout)
    finally:
        os.close(fd)
    return child.wait()
