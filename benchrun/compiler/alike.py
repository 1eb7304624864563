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


def printed_alike(names: list[str]) -> tuple[tuple[str, str], str] | None:
    """Two of `names` that print alike, and why: one text but for white space around it, invisible characters (a
    zero-width space: Unicode's category Cf) or how a letter is composed (`x` and `x `, `x` and `x\u200b`, `é` composed
    and not), or as `first_alike` finds (`a` and a Cyrillic `а`); None if no two do."""
    seen: dict[str, str] = {}
    for name in names:
        shown = "".join(char for char in name.strip() if unicodedata.category(char) != "Cf")
        if (earlier := seen.setdefault(unicodedata.normalize("NFC", shown), name)) != name:
            return (earlier, name), ("they differ only in white space around them, invisible characters or how a "
                                     "letter is composed")
    found = first_alike(list(seen))
    return None if found is None else ((seen[found[0][0]], seen[found[0][1]]), found[1])


Scripts = tuple[str | None, ...]
"""The script of each character of a name (None for one that is no letter)."""


def first_alike(names: list[str]) -> tuple[tuple[str, str], str] | None:
    """Two of `names` (each one text in NFC, each once) that print alike, and why; None if no two do. Found without
    comparing every pair: names equal in NFKC by a dict; names differing only in letters of other scripts have one
    shape (their non-letters in the same places) and other scripts, and agree wherever their scripts do, so each two
    groups of one shape are matched by a dict of those characters (a header of 10,000 Cyrillic names costs one pass)."""
    forms = {name: unicodedata.normalize("NFKC", name) for name in names}
    seen: dict[str, str] = {}
    for name, form in forms.items():
        if (earlier := seen.setdefault(form, name)) != name:
            return (earlier, name), str(look_alike(earlier, name))
    shapes: dict[tuple[str, ...], dict[Scripts, list[str]]] = {}
    for name, form in forms.items():
        scripts = tuple(map(script, form))
        shape = tuple("" if kind else char for char, kind in zip(form, scripts))
        shapes.setdefault(shape, {}).setdefault(scripts, []).append(name)
    for groups in shapes.values():
        kinds = list(groups)
        for at, one in enumerate(kinds):
            for other in kinds[at + 1:]:
                if (pair := _matched(groups[one], groups[other], one, other, forms)) is not None:
                    return pair, str(look_alike(*pair))
    return None


def _matched(ones: list[str], others: list[str], one: Scripts, other: Scripts,
             forms: dict[str, str]) -> tuple[str, str] | None:
    """A name of `ones` (of scripts `one`) and one of `others` (of scripts `other`) that agree wherever their scripts do."""
    same = [at for at, (a, b) in enumerate(zip(one, other)) if a == b]
    keyed: dict[tuple[str, ...], str] = {}
    for name in ones:
        keyed.setdefault(tuple(forms[name][at] for at in same), name)
    return next(((keyed[key], name) for name in others if (key := tuple(forms[name][at] for at in same)) in keyed),
                None)
