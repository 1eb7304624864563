"""A JSON schema as llama-cpp-python's grammar converter reads it (`readable`): the converter of the embedded
engine's grammars (`local_grammar`) and of llama-cpp-python's OpenAI-compatible server, which takes a schema with
`response_format: json_object` (`openai.response_format`). What it makes of some schemas llama.cpp cannot parse,
and llama-cpp-python then samples with a null grammar: the process dies of SIGSEGV (the embedded engine; the server,
whose every later request of the run is lost with it). Each form given here holds answers to the same schema."""

from __future__ import annotations

import json
import re
import warnings
from functools import cache
from typing import Any

SHORTHANDS = {"d": "0-9", "w": "0-9A-Za-z_", "s": " \\t\\n\\r\\x0B\\x0C"}
"""A regex's class shorthands as the characters they stand for (ASCII's: a grammar that allows fewer characters than
the format's pattern still makes answers the pattern takes), which the converter would pass on as escapes."""
CODED = re.compile(r"\\(?:x([0-9A-Fa-f]{2})|[xuU]\{([0-9A-Fa-f]{1,8})\}|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8}))")
"""A character given by its code in a pattern, as the format check's regex reads one (`\\x41`, `\\x{e9}`, `\\u00e9`,
`\\U0001F600`)."""
MOST_CODE = 0x10FFFF
"""Unicode's last code point."""
GROUP_OPENING = re.compile(r"\(\?(:|P?<[A-Za-z_][A-Za-z0-9_]*>)")
"""A group's opening that only says how the group is matched or named (`(?:`, `(?<name>`, `(?P<name>`)."""
QUANTIFIER = re.compile(r"\{(\d*)(,(\d*))?\}")
"""A repetition's bounds in a pattern (`{2}`, `{2,}`, `{,3}`, `{2,3}`)."""
CONTROL_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v"}
"""A regex's escapes of control characters, by the letter after the backslash."""
JSON_ESCAPED = ('"', "\\", *map(chr, range(0x20)))
"""The characters JSON writes escaped in a string."""
JSON_ESCAPES = {'"': '"', "\\": "\\\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
"""The characters JSON may write as a backslash and a letter or symbol, and that as a class's member in a pattern."""
ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
                         "$comment"})
"""What a schema may say that allows no fewer values: one of these alone (pydantic's `{"title": "X"}` of an `Any`
field) is any value, which the converter refuses (`Unrecognized schema`) but for `{}`."""
SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""A schema's keys whose value maps names to schemas."""
SCHEMAS = frozenset({"items", "prefixItems", "additionalItems", "additionalProperties", "unevaluatedItems",
                     "unevaluatedProperties", "propertyNames", "contains", "not", "if", "then", "else", "anyOf",
                     "oneOf", "allOf"})
"""A schema's keys whose value is a schema, or a list of them."""
MOST_REPEATED = 1000
"""The largest maxLength or maxItems a grammar holds: the converter writes a bound of N as N optional repetitions
nested in one another, which llama.cpp refuses past about 1,000 (`exceeds sane defaults`) and overflows its stack
parsing past about 16,000 (the engine died of SIGSEGV on a format of `Field(max_length=20000)`). A larger bound is
left to the format check: the grammar holds the rest of the schema (a pattern's `{n,m}` too: `repeated`)."""
MOST_REQUIRED = 100_000
"""The largest minLength or minItems a grammar holds: the converter writes a lower bound of N as N items in sequence,
some 37 bytes each in the engine's memory (`Field(min_length=30_000_000)`: 1.1 GB, a sample of 5 s; 10**9 past the
machine's, the engine killed by the out-of-memory killer, every resume so again), and no answer within any
num_predict reaches such a length. A larger bound is left to the format check."""
BOUNDS_HELD = {"maxLength": MOST_REPEATED, "maxItems": MOST_REPEATED, "minLength": MOST_REQUIRED,
               "minItems": MOST_REQUIRED}
"""The most each bound a grammar holds may be; a larger one is left out, to the format check."""


def repeated(least: int, most: int) -> int | None:
    """A repetition's upper bound as a grammar holds it: `most`, or None (unbounded, the format check holding it)
    where it is more than MOST_REPEATED past `least`, each repetition past `least` one nesting of the converter's."""
    return None if most - least > MOST_REPEATED else most


def readable(schema: Any) -> Any:
    """`schema` as llama-cpp-python's converter reads it: a root that is a `$ref` (pydantic's schema of a recursive
    model) made the definition it names, for the converter resolves no `$ref` inside the definitions of a root that
    is one (a KeyError); each `pattern`'s class shorthands spelt out (`\\d` as `[0-9]`) and its free ends made `.*`
    (`anchored`) and every character given as JSON writes it (`spelt_out`: the converter matches a pattern against
    the answer's JSON text); a bound past what a grammar holds (`BOUNDS_HELD`) left out; a string constant the
    converter misreads (a quote, a backslash, a line break in it) as the pattern of its JSON text, and a property so
    named as an additional one."""
    return _held(_root_inlined(schema))


