"""The words for an override Hydra's grammar cannot read: the character it takes only in quotes, its reason, and the
override in a form it reads (the value, or the item of a sweep or a list, quoted)."""

from __future__ import annotations

import re
from typing import Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, OverrideParseException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from benchrun.compose.commandline import override_words
from benchrun.core.filebytes import UNASKED, unasked_said
from benchrun.core.keys import override_key
from benchrun.core.text import name_said

ITEM_MARKS = ",[]{}()"
"""What ends an item of a value in Hydra's override grammar: a sweep's or a list's comma, brackets."""
LINE_ENDS = "\r\x85\u2028\u2029"
"""The line ends (Python splits lines at) that a command line's word can hold, which Hydra's grammar takes in quotes
alone."""


def unquoted_character(err: OverrideParseException) -> str | None:
    """Hydra's `LexerNoViableAltException: OVERRIDE` (with a caret under the character) for a character its grammar
    takes only in quotes (`é`, `ö`, `😀`), as a line naming the override, the character and the fix (a control
    character, which no text holds, is to be removed: quoting it put U+FFFD in the advice); else None."""
    prefix, lines = "LexerNoViableAltException: ", err.message.split("\n")  # the override's own `\r` is no line's end
    if len(lines) < 2 or not lines[0].startswith(prefix) or "^" not in lines[1]:
        return None
    caret = lines[1].index("^") - len(prefix)  # where the token it could not read starts: `.` of `task.оnly`
    at = next((index for index, char in enumerate(err.override)  # the character it could not read
               if index >= caret and (not char.isascii() or UNASKED.match(char))), caret)
    if not 0 <= at < len(err.override):
        return None
    if UNASKED.match(err.override[at]):  # quoted, it is taken by the grammar and refused as a text's
        return f"the override {err.override!r}: character {at + 1}: {unasked_said(err.override[at], raw=True)}"
    said = (f"the override {err.override!r}: Hydra's override grammar takes {name_said(err.override[at])} "
            f"(character {at + 1})")
    if at < err.override.find("=") or "=" not in err.override:  # quoting the value would not help: it is the key's
        return (f"{said} in no key, and no key of the config holds it: keys are written in ASCII (runner.model, "
                "task.path)")
    if err.override[at] in LINE_ENDS:  # quoted, it is a line end of no word said
        return f"{said}, a line end, in no word of a command line" + (
            ": a script saved with Windows line ends (CRLF) leaves it at the end of each line's last word; remove it "
            "(dos2unix the script)" if err.override[at] == "\r" else "; remove it")
    advice = _quote_advice(err.override, at)
    return f"{said} only inside quotes" + (f"; quote it: {advice}" if advice else "")


def unreadable_override(err: OverrideParseException) -> str:
    """An override Hydra's grammar cannot read, as a line naming it (Hydra's `mismatched input '[' expecting <EOF>`
    named none: `runner.host=http://[::1]:11434`), its reason, and how a value that is one text is written."""
    why = next((line.strip() for line in err.message.splitlines()
                if line.strip() and not line.startswith(("Error parsing override", "See https://hydra.cc"))), "")
    said = f"the override {err.override!r}: Hydra's override grammar cannot read it ({why})"
    advice = _quote_advice(err.override) if "=" in err.override else None
    return said + (f"; a value that is one text is written in quotes: {advice}" if advice else "")


def _quote_advice(override: str, at: int | None = None) -> str | None:
    """`override` in a form Hydra's grammar reads: the item of a sweep or a list that holds character `at` quoted,
    else the whole value; None when neither is read."""
    key, value = override.split("=", 1)
    items = [_quoted(override, at, escaped) for escaped in (False, True)] if at is not None else []
    forms = items + [f"{key}={_in_quotes(value, escaped)}" for escaped in (False, True)]
    return next((form for form in forms if _readable(form)), None)


def _readable(override: str) -> bool:
    """Whether Hydra's grammar reads `override`, and OmegaConf the interpolations its texts hold (`'${x'` is read by
    Hydra, then refused as a value)."""
    try:
        value = OverridesParser.create().parse_override(override).value()
        if isinstance(items := getattr(value, "list", value), (str, list, dict)):
            OmegaConf.create({"value": items})
    except (HydraException, OmegaConfBaseException):
        return False
    return True


def _in_quotes(text: str, escaped: bool = False) -> str:
    """`text` quoted as Hydra's grammar reads it back: in single quotes, or in double quotes when it holds a single
    one (`x="it's"`), or with its single quotes escaped when it holds both; the backslashes before a quote (the
    closing one too: `'C:\\dir\\\\'`) doubled, as Hydra halves them; `escaped`: each `${` as text (`\\${`, the
    backslashes before it doubled), not an interpolation's start, which OmegaConf reads it as in quotes too."""
    quote = '"' if "'" in text and '"' not in text else "'"
    if escaped:
        text = re.sub(r"(\\*)\$\{", lambda found: found[1] * 2 + "\\${", text)
    return quote + re.sub(f"(\\\\*)({quote}|$)", lambda found: found[1] * 2 + "\\" * bool(found[2]) + found[2],
                          text) + quote


def _quoted(override: str, at: int, escaped: bool = False) -> str:
    """`override` with the value, or the item of a sweep or a list, that holds character `at` in quotes:
    `x=a,'gémma'`, `task.only=[a,'é']`."""
    left = max(override.index("=") + 1, *(override.rfind(mark, 0, at) + 1 for mark in ITEM_MARKS))
    right = min((found for mark in ITEM_MARKS if (found := override.find(mark, at)) >= 0), default=len(override))
    return f"{override[:left]}{_in_quotes(override[left:right], escaped)}{override[right:]}"


KEPT = re.compile(r"hydra\.overrides\.(task|hydra)\[(\d+)\]")
"""Where Hydra keeps each override as written (its own settings' list of the job's overrides, or of its own), which
OmegaConf reads as text that may hold `${...}`."""


def kept_unread(err: Exception, argv: Sequence[str]) -> str | None:
    """The line for an override Hydra read but could not keep as written among its own settings: OmegaConf read the
    `${...}` of its raw text (`task.system="${oc.env:HOME,\\"x\\"}"`, the escaped quotes kept) and could not, said
    with no override named (`(mismatched input '"' expecting BRACE_CLOSE)`); None for any other error."""
    found = KEPT.fullmatch(str(getattr(err.__cause__, "full_key", None) or ""))
    if not isinstance(err.__cause__, OmegaConfBaseException) or found is None:
        return None
    listed = [word for word in override_words(argv) if _is_hydras(word) == (found[1] == "hydra")]
    if int(found[2]) >= len(listed):
        return None
    why = next(iter(str(err.__cause__).strip().splitlines()), "")
    return (f"the override {listed[int(found[2])]!r}: Hydra keeps it as written among its own settings "
            f"(hydra.overrides.{found[1]}), where OmegaConf cannot read the interpolation it holds ({why}); inside "
            "${...}, quote a text with the quote the value is not written in, not an escaped one")


def _is_hydras(word: str) -> bool:
    """Whether Hydra counts the override `word` as one of its own settings' (`hydra.verbose=1`, `hydra/launcher=x`)."""
    key = override_key(word)
    return key == "hydra" or key.startswith(("hydra.", "hydra/"))
