"""A format's regexes as its two readers read them: pydantic (Rust's `regex`, for the class the user wrote) and the
format check (jsonschema-rs, JSON Schema's ECMA-262 reading, for the archive's `format_valid`).

Where the two read a pattern apart, every answer is judged otherwise than the class would judge it, whatever the
engine: `[[:alpha:]]+` is a class of letters to pydantic and the characters `[:alph` then `]` to the format check,
so `abc` is refused. Such a pattern is refused at compile, naming what the two read apart.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

FLAGS = re.compile(r"\(\?([A-Za-z]*)(?:-([A-Za-z]*))?[:)]")
"""A group setting flags (`(?is)`, `(?s:...)`, `(?i-s)`): those it sets in group 1, those it clears in group 2."""

SET_OPERATORS = ("&&", "--", "~~")
"""Within a class, Rust's intersection, difference and symmetric difference: characters to ECMA-262."""

QUANTIFIER = re.compile(r"[*+?]|\{[0-9]+(?:,[0-9]*)?\}")
"""A quantifier: a `?` after another makes it lazy, any other after one is read apart."""

ESCAPE = re.compile(r"\\(?:[xuUpP]\{[^}]*\}|.?)", re.DOTALL)
"""An escape: a character given by its code or a property, braced (`\\x{41}`, `\\u{30}`, `\\p{L}`), is one, its
braces no quantifier; any other is the backslash and the character after it."""

VALUES = ("const", "default", "enum", "examples")
"""Keys whose value is an answer's data, not a schema: a `pattern` in them is no regex."""


def read_apart(pattern: str) -> str | None:
    """What in `pattern` pydantic and the format check read apart, said for an error; None when nothing is."""
    i, dotall, quantifiers, outer = 0, None, [], []
    while i < len(pattern):
        char = pattern[i]
        if char == "[":
            found, i = _in_class(pattern, i)
            if found:
                return found
            quantifiers = []
            continue
        if char == "." and dotall:
            return (f"the flag 's' ({dotall}) before a '.', which pydantic then lets match a line break and the "
                    "format check never does; write [\\s\\S] for any character")
        if char == ")" and outer:
            dotall = outer.pop()
        if flags := FLAGS.match(pattern, i) if char == "(" else None:
            outer += [dotall] if flags[0].endswith(":") else []  # (?s:...) for its group, (?s) for the one it is in
            dotall = flags[0] if "s" in flags[1] else None if "s" in (flags[2] or "") else dotall
            i, quantifiers = flags.end(), []
            continue
        outer += [dotall] if char == "(" else []
        quantifier = QUANTIFIER.match(pattern, i)
        if quantifier and quantifiers and not (len(quantifiers) == 1 and quantifier[0] == "?"):
            return (f"a quantifier after a quantifier ({''.join(quantifiers)}{quantifier[0]}), which pydantic reads "
                    "as a repetition of the repetition and the format check otherwise (a {n} as characters, a + as "
                    "possessive); put the first in a group, (a{2}){3}")
        quantifiers = [*quantifiers, quantifier[0]] if quantifier else []
        i += len(ESCAPE.match(pattern, i)[0]) if char == "\\" else len(quantifier[0]) if quantifier else 1
    return None


def _in_class(pattern: str, start: int) -> tuple[str | None, int]:
    """What in the class opening at `start` the two read apart (or None), and where the class ends."""
    i = start + 1
    i += pattern.startswith("^", i)
    i += pattern.startswith("]", i)
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "[":
            return (f"a class within a class ({pattern[start:i + 1]}...), which pydantic reads as a class (a POSIX "
                    "class such as [:alpha:], a nested one) and the format check as the character '[' and what "
                    "follows; write its characters out ([a-zA-Z]), or escape the '[' as \\["), i
        if (operator := pattern[i:i + 2]) in SET_OPERATORS:
            return (f"'{operator}' within a class ({pattern[start:i + 2]}...), a set operation to pydantic and two "
                    f"characters to the format check; write the class's characters out, or escape them as "
                    f"\\{operator[0]}\\{operator[1]}"), i
        i += 1
    return None, i + 1


def regex_read(pattern: Any) -> bool:
    """Whether the format check's regex engine (jsonschema-rs) reads `pattern` (a schema's `format: regex`): Python's
    `re`, jsonschema's own reader of it, refused `\\p{L}` and `\\x{e9}`, which pydantic and the check both read."""
    import jsonschema_rs  # only for a custom format's schema

    if not isinstance(pattern, str):
        return True
    try:
        jsonschema_rs.validator_for({"pattern": pattern})
    except jsonschema_rs.ValidationError:
        return False
    return True


def patterns_in(schema: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """Each regex of a JSON schema (`pattern`, a `patternProperties` key) with the field it is of (`answer`,
    `Inner.name`: a model of `$defs` by its name)."""
    if isinstance(schema, list):
        for item in schema:
            yield from patterns_in(item, path)
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        if key == "pattern" and isinstance(value, str):
            yield _field(path), value
        elif key == "patternProperties" and isinstance(value, dict):
            yield from ((_field(path), regex) for regex in value)
        if isinstance(value, (dict, list)) and key not in VALUES:
            yield from patterns_in(value, (*path, key))


def _field(path: tuple[str, ...]) -> str:
    """The field a schema's `path` is of: the names of properties along it, a `$defs` model's name before them."""
    names = [name for before, name in zip(path, path[1:]) if before in ("properties", "$defs")]
    return ".".join(names) or "the whole answer"
