"""What verify finds of one file of a run: that it passed, or what is wrong with it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One check of one file: passed, or what is wrong and (when known) the first line concerned."""

    ok: bool
    file: str
    message: str
    line: int | None = None

    def text(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.file}: {self.message}"
