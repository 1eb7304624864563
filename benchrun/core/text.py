"""Text from outside (a server's answer or error, a scorer's metric name, a file's cell) made fit to keep: every
string benchrun writes is valid UTF-8, so a lone UTF-16 surrogate (which JSON's `\\ud800` escapes can carry into a
Python string) is replaced by U+FFFD where the text enters; and an error message is one line of bounded length
(`one_line`), where an error becomes data and where it is printed."""

from __future__ import annotations

import json
import math
import os
import re
import socket
import sys
import unicodedata
from html.parser import HTMLParser
from typing import Any, Callable, Iterable

SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def name_said(name: str) -> str:
    """`name` quoted as an error names it, its characters outside ASCII escaped beside it (`'tаsk' (t\\u0430sk)`):
    an unknown name written with a Cyrillic `а` looked the same as the known one the error listed beside it. One
    that does not print (a line break) is said escaped alone; one holding `'` alone in double quotes (`"'"`), as
    Python quotes it."""
    if not name.isprintable():
        return ascii(name)
    return _escaped_beside(f'"{name}"' if "'" in name and '"' not in name else f"'{name}'", name)


def _escaped_beside(shown: str, name: str) -> str:
    """`shown` (how `name` is written), followed outside ASCII by its characters escaped (`'а' (\\u0430)`)."""
    return shown if name.isascii() else f"{shown} ({ascii(name)[1:-1]})"


def unseen(char: str) -> bool:
    """Whether `char` shows nothing: white space, or an invisible format character (a zero-width space, a byte-order
    mark, a soft hyphen, a word joiner: Unicode's category Cf)."""
    return char.isspace() or unicodedata.category(char) == "Cf"


def says_nothing(text: str) -> bool:
    """Whether `text` is only characters that show nothing (`unseen`), or none."""
    return all(map(unseen, text))


def names_listed(names: Iterable[str]) -> str:
    """Names as a list says them, `a, b`, each outside ASCII with its characters escaped beside it (`а (\\u0430)`), as
    `name_said` says one: a list of known names beside a name refused reads as it is. A name a list would not tell
    apart (empty, white space at an end, a character that does not print, a comma) is quoted and escaped (`'m '`)."""
    return ", ".join(map(name_listed, names))


def name_listed(name: str) -> str:
    """One name as a list says it (`names_listed`)."""
    return ascii(name) if _blurred(name) else _escaped_beside(name, name)


def _blurred(name: str) -> bool:
    """Whether `name`, listed bare, could not be told from another (`m ` from `m`, `a, b` from two names)."""
    return not name or not name.isprintable() or unseen(name[0]) or unseen(name[-1]) or "," in name


def writable(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (the same object when it has none)."""
    if text.isascii() or not SURROGATE.search(text):
        return text
    return SURROGATE.sub(REPLACEMENT, text)


def shown(text: str) -> str:
    """`text` as a message shows it: each byte that is not UTF-8 (Python keeps it as a lone surrogate, U+DC80 to
    U+DCFF) as `\\xNN`, as a path's are shown (`undecoded`); any other lone surrogate U+FFFD."""
    if text.isascii() or not SURROGATE.search(text):
        return text
    return SURROGATE.sub(lambda found: f"\\x{ord(found[0]) - 0xDC00:02x}" if "\udc80" <= found[0] <= "\udcff"
                         else REPLACEMENT, text)


def undecoded(name: str) -> str | None:
    """How a file's `name` shows what it holds that is not UTF-8 (bytes Python keeps as lone surrogates, as
    `bad\\xffdir`), or None when it is text."""
    if name.isascii() or not SURROGATE.search(name):
        return None
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") if all(
        "\udc80" <= found <= "\udcff" for found in SURROGATE.findall(name)) else ascii(name)[1:-1]


def host_name() -> str:
    """This machine's name as a run records it (run.json, run.lock): text, its bytes that are not UTF-8 (which the
    kernel takes in a name) escaped as `undecoded` shows them (`h\\xffst`)."""
    name = socket.gethostname()
    return undecoded(name) or name


