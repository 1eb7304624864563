"""A format's JSON schema as the grammar the embedded engine generates with (in the engine's process): made by
llama-cpp-python's converter from the schema in a form it reads, and parsed by llama.cpp before any generation uses
it. The converter writes a pattern's `\\d` as the GBNF escape `"\\d"`, which llama.cpp's parser refuses, and
llama-cpp-python then adds no grammar to its sampler chain but a null one: the engine died of SIGSEGV on the first
answer to a format of `Field(pattern=r"^\\d+$")`, and every resume died so again. A schema whose grammar cannot be
made or parsed is each of its samples' own failure (`GrammarRefused`): the format is the manifest's and the engine's
converter its build's, which no resume may change."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Callable

from benchrun.core.text import one_line

SHORTHANDS = {"d": "0-9", "w": "0-9A-Za-z_", "s": " \\t\\n\\r\\x0B\\x0C"}
"""A regex's class shorthands as the characters they stand for (ASCII's: a grammar that allows fewer characters than
the format's pattern still makes answers the pattern takes), which the converter would pass on as escapes."""
MOST_REPEATED = 1000
"""The largest maxLength or maxItems a grammar holds: the converter writes a bound of N as N optional repetitions
nested in one another, which llama.cpp refuses past about 1,000 (`exceeds sane defaults`) and overflows its stack
parsing past about 16,000 (the engine died of SIGSEGV on a format of `Field(max_length=20000)`). A larger bound is
left to the format check: the grammar holds the rest of the schema."""
PARSE_ERROR = "error parsing grammar"
"""What llama.cpp prints when it cannot parse a grammar."""


class GrammarRefused(ValueError):
    """A format's JSON schema the engine cannot make a grammar of (llama-cpp-python's converter refuses it, or
    llama.cpp cannot parse what the converter made): no setup mends it."""


def readable(schema: Any) -> Any:
    """`schema` as llama-cpp-python's converter reads it: a root that is a `$ref` (pydantic's schema of a recursive
    model) made the definition it names, for the converter resolves no `$ref` inside the definitions of a root that
    is one (a KeyError); each `pattern`'s class shorthands spelt out (`\\d` as `[0-9]`); and a maxLength or maxItems
    past MOST_REPEATED left out."""
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
    if isinstance(schema, list):
        return [_held(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    found = {key: _held(value) for key, value in schema.items()
             if not (key in ("maxLength", "maxItems") and isinstance(value, int) and value > MOST_REPEATED)}
    if isinstance(found.get("pattern"), str):
        found["pattern"] = spelt_out(found["pattern"])
    return found


def spelt_out(pattern: str) -> str:
    """`pattern` with each `\\d`, `\\w` and `\\s` (and, outside a class, `\\D`, `\\W` and `\\S`) as the class of the
    characters it stands for, and each escaped ASCII symbol (`\\.`) by its code in a class (`[\\x2E]`), which the
    converter passes on as a GBNF escape llama.cpp refuses too (and splits, outside a class); every other escape as
    it is."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            named = pattern[i + 1]
            chars = SHORTHANDS.get(named.lower())
            if chars is not None and named.islower():
                out.append(chars if in_class else f"[{chars}]")
            elif chars is not None and not in_class:
                out.append(f"[^{chars}]")
            elif named.isascii() and not named.isalnum():
                out.append(f"\\x{ord(named):02X}" if in_class else f"[\\x{ord(named):02X}]")
            else:
                out.append(char + named)
            i += 2
            continue
        in_class = (char == "[") or (in_class and char != "]")
        out.append(char)
        i += 1
    return "".join(out)


class Grammars:
    """The grammar of each format's schema, made once; GrammarRefused for one that cannot be made or parsed."""

    def __init__(self, llama_cpp: Any, llm: Any):
        self.llama_cpp, self.llm = llama_cpp, llm
        self._made: dict[str, Any] = {}

    def __call__(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._made:
            self._made[key] = self._make(schema)
        if isinstance(made := self._made[key], GrammarRefused):
            raise made
        return made

    def _make(self, schema: dict[str, Any]) -> Any:
        try:
            text = self.llama_cpp.llama_grammar.json_schema_to_gbnf(json.dumps(readable(schema), sort_keys=True))
        except Exception as err:  # the converter's own refusal: an unanchored pattern, a lookahead, `not`, ...
            return GrammarRefused(f"the embedded engine cannot hold answers to this format's JSON schema: "
                                  f"llama-cpp-python makes no grammar of it ({type(err).__name__}: {one_line(str(err), 300)})")
        said = _printed(lambda: self._parses(text))
        if said is not None:
            return GrammarRefused("the embedded engine cannot hold answers to this format's JSON schema: llama.cpp "
                                  f"cannot parse the grammar llama-cpp-python makes of it ({said})")
        return self.llama_cpp.LlamaGrammar.from_string(text, verbose=False)

    def _parses(self, text: str) -> bool:
        """Whether llama.cpp parses the grammar `text` (a sampler made of it, then freed)."""
        llama_cpp = self.llama_cpp
        vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        root = llama_cpp.llama_grammar.LLAMA_GRAMMAR_DEFAULT_ROOT
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode(), root.encode())
        if not sampler:
            return False
        llama_cpp.llama_sampler_free(sampler)
        return True


def _printed(parses: Callable[[], bool]) -> str | None:
    """None when `parses()`; else what llama.cpp printed of why (on file descriptor 2, caught meanwhile)."""
    with tempfile.TemporaryFile() as caught:
        kept = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            ok = parses()
        finally:
            os.dup2(kept, 2)
            os.close(kept)
        if ok:
            return None
        caught.seek(0)
        text = caught.read(4096).decode("utf-8", "replace")
    line = next((line for line in text.splitlines() if PARSE_ERROR in line), "")
    return one_line(line[line.find(PARSE_ERROR):], 300) or "it printed no reason"
