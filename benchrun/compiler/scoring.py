"""Scorers: the built-in ones, loading `custom_scorer.py`, checking their signature, and reading their results.

The user's scorers are called in a separate process (benchrun.execute.scorer_worker), the built-ins in the run's;
this module is what that process, the grader and the compiler share, so it imports nothing heavy."""

from __future__ import annotations

import bisect
import hashlib
import inspect
import json
import re
import unicodedata
from decimal import Decimal, InvalidOperation
from functools import cached_property
from numbers import Real
from pathlib import Path
from typing import Any, Callable

from benchrun.compiler.alike import printed_alike
from benchrun.compiler.usercode import Digests, defined_here, import_file
from benchrun.core.errors import TaskError
from benchrun.core.layout import RESERVED_SCORERS
from benchrun.core.metricvalue import MAX_METRIC, in_bounds
from benchrun.core.text import CODE, CONTROL, NotJSON, json_value, unseen, writable

CUSTOM_FILE = "custom_scorer.py"
Scorer = Callable[[str, Any], Any]
Metric = int | float


def answer_of(response: str, parse_float: Callable[[str], Any] = float, whole: bool = False) -> Any:
    """The `answer` field of a JSON response (its numbers with fractions or exponents through `parse_float`); the raw
    text when it is not such an object (`whole`: the object read, when it is one without `answer`)."""
    try:
        parsed = json_value(response, parse_float)
    except (NotJSON, TypeError):
        return response
    return parsed.get("answer", parsed if whole else response) if isinstance(parsed, dict) else parsed


def _references(reference: Any) -> list[Any]:
    return reference if isinstance(reference, list) else [reference]


def _same(exact: Any, text: Any, reference: Any) -> bool:
    """Equal as numbers when both are (the answer's `exact` value: 2**64 + 1 is not 2**64), else as text (the answer's
    `text`) trimmed of what cannot be seen at its ends (`trimmed`) and composed (`_composed`), a null as its JSON
    text; a bool on either side as its JSON text, in any case (a BoolAnswer's `true` is the values.csv cell `true`,
    and `True`, as Python writes it)."""
    number = number_value(exact), number_value(reference)
    if None not in number:
        return number[0] == number[1]
    if isinstance(exact, bool) or isinstance(reference, bool):
        return _folded(trimmed(_written(text))) == _folded(trimmed(_written(reference)))
    return _composed(trimmed(_written(text))) == _composed(trimmed(_written(reference)))


def trimmed(text: str) -> str:
    """`text` without what cannot be seen at its ends: whitespace, and format characters (Unicode's Cf: a zero-width
    space, a byte-order mark, a soft hyphen, a word joiner), as a reference copied from a web page carries them
    (`Paris` followed by U+200B is the answer `Paris`); inside the text they stay (a zero-width joiner of an emoji)."""
    start, end = 0, len(text)
    while start < end and unseen(text[start]):
        start += 1
    while end > start and unseen(text[end - 1]):
        end -= 1
    return text[start:end]


def _composed(text: str) -> str:
    """A text in Unicode's composed form (NFC): `é` written as one character or as `e` and a combining accent (NFD, as
    macOS and some keyboards and PDFs write it) is one text, and compares as one."""
    return unicodedata.normalize("NFC", text)


def _folded(text: str) -> str:
    """A text as compared ignoring case: case folded, then composed (a decomposed letter folds as the composed does)."""
    return _composed(unicodedata.normalize("NFD", text).casefold())


def _written(value: Any) -> str:
    """A value as text: a bool or null as JSON writes it (`true`, `null`: an answer of null, a model abstaining, is
    not the text `None`, nor contains `no`), anything else as Python does."""
    return json.dumps(value) if isinstance(value, bool) or value is None else str(value)


