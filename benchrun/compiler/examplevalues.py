"""A few-shot example's values against its task's template: each value the template uses given, none it never reads.
A sample's values the template never reads are its metadata; an example's go nowhere but into its prompt, so one
the template never reads is a misspelt name or a value left over, refused naming it."""

from __future__ import annotations

from typing import Any

from benchrun.core.errors import TaskError
from benchrun.core.keys import closest
from benchrun.core.text import name_said


def check_example_values(values: dict[str, Any], used: list[str], where: dict[str, str | None]) -> None:
    """Refuse an example's `values` that lack a name of `used` (the template's fields, those of its format specs
    included) or hold one not in it; an unread name close to a missing one is said as its misspelling."""
    missing = [name for name in dict.fromkeys(used) if name not in values]
    unread = [name for name in values if name not in used]
    if unread:
        close = closest(str(unread[0]), missing)
        hint = f"did you mean '{close[0]}'?" if close else f"it uses {_names(used)}"
        raise TaskError(f"{name_said(str(unread[0]))} is a value the template never uses ({hint}), and an "
                        "example's values fill its template alone (kept nowhere else): leave it out", **where)
    if missing:
        raise TaskError(f"no value '{missing[0]}', which the template uses", **where)


def _names(used: list[str]) -> str:
    return ", ".join(dict.fromkeys(used)) if used else "none"
