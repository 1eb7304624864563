"""An option of the audit commands that takes one value, given twice with another value (`list --model a --model b`,
`export --output a.csv --output b.csv`, `rescore --rejudge judge.model=x --rejudge judge.host=y`): refused, as a key
given twice is, where argparse kept the last and dropped the first unsaid. The same value given twice is that value."""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from benchrun.core.text import name_said


class Once(argparse.Action):
    """argparse's `store` for an option given once, or given again with the value it was first given."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._given: dict[int, Any] = {}
        """The value each namespace parsed into was first given (by its id)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        first = self._given.setdefault(id(namespace), values)
        if first != values:
            raise argparse.ArgumentError(self, f"given twice, as {_said(first)} and {_said(values)}: which one is "
                                               "meant? give it once")
        setattr(namespace, self.dest, values)


def _said(value: Any) -> str:
    """A value as given: a path or a word quoted, the words of an option taking several joined (`'a=1 b=2'`)."""
    words = value if isinstance(value, Sequence) and not isinstance(value, str) else [value]
    return name_said(" ".join(map(str, words)))


def once(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keywords of an option (`add_argument`'s), its action `Once` where argparse's would be `store`."""
    return {**kwargs, "action": Once} if kwargs.get("action", "store") == "store" else kwargs