def number_value(value: Any) -> Decimal | None:
    """A finite number's exact value: an int's, a float's as its shortest text (0.1 as 0.1), a text's as written, its
    unseen ends trimmed and a sign as typeset or fullwidth read as ASCII's (`' 7 '`, `'1e3'`, `'7'` and a zero-width
    space, `'−5'`, `'－５'`: `_signed`); None for a bool, a text that is no number, a code (`'007'`, a postcode
    `'02139'`: `CODE`; one in groups, `'2024_01'`, which Decimal reads as Python's digit grouping, 202401, and the
    typing of cells keeps as text), NaN or an infinity (which are compared as text). As floats, integers past 2**53
    were equal to their neighbours and numbers past 1e308 all infinity, so a wrong answer to 2**64 matched, and NaN
    matched nothing, not even "NaN"."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        return None
    if isinstance(value, str):
        value = _signed(trimmed(value))
        if CODE.fullmatch(value) or "_" in value:  # 2139 is not the postcode 02139
            return None
    try:
        number = Decimal(repr(value) if isinstance(value, float) else value)
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def _as_written(text: str) -> Decimal | str:
    """A JSON number of the answer as its text says: as a float, `2.00000000000000001` was 2 and `1e-400` was 0 (both
    matched them), and 18446744073709551616.0 was not 2**64; the text itself when Decimal cannot hold it."""
    try:
        return Decimal(text)
    except InvalidOperation:
        return text


def exact_match(response: str, reference: Any) -> int:
    """1 when the answer equals a reference (numerically, or as stripped text), else 0."""
    exact = answer_of(response, _as_written)
    text = exact if isinstance(exact, str) else answer_of(response)  # a list's floats as Python writes them: [0.5]
    return int(any(_same(exact, text, ref) for ref in _references(reference)))


def contains(response: str, reference: Any) -> int:
    """1 when a value of the answer holds a reference (any of a list): a text contains it, ignoring case, both composed
    (`_folded`); a number equals it (`Held`); else 0."""
    held = Held(answer_of(response, _as_written, whole=True))
    return int(any(held.holds(ref) for ref in _references(reference)))


class Held:
    """The values an answer holds: itself, or for a list or an object (a format without `answer`) each value in it, as
    parsed, not its keys nor its JSON or Python text (a key `direction` does not hold `on`, `[null]` not `no`, an
    escaped `caf\\u00e9` is `café`); each read once, however many references are sought in it."""

    def __init__(self, answer: Any):
        values, todo = [], [answer]
        while todo:
            value = todo.pop()
            if isinstance(value, (list, dict)):
                todo.extend(reversed(value if isinstance(value, list) else list(value.values())))
            else:
                values.append(value)
        self._numbers = {number_value(value) for value in values if _is_number(value)}
        self._texts = [_written(value) for value in values if not _is_number(value)]
        self._spans: dict[int, Spans] = {}

    @cached_property
    def _texts_folded(self) -> list[str]:
        return [_folded(text) for text in self._texts]

    @cached_property
    def _numerals(self) -> set[Decimal | None]:
        """The numbers written in the texts (`NUMERAL`), each read once however often it is written."""
        return {_numeral(found) for text in self._texts for found in set(NUMERAL.findall(text))}

    def holds(self, reference: Any) -> bool:
        """A reference that is a number (as exact_match reads one: 5, `'5'`, not the code `'007'`) is held by a value
        that is that number (15 does not hold 5, nor 3.14159 3.14) or a text that writes it as a number (`18 legs`
        does not hold 8; `1.5e-7 m` holds the values.csv cell 1.5e-7, read as 1.5e-07); any other reference by a
        text containing it, the reference `trimmed` (`Paris` and a zero-width space is `Paris`)."""
        wanted = number_value(reference)
        if wanted is not None:
            return wanted in self._numbers or wanted in self._numerals
        sought = _folded(trimmed(str(reference)))
        if not (sought[:1].isdecimal() or sought[-1:].isdecimal()):
            return any(sought in text for text in self._texts_folded)
        return any(self._holds_whole(sought, i) for i in range(len(self._texts_folded)))

    def _holds_whole(self, sought: str, i: int) -> bool:
        """Whether the `i`th folded text holds `sought`, a text beginning or ending with a digit (`5 km`, `Apollo 1`),
        where no number it begins or ends with is part of a longer one, as NUMERAL reads numbers: `15 km`, `-5 km`,
        `1,500 km` do not hold `5 km`, nor `Apollo 11`, `Apollo 1.5`, `Apollo 1e3` `Apollo 1`, nor `$1,500` `$1`."""
        text = self._texts_folded[i]
        at = text.find(sought)
        while at >= 0:
            end = at + len(sought)
            if ((not sought[0].isdecimal() or not (at and BEFORE.match(text, at - 1)) and not self._within(i, at))
                    and (not sought[-1].isdecimal() or not AFTER.match(text, end) and not self._within(i, end))):
                return True
            at = text.find(sought, at + 1)
        return False

    def _within(self, i: int, at: int) -> bool:
        """Whether `at` falls within a number of the `i`th folded text (`1,5|00`, `-|5`, `1|e3`), not after a plus
        sign (`+|5` writes 5); its numbers read once, when a reference is first found in it."""
        text = self._texts_folded[i]
        if i not in self._spans:
            self._spans[i] = _number_spans(text)
        starts, ends = self._spans[i]
        j = bisect.bisect_left(starts, at) - 1
        return j >= 0 and at < ends[j] and not (starts[j] == at - 1 and text[starts[j]] in "+" + PLUSES)


Spans = tuple[list[int], list[int]]
"""Where the numbers written in a text begin and end, in order."""


def _number_spans(text: str) -> Spans:
    """Where each number NUMERAL reads in `text` begins and ends (its last digit: `5.` ending a sentence ends at 5)."""
    starts, ends = [], []
    for found in NUMERAL.finditer(text):
        start, end = found.span()
        starts.append(start)
        ends.append(end - (text[end - 1] == "."))
    return starts, ends


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _numeral(text: str) -> Decimal | None:
    """A number written in a text as `number_value` reads it (`text` has no ends to trim): None for a code, `007`, one
    in groups (`1,500`), and one Decimal cannot hold (an exponent of 30 digits)."""
    text = _signed(text)
    try:
        return None if CODE.fullmatch(text) or "," in text else Decimal(text)
    except InvalidOperation:
        return None


WIDE_MINUSES, WIDE_PLUSES = "\uff0d\ufe63", "\uff0b\ufe62"
"""The fullwidth and small signs (`－５`, as Chinese and Japanese text writes a number beside fullwidth digits, which
Decimal reads), written where letters touch numbers (`気温は－５度`, -5): a sign after a letter too."""
MINUSES, PLUSES = "\u2212" + WIDE_MINUSES, WIDE_PLUSES
"""Signs a number is written with besides ASCII's: the minus as typeset (U+2212, as Wikipedia and many models write
`−5`), and the wide ones."""
_ASCII_SIGNS = str.maketrans(dict.fromkeys(MINUSES, "-") | dict.fromkeys(PLUSES, "+"))


def _signed(text: str) -> str:
    """`text` with each sign of MINUSES and PLUSES as the ASCII `-` or `+`."""
    return text.translate(_ASCII_SIGNS)


UNSPACED = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
            "\uff66-\uff9f\U00020000-\U0003134f")
"""The letters of scripts written without spaces between words (Thai, Lao, Myanmar, Khmer, kana, Han), which touch
the numbers of their text (`答えは５です`, `気温は-5度`): no name is made of one and a number, as `CO5` is."""
BEFORE = re.compile(f"[^\\W{UNSPACED}]|[\\d.]")
"""What a number does not follow: a letter but one of UNSPACED (`CO5`), a digit of any script (`15`, `๑๕`), a `.`
(`2.5`)."""
AFTER = re.compile(r"[\d_\u00b2\u00b3\u00b9\u00bc-\u00be\u2070-\u209f\u2150-\u218b]|\.\d")
"""What a number is not followed by: a digit, a digit group's `_`, a fraction, superscript or subscript (`1½`,
`1_000`, `10⁶`), a decimal part."""
SIGN = f"[-+{MINUSES}{PLUSES}]"
NUMERAL = re.compile(rf"(?:(?<!{BEFORE.pattern}){SIGN}?|(?<![\d.])[{WIDE_MINUSES}{WIDE_PLUSES}])"
                     rf"(?:\d{{1,3}}(?:,\d{{3}})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)(?:[eE]{SIGN}?\d+)?(?!{AFTER.pattern})")
"""A number written in a text, its sign kept (a typeset or fullwidth one too), a unit may follow (`5km`), not part of
a longer number or of a name (no 5 is written in 15, 2.5, -5, −5, は－５, は-5 or CO5, no 1 in 1½ or 1_000, no 10 in 10⁶);
a number in groups of three digits (`1,500`) is one number, which `_numeral` does not read (a thousands separator
here, a decimal comma there: no 500 nor 1 is written in it), where `1,2,3` writes three."""


BUILTIN: dict[str, Scorer] = {"exact_match": exact_match, "contains": contains}


def scorers_in(path: Path, rel: str, probe: bool = True, digests: Digests | None = None) -> dict[str, Scorer]:
    """The public functions defined in a scorer file (`rel` names it in errors), but for one named like benchrun's
    own scores (RESERVED_SCORERS), which no task can name and no rescore applies; `probe`, `digests`: as
    `import_file`."""
    module = import_file(path, rel, probe, digests)
    return {name: obj for name, obj in vars(module).items() if inspect.isfunction(obj) and defined_here(module, obj)
            and not name.startswith("_") and name not in RESERVED_SCORERS}


def custom_scorers(bench: Path) -> dict[str, Scorer]:
    """The functions defined in the benchmark's custom_scorer.py (none if absent)."""
    path = bench / CUSTOM_FILE
    return scorers_in(path, CUSTOM_FILE) if path.exists() else {}