def _root_inlined(schema: Any) -> Any:
    if not isinstance(schema, dict) or not isinstance(ref := schema.get("$ref"), str) or not ref.startswith("#/"):
        return schema
    target: Any = schema
    for part in ref[2:].split("/"):
        target = target.get(part) if isinstance(target, dict) else None
    if not isinstance(target, dict):
        return schema
    return {**{key: value for key, value in schema.items() if key != "$ref"}, **target}


def _held(schema: Any) -> Any:
    """A schema (a dict; a bool, or anything else, as it is) with its patterns, bounds and annotations as `readable`
    says, and so each schema within it; a value it gives (`const`, `enum`, `default`) is left as it is."""
    if not isinstance(schema, dict):
        return schema
    found = {key: _within(key, value) for key, value in schema.items()
             if not (isinstance(value, int) and value > BOUNDS_HELD.get(key, value))}
    if isinstance(found.get("pattern"), str):
        found["pattern"] = spelt_out(anchored(found["pattern"]))
    if found and found.keys() <= ANNOTATIONS:
        return {}  # any value, as the converter reads only an empty schema
    return _names_freed(_constants_spelt(found))


def _constants_spelt(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with a `const` or `enum` that gives a string the converter misreads (`_misread`) as the union of its
    values, each such string given as the pattern of its JSON text (`_spelt_pattern`); any other as it is."""
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if not isinstance(values, list) or not any(_misread(value) for value in values):
        return schema
    return {"anyOf": [{"type": "string", "pattern": _spelt_pattern(value)} if _misread(value) else {"const": value}
                      for value in values]}


def _names_freed(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each property whose name the converter misreads (`_misread`: it writes names as it writes
    constants) given as one of its additional properties, of its schema or any other allowed there: its name is left
    to the format check, the grammar holding the rest (a name of a line break killed the engine, of a quote made a
    grammar llama.cpp refuses)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not any(_misread(name) for name in properties):
        return schema
    freed = [each for name, each in properties.items() if _misread(name)]
    extra = schema.get("additionalProperties", False)
    return {**schema, "properties": {name: each for name, each in properties.items() if not _misread(name)},
            "required": [name for name in schema.get("required", []) if not _misread(name)],
            "additionalProperties": True if extra is True else {"anyOf": freed + ([extra] if extra else [])}}


def _misread(value: Any) -> bool:
    """Whether the converter's grammar of the constant `value` misreads it: the converter writes the constant's JSON
    text into a GBNF literal escaping only its quotes, so llama.cpp reads each escape of that text as one of its own:
    `\\"` ends the literal (the grammar refused), `\\\\` is a lone backslash (`"a\\b"` answered as a backspace), `\\n`
    a raw line break (which the engine's guard bans: it died of SIGABRT), a character past U+FFFF two lone
    surrogates. One of U+007F to U+FFFF (`\\u00e9`) is read as itself, which is right."""
    return isinstance(value, str) and any(char in '"\\' or not " " <= char <= "\uffff" for char in value)


def _spelt_pattern(value: str) -> str:
    """The pattern of `value` alone as the converter is given it (`spelt_out`: the JSON text of its quotes, backslashes
    and control characters)."""
    return spelt_out(f"^{re.escape(value)}$")


def _within(key: str, value: Any) -> Any:
    """The value of a schema's `key`, each schema in it `_held`."""
    if key in SCHEMA_MAPS and isinstance(value, dict):
        return {name: _held(each) for name, each in value.items()}
    if key in SCHEMAS:
        return [_held(each) for each in value] if isinstance(value, list) else _held(value)
    return value


def anchored(pattern: str) -> str:
    """`pattern` as one the converter takes, anchored at both ends (it refuses any other: `Pattern must start with
    "^" and end with "$"`): JSON Schema's pattern is searched for anywhere in the string, so an end it leaves free is
    given `.*`. The converter reads an anchor elsewhere as the character (`^yes$|^no$` held answers to `yes$` or
    `^no`, which the pattern never takes, so every answer failed the format check): each top-level alternative is
    given its own ends, and an anchor within a group is left to the format check."""
    found = [_ends(pieces) for pieces in _alternatives(pattern)]
    if len(found) == 1 and found[0][1] and found[0][2]:
        return f"^{found[0][0]}$"
    if len({(starts, ends) for _, starts, ends in found}) == 1:
        return _free_ends("|".join(core for core, _, _ in found), *found[0][1:])
    return f"^({'|'.join(_free_ends(*each)[1:-1] for each in found)})$"


def _free_ends(core: str, starts: bool, ends: bool) -> str:
    """`core` anchored at both ends, `.*` at an end it leaves free."""
    return f"^{'' if starts else '.*'}({core}){'' if ends else '.*'}$"


def _alternatives(pattern: str) -> list[list[str]]:
    """`pattern`'s top-level alternatives, each as its pieces: an escape, a class or any other character."""
    alternatives: list[list[str]] = [[]]
    depth, i = 0, 0
    while i < len(pattern):
        end = _class_end(pattern, i) if pattern[i] == "[" else i + 2 if pattern[i] == "\\" else i + 1
        piece, i = pattern[i:end], end
        depth += (piece == "(") - (piece == ")")
        if piece == "|" and depth == 0:
            alternatives.append([])
        else:
            alternatives[-1].append(piece)
    return alternatives


def _class_end(pattern: str, i: int) -> int:
    """Where the class that opens at `i` ends: after its first `]` no backslash escapes, as `spelt_out` reads it."""
    j = i + 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return min(j + 1, len(pattern))


def _ends(pieces: list[str]) -> tuple[str, bool, bool]:
    """An alternative's text without its anchors, and whether it is anchored at its start and at its end."""
    starts = pieces[:1] == ["^"]
    ends = len(pieces) > starts and pieces[-1] == "$"
    return "".join(piece for piece in pieces[starts:len(pieces) - ends] if piece not in ("^", "$")), starts, ends


def spelt_out(pattern: str) -> str:
    """`pattern` with each `\\d`, `\\w` and `\\s` (and, outside a class, `\\D`, `\\W` and `\\S`) as the class of the
    characters it stands for, and each escaped ASCII symbol (`\\.`) by its code in a class (`[\\x2E]`), which the
    converter passes on as a GBNF escape llama.cpp refuses too (and splits, outside a class); outside a class, what
    the converter misreads (`_outside`) as what it reads; a character given by its code (`\\u00e9`) as `_coded`
    gives it, and a character JSON escapes as its JSON text (`_json_text`); every other escape as it is."""
    out, in_class, i, begun, start = [], False, 0, 0, 0
    while i < len(pattern):
        char = pattern[i]
        meant, end = _meant(pattern, i) if char == "\\" and i + 1 < len(pattern) else (char, i + 1)
        if not in_class and meant is not None and _json_escaped(meant):
            out.append(_json_text(meant))
            i = end
        elif char == "\\" and (coded := CODED.match(pattern, i)) is not None:
            out.append(_coded(coded, in_class))
            i = coded.end()
        elif char == "\\" and i + 1 < len(pattern):
            out.append(_escape(pattern[i + 1], in_class))
            i += 2
        elif not in_class and (taken := _outside(pattern, i)) is not None:
            text, i = taken
            out.append(text)
        elif in_class and char == "]":
            in_class, i = False, i + 1
            out[begun:] = [_string_class("".join(out[begun:]) + char, pattern[start:i])]
        else:
            if char == "[" and not in_class:
                in_class, begun, start = True, len(out), i
            out.append(char)
            i += 1
    return "".join(out)


def _meant(pattern: str, i: int) -> tuple[str | None, int]:
    """The character the escape at `i` stands for (None for a class or an assertion: `\\d`, `\\b`), and where the
    pattern goes on."""
    if (coded := CODED.match(pattern, i)) is not None:
        code = int(next(digits for digits in coded.groups() if digits), 16)
        return chr(code) if code <= MOST_CODE else None, coded.end()
    named = pattern[i + 1]
    return CONTROL_ESCAPES.get(named, None if named.isalnum() else named), i + 2


def _json_escaped(char: str) -> bool:
    """Whether JSON writes `char` escaped in a string (`\\"`, `\\\\`, `\\n`, `\\u0001`)."""
    return char in '"\\' or char < " "


def _json_text(char: str) -> str:
    """A pattern of the JSON text of `char` (one JSON escapes), as the converter is given it: it matches a pattern
    against an answer's raw JSON text, so `\\n` as a pattern asked for a raw line break (which the engine's guard
    bans: it died of SIGABRT), `\\\\` for a lone backslash (`"a\\b"`: a backspace), `"` for a quote ending the string."""
    return "(" + "".join(each if each.isalnum() else f"[\\x{ord(each):02X}]" for each in json.dumps(char)[1:-1]) + ")"


def _string_class(given: str, source: str) -> str:
    """The class `given` (as the converter is given it; `source` as the pattern says it) as a pattern of one JSON
    string character it takes: a negated class (`[^,]`, `.`, `\\S`), or one taking a quote or backslash (`[ -~]`),
    took a raw quote, backslash or control character into an answer's JSON text (the model wrote `"He said "hi""`:
    no JSON, every answer format_valid 0), so it is given as one without them, or an escape of one it takes. Any
    other class as it is."""
    read = _read(source)
    escapes = "".join(code for char, code in JSON_ESCAPES.items() if read is None or read.fullmatch(char))
    escaped = f'[\\x5C]({f"[{escapes}]|" if escapes else ""}u[0-9a-fA-F]{{4}})'
    if given.startswith("[^"):
        return f'({given[:-1]}"\\\\\\x00-\\x1F]|{escaped})'
    if read is None or not any(read.fullmatch(char) for char in JSON_ESCAPED):
        return given
    members = _ranges(read)
    return f"({members}|{escaped})" if members else f"({escaped})"


def _ranges(read: re.Pattern[str]) -> str:
    """A class of the characters the class `read` takes but those JSON escapes (an empty text for none)."""
    codes = sorted(ord(char) for char in set(read.findall(_every_character())))
    spans: list[list[int]] = []
    for code in codes:
        if spans and spans[-1][1] == code - 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    if not spans:
        return ""
    return "[" + "".join(_by_code(low) + ("" if low == high else "-" + _by_code(high)) for low, high in spans) + "]"


def _by_code(code: int) -> str:
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


@cache
def _every_character() -> str:
    """Every character a JSON string holds raw (no quote, backslash or control character, no surrogate)."""
    return "".join(chr(code) for code in range(0x20, 0x110000)
                   if code not in (0x22, 0x5C) and not 0xD800 <= code < 0xE000)


def _read(source: str) -> re.Pattern[str] | None:
    """The class `source` as Python's regex reads it; None for one it does not read, or would read otherwise in a
    later Python (`[^a--b]`: a FutureWarning, never printed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return re.compile(source)
        except (re.error, FutureWarning):
            return None


def _coded(coded: re.Match[str], in_class: bool) -> str:
    """A character a pattern gives by its code (`\\u00e9`, `\\x41`, `\\x{e9}`), as a GBNF escape of it in a class of
    one outside a class (`[\\u00E9]`): the converter split such an escape under a quantifier (`\\u00e9+` as `\\u00e`
    and `9+`) or read it as letters (`\\x{e9}`), and llama.cpp refused the grammar, every sample failing
    GrammarRefused though the format check takes its answers; a code past Unicode's as it is."""
    code = int(next(digits for digits in coded.groups() if digits), 16)
    if code > MOST_CODE:
        return coded[0]
    text = f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"
    return text if in_class else f"[{text}]"


def _escape(named: str, in_class: bool) -> str:
    """The escape of `named` (`\\d`: `d`) as the converter is given it, inside a class or not."""
    chars = SHORTHANDS.get(named.lower())
    if chars is not None and named.islower():
        return chars if in_class else _string_class(f"[{chars}]", f"[{chars}]")
    if chars is not None and not in_class:
        return _string_class(f"[^{chars}]", f"[^{chars}]")
    if named.isascii() and not named.isalnum():
        return f"\\x{ord(named):02X}" if in_class else f"[\\x{ord(named):02X}]"
    return "\\" + named


def _outside(pattern: str, i: int) -> tuple[str, int] | None:
    """What stands at `i` outside a class where the converter misreads it, as it reads it, and where the pattern goes
    on; None for the rest. A `.` as one JSON string character (`JSON_DOT`: the converter's took a raw quote); a
    non-capturing or named group, which it refuses (`(?:`, `(?<name>`, `(?P<name>`: every
    sample failed GrammarRefused though the format check takes the answers), as a group; a `]`, `}` or `{` that is a
    character of its own (no class's end, no quantifier), on which it looped for ever (`[[:alpha:]]`, `^a]$`: the
    engine hung until the run's time limit, every resume so again), as a class of its code; a repetition's bounds as
    `_bounded` gives them."""
    char = pattern[i]
    if char == ".":
        return JSON_DOT, i + 1
    if char == "(" and (opening := GROUP_OPENING.match(pattern, i)) is not None:
        return "(", opening.end()
    if char == "{" and (quantifier := QUANTIFIER.match(pattern, i)) is not None:
        return _bounded(quantifier), quantifier.end()
    if char in "]{}":
        return f"[\\x{ord(char):02X}]", i + 1
    return None


def _bounded(quantifier: re.Match[str]) -> str:
    """A pattern's repetition (`{2,5}`) as the converter is given it: an upper bound `repeated` leaves out, left out
    (`{1,20000}` as `{1,}`: the converter nests one group a repetition, and llama.cpp refused the grammar past about
    1,000 and died of SIGSEGV parsing it past about 16,000, the engine's parse check with it)."""
    least, most = int(quantifier[1] or 0), quantifier[3]
    if not most or repeated(least, int(most)) is not None:
        return quantifier[0]
    return f"{{{least},}}"


JSON_DOT = _string_class("[^\\n]", "[^\\n]")
"""A pattern's `.` as the converter is given it: one JSON string character but a line break, raw or escaped."""
