"""A format's JSON schema as the grammar the embedded engine generates with (in the engine's process): made by
llama-cpp-python's converter from the schema in a form it reads (`llamaschema.readable`), and parsed by llama.cpp
before any generation uses it: llama-cpp-python adds a grammar llama.cpp cannot parse to its sampler chain as a null
sampler, and the engine died of SIGSEGV on the first answer (a format of `Field(pattern=r"^\\d+$")` before it was
readable), every resume so again. A schema whose grammar cannot be made or parsed is each of its samples' own
failure (`GrammarRefused`): the format is the manifest's and the engine's converter its build's, which no resume may
change."""

from __future__ import annotations

import json
import tempfile
from typing import Any, Callable

from benchrun.core.stdfds import output_fds_into
from benchrun.core.text import one_line
from benchrun.execute.runners.llamaschema import readable

PARSE_ERROR = "error parsing grammar"
"""What llama.cpp prints when it cannot parse a grammar."""


class GrammarRefused(ValueError):
    """A format's JSON schema the engine cannot make a grammar of (llama-cpp-python's converter refuses it, or
    llama.cpp cannot parse what the converter made): no setup mends it."""


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
        vocab_of = getattr(llama_cpp, "llama_model_get_vocab", None)  # a model's own before llama.cpp's 2025 split
        vocab = vocab_of(self.llm.model) if vocab_of is not None else self.llm.model
        root = getattr(llama_cpp.llama_grammar, "LLAMA_GRAMMAR_DEFAULT_ROOT", "root")  # the converter's first rule
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode(), root.encode())
        if not sampler:
            return False
        llama_cpp.llama_sampler_free(sampler)
        return True


def _printed(parses: Callable[[], bool]) -> str | None:
    """None when `parses()`; else what llama.cpp printed of why (on file descriptor 2, caught meanwhile)."""
    with tempfile.TemporaryFile() as caught:
        with output_fds_into(caught):
            ok = parses()
        if ok:
            return None
        caught.seek(0)
        text = caught.read(4096).decode("utf-8", "replace")
    line = next((line for line in text.splitlines() if PARSE_ERROR in line), "")
    return one_line(line[line.find(PARSE_ERROR):], 300) or "it printed no reason"