def available(bench: Path) -> dict[str, Scorer]:
    """Every scorer a benchmark can name: the built-ins, then its custom_scorer.py (which may replace one)."""
    return {**BUILTIN, **custom_scorers(bench)}


def source_sha256(fn: Scorer) -> str:
    """The sha256 of a scorer's source code, so a changed scorer is visible in the record; one whose source cannot be
    read (made by exec, say) is refused. Code compiled from a string is refused before its source is sought: Python
    3.13 files the text of a `python -c` command (a pytest-xdist worker's, a launcher's) under `<string>`, which
    inspect would give as the source of any function exec made."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    try:
        if code is not None and code.co_filename.startswith("<"):
            raise OSError(f"it was compiled from a string, {code.co_filename}, not read from a file")
        source = inspect.getsource(fn)
    except (OSError, TypeError) as err:
        raise TaskError(f"scorer '{fn.__name__}': its source code cannot be read ({err}), and the manifest records "
                        "its sha256; define it with def in the file", file=CUSTOM_FILE) from None
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def check_signature(name: str, fn: Scorer, file: str) -> None:
    """A scorer is called as fn(response, reference) and returns its value: refuse one that cannot be (one argument,
    three required, ...), and one whose call returns no value but a coroutine or a generator (async def, yield)."""
    if inspect.iscoroutinefunction(fn) or inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        kind = "a generator (it yields)" if inspect.isgeneratorfunction(fn) else "async"
        raise TaskError(f"scorer '{name}' is {kind}: a scorer returns its value (a number, a bool or a dict of "
                        "them); define it with a plain def and return", file=file)
    try:
        inspect.signature(fn).bind("response", "reference")
    except TypeError:
        raise TaskError(f"scorer '{name}' must take two arguments, (response, reference); it is "
                        f"{name}{inspect.signature(fn)}", file=file) from None
    except ValueError:  # a callable whose signature cannot be read: it is called, and any error recorded
        pass


MAX_METRICS, MAX_NAME = 256, 200
"""How many metrics one scorer result may give, and how long a metric's name may be."""


