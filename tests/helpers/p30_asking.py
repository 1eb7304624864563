"""Helpers for the thirtieth hostile pass of the asking side."""

from __future__ import annotations

import traceback
from typing import Any, Callable


def counting(read: list[str], method: Callable[..., Any]) -> Callable[..., Any]:
    """`method`, each call noting in `read` the function of benchrun's that called it."""

    def counted(self: Any) -> Any:
        read.append(traceback.extract_stack()[-2].name)
        return method(self)

    return counted
