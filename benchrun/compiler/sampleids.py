"""A sample's id: made of the task's name and its values (`task:a=2,b=3`) or given by an id column, and unique in its
task as it prints."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any
from urllib.parse import quote

from benchrun.compiler.sources import TaskSpec
from benchrun.core.errors import TaskError
from benchrun.core.text import CONTROL
from benchrun.core.written import shown

ID_COLUMN = "id"
_MAX_ID = 80
MAX_GIVEN_ID = 200
"""The longest id an id column may give a sample (a task name has 100 characters): an id is printed in `show`'s
headings and every error naming its sample, and kept in every record of it."""
TWO_FORMS = ("one text written in two Unicode forms, composed and decomposed: 'é' as one character, or as 'e' and a "
             "combining accent")
"""Why two names or ids that differ as written are one (in Unicode's composed form, NFC): they print as one."""
SEPARATORS = "\u2028\u2029"
"""Unicode's line and paragraph separators, which no control character is, but a line break to Python's splitlines and
to editors: an id holding one is printed on two lines, as one holding a control character's line break (NEL) was."""
_UNFIT = re.compile(f"[{CONTROL.pattern[1:-1]}{SEPARATORS}]")
_ESCAPED = str.maketrans({"%": "%25", ",": "%2C", "=": "%3D",
                          **{char: quote(char) for char in map(chr, [*range(0x20), *range(0x7F, 0xA0)])},
                          **{char: quote(char) for char in SEPARATORS}})
"""What a value must not carry unescaped into a sample id `task:a=1,b=2`: its separators, and the control characters
and line separators an id column's id may not hold (a line break, ESC, NUL, U+2028), which an id made of values held
as they were, percent-encoded as the separators are (`a=x%0Ay`): an id is printed on one line."""


def sample_id_for(task: str, values: dict[str, Any]) -> str:
    """`task:id` from an id column, else `task:a=2,b=3` (`%`, `,` and `=` in a value escaped as %25, %2C, %3D, so
    no two samples share an id by accident, and a control character as its UTF-8 bytes, %0A); long ids keep a readable
    head and a hash."""
    if ID_COLUMN in values:
        return f"{task}:{shown(values[ID_COLUMN])}"
    text = f"{task}:" + ",".join(f"{name}={str(shown(value)).translate(_ESCAPED)}" for name, value in values.items())
    if len(text) <= _MAX_ID:
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return f"{text[:_MAX_ID - 14]}~{digest}"


def unique_id(spec: TaskSpec, sample_id: str, index: int, seen: dict[str, tuple[int, str]]) -> str:
    """`sample_id`, refused if another sample has it as it prints: in Unicode's composed form, NFC (`é` one character
    or `e` and a combining accent), and but for white space at its end (`t:q1 `, which prints as `t:q1`); or if an id
    column gave it unfit to name a sample."""
    if ID_COLUMN in spec.values:
        _check_given_id(spec, sample_id[len(spec.name) + 1:], index)
    if (text := unicodedata.normalize("NFC", sample_id).rstrip()) in seen:
        has_ids = ID_COLUMN in spec.values
        fix = "make the ids unique" if has_ids else "make the values unique or add an 'id' column"
        first, written = seen[text]
        apart = _apart(written, sample_id)
        raise _error(spec, "values.id" if has_ids else "values",
                     f"duplicate sample id '{sample_id}' (samples {first + 1} and {index + 1}{apart}); {fix}")
    seen[text] = (index, sample_id)
    return sample_id


def _apart(one: str, other: str) -> str:
    """How two ids that print as one differ as written: nothing, Unicode's forms, or white space at the end of one."""
    if one == other:
        return ""
    if unicodedata.normalize("NFC", one) == unicodedata.normalize("NFC", other):
        return f", {TWO_FORMS}"
    longer = max(one, other, key=len)
    return (f": '{one}' and '{other}', one id but for the white space {ascii(longer[len(longer.rstrip()):])} it ends "
            "with, which prints as nothing")


def refuse_id_lookalike(spec: TaskSpec) -> None:
    """Refuse a value named as the id column but for its case (`ID`, `Id`) in a task without one: it was read as a
    value, each sample's id made of all its values (`t:a=1,ID=q1`), not the id the column gave."""
    if ID_COLUMN not in spec.values and (name := next((name for name in spec.values
                                                        if name.casefold() == ID_COLUMN), None)):
        raise _error(spec, f"values.{name}", f"'{name}' is read as a value, not as the samples' ids: the id column is "
                                             f"named '{ID_COLUMN}', by that exact name; rename it '{ID_COLUMN}' (it "
                                             "stays a value the template can show), or give it another name")


def _check_given_id(spec: TaskSpec, given: str, index: int) -> None:
    """Refuse an id column's id that is empty, longer than MAX_GIVEN_ID or holds a control character (a line break
    split `show`'s heading of the sample in two)."""
    if not given.strip():
        why, fix = "is empty", "give every sample an id, or leave the id column out"
    elif len(given) > MAX_GIVEN_ID:
        why, fix = f"has {len(given):,} characters, more than a sample's id has ({MAX_GIVEN_ID})", "give a shorter one"
    elif found := _UNFIT.search(given):
        kind = "a line separator" if found[0] in SEPARATORS else "a control character"
        why = f"holds {found[0]!r} at character {found.start() + 1}, {kind}, which an id cannot hold"
        fix = "write the id without it (an id is printed on one line)"
    else:
        return
    raise _error(spec, "values.id", f"the id of sample {index + 1} {why}; {fix}")


def _error(spec: TaskSpec, key: str, message: str) -> TaskError:
    return TaskError(message, **spec.where(key))