def metrics(name: str, result: Any) -> dict[str, Metric]:
    """A number or bool is one metric; a dict gives one metric per key (a string). Anything else, an empty dict (which
    would leave the sample out of the scorer's statistics unseen), or a value that is not finite or beyond MAX_METRIC,
    is a TypeError: that sample's scorer error. A dict and its keys are read through dict's and str's own methods: a
    subclass's `items`, `__len__` or `__format__` has no say (`items` giving 100,000 metrics where `len` said one,
    a key whose `__len__` said 1 of a name of 5 MB, reached scores.jsonl and the summary)."""
    if not isinstance(result, dict):
        return {name: _metric(name, result)}
    entries = dict.items(result)
    if not entries:
        raise TypeError(f"scorer result {name} is an empty dict, which gives no metric (the sample would be left out "
                        "of the scorer's statistics unseen); return a number, a bool or a dict of them")
    if len(entries) > MAX_METRICS:
        raise TypeError(f"scorer result {name} has {len(entries):,} metrics, more than {MAX_METRICS}")
    found = {(full := _name(name, key)): _metric(full, value) for key, value in entries}
    if len(found) < len(entries):  # keys of a str subclass whose __eq__ or __hash__ sets them apart from one name
        raise TypeError(f"scorer result {name} names one metric twice (keys of a str subclass, equal as strings)")
    if (alike := _alike(list(found))) is not None:
        raise TypeError(f"scorer result {name} gives metrics whose names print alike: {alike}; name them apart")
    return found


