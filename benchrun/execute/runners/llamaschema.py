"""A JSON schema as llama-cpp-python's grammar converter reads it (`readable`): the converter of the embedded
engine's grammars (`local_grammar`) and of llama-cpp-python's OpenAI-compatible server, which takes a schema with
`response_format: json_object` (`openai.response_format`). What it makes of some schemas llama.cpp cannot parse,
and llama-cpp-python then samples with a null grammar: the process dies of SIGSEGV (the embedded engine; the server,
whose every later request of the run is lost with it). Each form given here holds answers to the same schema."""

from __future__ import annotations

import re
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
    (`anchored`); and a bound past what a grammar holds (`BOUNDS_HELD`) left out."""
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
        found["pattern"] = anchored(spelt_out(found["pattern"]))
    if found and found.keys() <= ANNOTATIONS:
        return {}  # any value, as the converter reads only an empty schema
    return found


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
    gives it; every other escape as it is."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and (coded := CODED.match(pattern, i)) is not None:
            out.append(_coded(coded, in_class))
            i = coded.end()
        elif char == "\\" and i + 1 < len(pattern):
            out.append(_escape(pattern[i + 1], in_class))
            i += 2
        elif not in_class and (taken := _outside(pattern, i)) is not None:
            text, i = taken
            out.append(text)
        else:
            in_class = (char == "[") or (in_class and char != "]")
            out.append(char)
            i += 1
    return "".join(out)


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
        return chars if in_class else f"[{chars}]"
    if chars is not None and not in_class:
        return f"[^{chars}]"
    if named.isascii() and not named.isalnum():
        return f"\\x{ord(named):02X}" if in_class else f"[\\x{ord(named):02X}]"
    return "\\" + named


def _outside(pattern: str, i: int) -> tuple[str, int] | None:
    """What stands at `i` outside a class where the converter misreads it, as it reads it, and where the pattern goes
    on; None for the rest. A non-capturing or named group, which it refuses (`(?:`, `(?<name>`, `(?P<name>`: every
    sample failed GrammarRefused though the format check takes the answers), as a group; a `]`, `}` or `{` that is a
    character of its own (no class's end, no quantifier), on which it looped for ever (`[[:alpha:]]`, `^a]$`: the
    engine hung until the run's time limit, every resume so again), as a class of its code; a repetition's bounds as
    `_bounded` gives them."""
    char = pattern[i]
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
