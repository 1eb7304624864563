"""A path not found whose name is there in another Unicode form: `bénch` written as e + a combining accent (NFD, as
macOS names a copy's files) where the path gives é (NFC), or the reverse; on Linux those are two names, which print
alike."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

FORMS = ("NFC", "NFD")


def other_form(path: Path) -> str | None:
    """Why `path`, not found, may be there under a name in another Unicode form: its first part not found and the
    entry of its folder that is that part in another form, said; None when there is none."""
    for depth in range(1, len(path.parts) + 1):
        if not os.path.lexists(here := Path(*path.parts[:depth])):
            return _named(here.parent, here.name)
    return None


def _named(folder: Path, part: str) -> str | None:
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    same = next((name for name in names if name != part and _nfc(name) == _nfc(part)), None)
    if same is None:
        return None
    return (f"{folder / same} is there, its name in another Unicode form ({_form(same)}, as a copy from macOS names "
            f"files), which prints alike but is another name here: rename it in the form given ({_form(part)})")


def _nfc(name: str) -> str:
    return unicodedata.normalize("NFC", name)


def _form(name: str) -> str:
    return next((form for form in FORMS if unicodedata.is_normalized(form, name)), "of no one form")
