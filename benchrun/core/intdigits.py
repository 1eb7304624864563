"""Python's limit on the digits of an integer converted from or to text, the same on every machine: a machine's
$PYTHONINTMAXSTRDIGITS made one answer (`{"answer": 111…}`, 700 digits) a valid format on one machine and an invalid
one on another, and could make an archive written on one unreadable on another."""

from __future__ import annotations

import os
import sys

DIGITS_ENV = "PYTHONINTMAXSTRDIGITS"


def pin_int_digits() -> None:
    """Set the limit to Python's own default in this process, and through the environment in every process it starts
    (a sweep's workers and Slurm jobs, the scorer process, the engine), whatever the machine set."""
    default = sys.int_info.default_max_str_digits
    sys.set_int_max_str_digits(default)
    os.environ[DIGITS_ENV] = str(default)