def unreadable_here(name: str) -> str | None:
    """What to do when `name` (a word of the command line, a path) holds UTF-8 that this locale's encoding left
    undecoded (LC_ALL=C with PYTHONUTF8=0, a Latin-1 locale), else None (text, or bytes that are not UTF-8)."""
    if undecoded(name) is None:
        return None
    try:
        os.fsencode(name).decode("utf-8")
    except (UnicodeError, ValueError):
        return None
    return (f"is UTF-8 text that this locale's encoding ({sys.getfilesystemencoding()}) cannot read: set "
            "PYTHONUTF8=1 (or a UTF-8 locale, LANG=C.UTF-8)")


def writable_data(value: Any) -> Any:
    """JSON-like data (str, list, dict of them, numbers, None) as JSON can keep it: every string, keys included,
    `writable`, and a float that is not finite (which JSON has no number for) None."""
    if isinstance(value, str):
        return writable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {writable(str(key)): writable_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [writable_data(item) for item in value]
    return value


NESTED = "nested deeper than Python can follow"
CODE = re.compile(r"[+-]?0[0-9]+", re.ASCII)
"""An integer's text with a leading zero (`007`, a postcode `02139`): a code or an id, read and compared as the text it
is, never as the number it would read as (7, 2139)."""


class NotJSON(ValueError):
    """A text Python's JSON reader refuses, and why."""


SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of half a UTF-16 surrogate pair, which JSON readers turn into a lone surrogate unless paired."""


def json_value(text: str, parse_float: Callable[[str], Any] = float) -> Any:
    """An answer's text read as JSON (its fractions and exponents through `parse_float`), the one way every reader of answers does (the format check, the built-in
    scorers, the judge's reply): its strings `writable` (a `\\ud800` escape, which the Rust validator cannot encode
    and no record can hold, is U+FFFD); NotJSON for any text Python refuses: not JSON, nested deeper than it follows,
    or an integer of more digits than it converts (which is a ValueError of its own, not a JSONDecodeError); and an
    object giving one key twice (`{"score": 0, "score": 1}`), which JSON readers resolve each their own way; and
    `NaN`, `Infinity` or `-Infinity`, which Python's reader takes though JSON has no such number (`{"x": NaN}` was
    format_valid 1 for a `float` field, a JSON text no other reader of the answer takes)."""
    try:
        value = json.loads(text, object_pairs_hook=once_each, parse_constant=_no_constant, parse_float=parse_float)
        return _writable_strings(value) if "\\u" in text and SURROGATE_ESCAPE.search(text) else value
    except NotJSON:
        raise
    except json.JSONDecodeError as err:
        raise NotJSON(str(err)) from None
    except ValueError:
        raise NotJSON(too_many_digits()) from None
    except RecursionError:
        raise NotJSON(NESTED) from None


def _no_constant(name: str) -> Any:
    raise NotJSON(f"{name} is no JSON value (JSON has no NaN, Infinity or -Infinity)")


def server_json(body: bytes) -> Any:
    """A server's answer (its body, as bytes) read as JSON as Python reads it (UTF-8, -16 or -32, as the body's first
    bytes say), each key of an object given once: NotJSON naming a key given twice (`"content"` in one message, which
    readers resolve each their own way, so the text kept could be another than the one a reader of the bytes sees). An
    integer of more digits than Python converts is read as a number too large to hold (`server_reading`)."""
    return server_reading(body)[0]


def server_reading(body: bytes) -> tuple[Any, bool]:
    """`server_json`'s reading of `body`, and whether it held an integer of more digits than Python converts: read
    as Python reads `1e999`, an infinity (not reported where a count is read, `json_count`; no text, where a string is
    read), in a second reading only (a reader of every integer costs each answer twice the time); its JSON text is
    then not the body's."""
    try:
        return json.loads(body, object_pairs_hook=once_each), False
    except ValueError as err:
        if isinstance(err, (json.JSONDecodeError, NotJSON)):
            raise
        return json.loads(body, object_pairs_hook=once_each, parse_int=_server_int), True


def _server_int(text: str) -> int | float:
    """An integer of a server's answer, or an infinity where it has more digits than Python converts: read as text,
    a number given as an answer's text or a served model's name was taken for one."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once, else NotJSON naming the key given twice."""
    value = dict(pairs)
    if len(value) < len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise NotJSON(f"the key {json.dumps(twice, ensure_ascii=False)} is given twice in one object (which one is "
                      "meant, JSON does not say); give each key once")
    return value


