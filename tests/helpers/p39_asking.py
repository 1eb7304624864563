"""Helpers for the thirty-ninth hostile pass of the asking side."""

from __future__ import annotations

LOOPING = """import asyncio


def s(response, values):
    try:
        closed = int(asyncio.get_event_loop().is_closed())
    except RuntimeError:
        closed = -1
    if values["a"] == 0:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        loop.close()
    if values["a"] == 1:
        asyncio.run(asyncio.sleep(0))
    if values["a"] == 2:
        asyncio.get_event_loop().close()
    return {"closed": closed}
"""
"""A scorer saying whether the event loop its call found is closed (-1: none), the call of sample a=0 setting a loop
and closing it, a=1's running one with `asyncio.run`, a=2's closing the one the process found."""
