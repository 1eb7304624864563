"""asyncio's event loop policy and current loop as the scorer process's first call found them, which each call starts
in (`scorer_worker._Found`): a call that set a loop and closed it (`asyncio.set_event_loop(loop); loop.close()`) left
later calls' `asyncio.get_event_loop()` the closed loop, and one that ran `asyncio.run(...)` left them none (a
RuntimeError, where the first call got a loop)."""

from __future__ import annotations

import contextlib
import sys
import warnings
from typing import Any


class Loops:
    """The policy and its current loop as found: none where asyncio was not imported (each call then starts with a
    policy made anew, as a process of its own would), else the policy and the loop it gave (`get_event_loop`, which
    makes one where none was set, as a first call's would)."""

    def __init__(self) -> None:
        self.policy, self.loop = _now()

    def put_back(self) -> None:
        asyncio = sys.modules.get("asyncio")
        if asyncio is None:
            return
        asyncio.set_event_loop_policy(self.policy)
        if self.policy is not None:
            self.policy.set_event_loop(self.loop)

    def why(self) -> str | None:
        """What a call did to the loop the process found that cannot be put back, in words."""
        if self.loop is not None and self.loop.is_closed():
            return "closed the event loop the process found (asyncio.get_event_loop().close())"
        return None


def _now() -> tuple[Any, Any]:
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None, None
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings(), contextlib.suppress(Exception):  # none to give; or a policy of the user's failed
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12's, where it makes the loop
        return policy, policy.get_event_loop()
    return policy, None
