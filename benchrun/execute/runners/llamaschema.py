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
QUANTIFIER = re.compile(r"\{(\d*)(,(\d*))?\}")
"""A repetition's bounds in a pattern (`{2}`, `{2,}`, `{,3}`, `{2,3}`)."""
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
CONTROL_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v"}
"""A regex's escapes of control characters, by the letter after the backslash."""
HEX_ESCAPE = re.compile(r"\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4}))")
"""A regex's escape of a character by its code (`\\x22`, `\\u000A`)."""
JSON_ESCAPED = ('"', "\\", *map(chr, range(0x20)))
"""The characters JSON writes escaped in a string."""
JSON_ESCAPES = {'"': '"', "\\": "\\\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
"""The characters JSON may write as a backslash and a letter or symbol, and that as a class's member in a pattern."""
MOST_REPEATED = 1000
"""The largest maxLength or maxItems a grammar holds: the converter writes a bound of N as N optional repetitions
nested in one another, which llama.cpp refuses past about 1,000 (`exceeds sane defaults`) and overflows its stack
parsing past about 16,000 (the engine died of SIGSEGV on a format of `Field(max_length=20000)`). A larger bound is
left to the format check, as is a pattern's (`_repeated`): the grammar holds the rest of the schema."""


def readable(schema: Any) -> Any:
    """`schema` as llama-cpp-python's converter reads it: a root that is a `$ref` (pydantic's schema of a recursive
    model) made the definition it names, for the converter resolves no `$ref` inside the definitions of a root that
    is one (a KeyError); each `pattern` anchored (`anchored`) and spelt out (`spelt_out`: the converter matches it
    against the answer's JSON text, so each character is given as JSON writes it); a maxLength or maxItems past
    MOST_REPEATED left out; a string constant the converter misreads (a quote, a backslash, a line break in it) as
    the pattern of its JSON text, and a property so named as an additional one."""
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
             if not (key in ("maxLength", "maxItems") and isinstance(value, int) and value > MOST_REPEATED)}
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
    given `.*`. Alternatives anchored apart (`^yes$|^no$`) are each so given, in one group (`^(yes|no)$`): the
    converter read their inner `$` and `^` as characters, and its rule as `"\\"yes$" | "^no\\""` (no answer JSON)."""
    alternatives = _alternatives(pattern)
    if len(alternatives) > 1 and any(_starts(each) or _ends(each) for each in alternatives):
        return "^(" + "|".join(_free_ends(each) for each in alternatives) + ")$"
    starts, ends = _starts(pattern), _ends(pattern)
    if starts and ends:
        return pattern
    return f"^{'' if starts else '.*'}({_core(pattern)}){'' if ends else '.*'}$"


def _starts(pattern: str) -> bool:
    return pattern.startswith("^")


def _ends(pattern: str) -> bool:
    """Whether `pattern` ends with a `$` of its own (no escaped one)."""
    return pattern.endswith("$") and (len(pattern) - len(pattern[:-1].rstrip("\\")) - 1) % 2 == 0


def _core(pattern: str) -> str:
    """`pattern` without its own anchors."""
    return pattern[1 if _starts(pattern) else 0:len(pattern) - 1 if _ends(pattern) else len(pattern)]


def _free_ends(alternative: str) -> str:
    """One alternative of a pattern without its anchors, `.*` at an end it leaves free."""
    return f"{'' if _starts(alternative) else '.*'}{_core(alternative)}{'' if _ends(alternative) else '.*'}"


def _alternatives(pattern: str) -> list[str]:
    """`pattern`'s alternatives at its top (outside any group or class)."""
    found, depth, in_class, begun, i = [], 0, False, 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 1
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth == 0:
            found.append(pattern[begun:i])
            begun = i + 1
        i += 1
    return [*found, pattern[begun:]]


def spelt_out(pattern: str) -> str:
    """`pattern` with each `\\d`, `\\w` and `\\s` (and, outside a class, `\\D`, `\\W` and `\\S`) as the class of the
    characters it stands for, and each escaped ASCII symbol (`\\.`) by its code in a class (`[\\x2E]`), which the
    converter passes on as a GBNF escape llama.cpp refuses too (and splits, outside a class); outside a class, what
    the converter misreads (`_outside`) as what it reads, and a character JSON escapes as its JSON text
    (`_json_text`); every other escape as it is."""
    out, in_class, i, begun, start = [], False, 0, 0, 0
    while i < len(pattern):
        char = pattern[i]
        meant, end = _meant(pattern, i) if char == "\\" and i + 1 < len(pattern) else (char, i + 1)
        if not in_class and meant is not None and _json_escaped(meant):
            out.append(_json_text(meant))
            i = end
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
    if (coded := HEX_ESCAPE.match(pattern, i)) is not None:
        return chr(int(coded[1] or coded[2], 16)), coded.end()
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
    return "[" + "".join(_coded(low) + ("" if low == high else "-" + _coded(high)) for low, high in spans) + "]"


def _coded(code: int) -> str:
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
    non-capturing group, which it refuses (`(?:`), as a group; a `]`, `}` or `{` that is a
    character of its own (no class's end, no quantifier), on which it looped for ever (`[[:alpha:]]`, `^a]$`: the
    engine hung until the run's time limit, every resume so again), as a class of its code."""
    char = pattern[i]
    if char == ".":
        return JSON_DOT, i + 1
    if char == "(" and pattern.startswith("?:", i + 1):
        return "(", i + 3
    if char == "{" and (quantifier := QUANTIFIER.match(pattern, i)) is not None:
        return _repeated(quantifier), quantifier.end()
    if char in "]{}":
        return f"[\\x{ord(char):02X}]", i + 1
    return None


def _repeated(quantifier: re.Match[str]) -> str:
    """A pattern's quantifier as the converter is given it: a most past MOST_REPEATED as none (`{2,20000}` as `{2,}`),
    the bound left to the format check, as a maxLength's is (the engine died of SIGSEGV parsing `^[a-z]{1,20000}$`)."""
    least, most = quantifier[1], quantifier[3]
    if not most or int(most) <= MOST_REPEATED:
        return quantifier[0]
    return f"{{{least or 0},}}"


JSON_DOT = _string_class("[^\\n]", "[^\\n]")
"""A pattern's `.` as the converter is given it: one JSON string character but a line break, raw or escaped."""
