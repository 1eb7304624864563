"""Names that print alike though written otherwise, told without a table of confusable characters: one written in
compatibility characters (a fullwidth `ａ` is Unicode's NFKC `a`), or with letters of other scripts in the same places
(`a` beside a Cyrillic `а`, `tаsk` beside `task`), a letter's script being the first word of its Unicode name."""

from __future__ import annotations

import unicodedata


def script(char: str) -> str | None:
    """The script of the letter `char` as its Unicode name begins (LATIN, CYRILLIC, GREEK, CJK), or None for another
    character (a digit, `_`)."""
    return unicodedata.name(char, "").split(" ", 1)[0] or None if char.isalpha() else None


def look_alike(one: str, other: str) -> str | None:
    """Why the names `one` and `other`, written otherwise and not forms of one text (NFC), print alike, or None."""
    first, second = (unicodedata.normalize("NFKC", name) for name in (one, other))
    if first == second:
        shown = next(char for char in one + other if unicodedata.normalize("NFKC", char) != char)
        return (f"one name in two forms, one of compatibility characters (Unicode's NFKC: '{shown}' is "
                f"'{unicodedata.normalize('NFKC', shown)}')")
    if len(first) != len(second):
        return None
    apart = [(at, a, b) for at, (a, b) in enumerate(zip(first, second)) if a != b]
    if not all(script(a) and script(b) and script(a) != script(b) for _, a, b in apart):
        return None
    at, a, b = apart[0]
    return (f"they differ only in letters of other scripts ({str(script(a)).title()} '{a}', {str(script(b)).title()} "
            f"'{b}' at character {at + 1})")



def first_alike(names: list[str]) -> tuple[tuple[str, str], str] | None:
    """The first two of `names` (each one text in NFC) that print alike, in order, and why; None if no two do. Only
    names of one length in NFKC are compared, and of those only a pair with a name not ASCII: two ASCII names are
    alike only if equal."""
    by_length: dict[int, list[str]] = {}
    for name in names:
        same = by_length.setdefault(len(unicodedata.normalize("NFKC", name)), [])
        for earlier in same if not name.isascii() else (other for other in same if not other.isascii()):
            if why := look_alike(earlier, name):
                return (earlier, name), why
        same.append(name)
    return None
