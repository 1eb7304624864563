"""Python's cyclic garbage collector held off while a benchmark compiles: a compile makes several objects a sample and
frees none in cycles, so each collection of the older generations walks every sample made so far (a values file of
200,000 rows compiled in 12 s with it, 8 s without; benchmarks/values_file_bench.py)."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off inside, and back as it was (on, or off by the caller) after."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
