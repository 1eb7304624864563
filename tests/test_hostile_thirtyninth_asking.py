"""The thirty-ninth hostile pass of issue 19, the asking side.

1. the event loop a scorer's call set and closed (`asyncio.set_event_loop(loop); loop.close()`) was every later call's
   `asyncio.get_event_loop()`, and after a call's `asyncio.run(...)` the later calls had none (RuntimeError): each call
   starts with asyncio's policy and current loop as the first call found them, and a call that closed the loop the
   process found ends the process (`execute.scorerloop`)
"""

from __future__ import annotations

from tests.helpers.p38_asking import found_by
from tests.helpers.p39_asking import LOOPING


def test_each_scorer_call_finds_the_event_loop_the_first_found(tmp_path):
    assert found_by(tmp_path, LOOPING, n=4) == [({"s.closed": 0}, None)] * 4