def _alike(names: list[str]) -> str | None:
    """Why two metric names of one result print alike (`alike.printed_alike`), shown as one in the summary's table;
    None if no two do."""
    found = printed_alike(names)
    return None if found is None else f"{found[0][0]!r} and {found[0][1]!r}: {found[1]}"


def _name(scorer: str, key: Any) -> str:
    key = str.__str__(key) if isinstance(key, str) else key
    if not isinstance(key, str) or not key or len(key) > MAX_NAME or CONTROL.search(key):
        raise TypeError(f"scorer {scorer} gave a metric named {_shown(key)}: a name is a string of 1 to {MAX_NAME} "
                        "characters, none of them a control character (a line break, a tab, ...)")
    return f"{scorer}.{writable(key)}"


def _metric(name: str, value: Any) -> Metric:
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:  # np.bool_, np.int64: as Python's
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    number = _plain(value)
    if number is not None and in_bounds(number):
        return number
    raise TypeError(f"scorer result {name} must be a finite number of magnitude at most {MAX_METRIC:g}, or a bool; "
                    f"got {_shown(value if number is None or isinstance(value, Decimal) else number)}")


def _plain(value: Any) -> int | float | None:
    """`value` as Python's own int or float, read through those types' own methods (a subclass's `__float__`,
    `__abs__` or `__repr__` has no say: `class Odd(int)` of 10**400 whose `__abs__` gives 0 passed the bound and
    reached scores.jsonl whole), a Real other than those (a Decimal too) as its float; None for what is no real
    number."""
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Decimal):  # a real number that `numbers` does not register as Real
        return float("nan") if Decimal.is_nan(value) else Decimal.__float__(value)
    return float(value) if isinstance(value, Real) else None


def _shown(value: Any) -> str:
    """`value` as an error shows it: its repr, at most 60 characters (an int of any size included)."""
    huge = isinstance(value, int) and value.bit_length() > 200
    text = f"an int of {value.bit_length():,} bits" if huge else repr(value)
    return writable(text if len(text) <= 60 else text[:57] + "...")
