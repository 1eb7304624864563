"""What every command (`benchrun`, `benchrun-audit`) does first, before it reads its command line: its standard
descriptors open and blocking, its output streams displays that can hold every character, Python's digit limit its
default, and its signals handled."""

from __future__ import annotations

from benchrun.core.intdigits import pin_int_digits
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.stdfds import display_streams, encodable_streams, open_standard_fds


def start_command() -> None:
    """Make the process ready for a command (the order matters: descriptors before streams, signals before display)."""
    open_standard_fds()
    encodable_streams()
    pin_int_digits()
    INTERRUPTS.install()
    display_streams()