def counted(n: int, noun: str, plural: str = "") -> str:
    """`n` things said as a count is: `1 example`, `2 examples`, `1,000 samples` (`plural` when not `noun` + s)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def too_many_digits() -> str:
    """What is said of an integer of more digits than Python converts (`sys.get_int_max_str_digits`)."""
    return f"an integer of more than {sys.get_int_max_str_digits():,} digits, more than Python reads"


def _writable_strings(value: Any) -> Any:
    """Parsed JSON with every string, keys included, `writable` (numbers left as they are, NaN included)."""
    if isinstance(value, str):
        return writable(value)
    if isinstance(value, list):
        return [_writable_strings(item) for item in value]
    if isinstance(value, dict):
        return {writable(key): _writable_strings(item) for key, item in value.items()}
    return value


MESSAGE_CHARS = 500
"""The longest error message a record keeps (what a server, a runner or a scorer said): enough for any message
written for a person, not for a proxy's whole HTML page or a traceback."""
LINE_CHARS = 2_000
"""The longest error line printed, or kept as a run's reason: a recorded message with the run's directory (twice)
and the command that finishes the run."""
SCAN = 16
"""Of a text over 2 x SCAN x limit characters, only the first and last SCAN x limit are read: no more can be kept."""
ELIDED = "[...]"
HTML_PAGE = re.compile(r"(?i)<!doctype\s+html|<html[\s>]")
PAGE_OF_NO_TEXT = "an HTML page of no text"
"""What a page with neither a title nor text says, quoted in a message (`<html></html>`): not nothing."""
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""The control characters whitespace folding leaves (NUL, ESC, ...): each becomes U+FFFD, never reaching a terminal."""
_OWN_TEXT = ("title", "script", "style")
"""Elements whose text is the page's title, or no part of what the page says."""


def no_control_character(text: str, why: str) -> str:
    """`text`, refused when it holds a control character (a line break, a tab, an escape), which `why` says."""
    if (found := CONTROL.search(text)) is not None:
        raise ValueError(f"{found[0]!r} at character {found.start() + 1}, a control character, which {why}")
    return text


def message_of(err: BaseException) -> str:
    """What an error says (`str(err)`); one whose own str() raises (or gives no text) says that instead of raising."""
    try:
        return str(err)
    except BaseException as inner:
        return f"(its message cannot be shown: str() raised {type(inner).__name__})"


def one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    """An error message as one line of at most `limit` characters: an HTML page reduced to its title and text, each
    run of whitespace one space, other control characters U+FFFD, lone surrogates as `shown`, and the middle of a longer
    line left out (its head says what failed, its tail often what to do). No word is cut in two, so a key that the
    text holds whole stays whole, for masking (benchrun.core.secrets)."""
    if len(text) > 2 * SCAN * limit:
        text = _ends(text, 2 * SCAN * limit)
    if (page := HTML_PAGE.search(text)) is not None:
        text = text[:page.start()] + page_text(text[page.start():])
    line = CONTROL.sub(REPLACEMENT, " ".join(shown(text).split()))
    return line if len(line) <= limit else _ends(line, limit - len(ELIDED) - 2)


def _ends(text: str, keep: int) -> str:
    """The head and the tail of `text`, `keep` characters in all at most, around ELIDED; the word at each cut is left
    out whole (unless the cut is inside the only word)."""
    head, tail = text[:keep // 2], text[len(text) - (keep - keep // 2):]
    head = re.sub(r"\s+\S*\Z", "", head) or head
    tail = re.sub(r"\A\S*\s+", "", tail) or tail
    return f"{head} {ELIDED} {tail}"


def page_text(page: str) -> str:
    """What an HTML page says: its title, then its text unless that starts with the title (scripts, styles and tags
    left out, entities decoded); PAGE_OF_NO_TEXT for neither."""
    parser = _PageText()
    parser.feed(page)
    parser.close()
    title, text = (" ".join(" ".join(parts).split()) for parts in (parser.title, parser.text))
    if not title or text.startswith(title):
        return text or PAGE_OF_NO_TEXT
    return f"{title}: {text}" if text else title


class _PageText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.text: list[str] = []
        self._inside: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _OWN_TEXT:
            self._inside = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._inside:
            self._inside = None

    def handle_data(self, data: str) -> None:
        if self._inside is None:
            self.text.append(data)
        elif self._inside == "title":
            self.title.append(data)
