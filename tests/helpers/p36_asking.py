"""Helpers for the thirty-sixth hostile pass of the asking side."""

from __future__ import annotations

SETTING_PAST_ENVIRON = """import ctypes
import os
import subprocess

LIBC = ctypes.CDLL(None)


def s(response, values):
    seen = subprocess.run(["/usr/bin/env"], capture_output=True, text=True, check=True).stdout.splitlines()
    names = {line.partition("=")[0] for line in seen}
    found = {"put": int("P36_PUT" in names), "set": int("P36_SET" in names), "path": int("PATH" in names),
             "odd": int("" in names)}
    os.putenv("P36_PUT", "1")
    LIBC.setenv(b"P36_SET", b"1", 1)
    os.unsetenv("PATH")
    LIBC.putenv(ctypes.c_char_p(b"=odd"))
    return found
"""
"""A scorer that says which of the variables an earlier call set past os.environ its subprocess (`env`) inherited
(`os.putenv`, ctypes' `setenv`, an entry of an empty name by ctypes' `putenv`), and whether PATH, which an earlier
call removed past os.environ, is still there; then sets and removes each so."""
