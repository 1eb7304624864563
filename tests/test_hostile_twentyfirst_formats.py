"""The twenty-first hostile pass, response formats as the format check reads them: where the class the user wrote
(pydantic) and the archive's format check (the format's JSON schema) judge an answer apart.

- A pattern the two regex engines read apart (a class within a class, `[[:alpha:]]`; a set operation, `[a--b]`; the
  flag `s` before a `.`) is refused at compile, naming the file, task, format and field: every right answer was
  format-invalid, with no error (`compiler.patterns`, used by `compiler.plan.format_spec`); and a quantifier after
  a quantifier (`a{2}{3}`: six `a` to pydantic, `aa{3}` to the format check; `a{2}+` possessive to the check).
- A `format` keyword pydantic writes for a type it checks (`date-time` of a `datetime` field, `uuid`, `uri`, ...) is
  asserted by the format check as pydantic reads that type: `"nope"` for a `datetime` was format_valid 1
  (`execute.formatwords`, used by `execute.formatcheck.FormatCheck`).
- An answer whose JSON escapes make half a surrogate pair (`{"answer": "\\ud800"}`), which pydantic refuses, is
  format-invalid: it was format_valid 1, read as U+FFFD (`execute.formatcheck.FormatCheck.problem`).
- A pattern pydantic and the format check both read (`\\p{L}`, `\\x{e9}`, `\\u{e9}`, `\\z`) but Python's `re` does
  not is compiled: it was refused as "not a JSON Schema ... let pydantic make it from the class's fields", pydantic
  having made it (`compiler.patterns.regex_read`, the `regex` format of `compiler.plan._a_json_schema`).
"""

from __future__ import annotations

import contextlib
import json

import pytest
import yaml

from benchrun.compiler.formats import StringAnswer
from benchrun.compiler.patterns import patterns_in, read_apart
from benchrun.core.errors import EXIT
from benchrun.execute.formatcheck import FormatCheck
from benchrun.testing.ollama_server import ChatRequest
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import make_run, run_benchrun


def _patterns(**formats: str) -> str:
    """A custom_response.py of one class a format, its `answer` a string of the pattern given."""
    classes = "".join(f'\n\nclass {name}(BaseModel):\n    answer: str = Field(pattern=r"{pattern}")\n'
                      for name, pattern in formats.items())
    return f"from pydantic import BaseModel, Field\n{classes}"


READ_APART = _patterns(Word=r"^[[:alpha:]]+$")


def _task(name: str, fmt: str, **keys) -> dict:
    return {"name": name, "template": "Say {a}.", "values": {"a": ["abc", "de"]}, "reference": ["abc", "de"],
            "scorer": "exact_match", "format": fmt, **keys}


@pytest.mark.slow
def test_a_pattern_pydantic_and_the_format_check_read_apart_is_refused_at_compile(tmp_path):
    """Before: compiled and run; pydantic takes `abc`, the format check refused it (`'abc' does not match
    '^[[:alpha:]]+$'`): every right answer format_valid 0."""
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump([_task("word", "Word")]), "custom_response.py": READ_APART})
    done = run_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert done.returncode == EXIT["usage"]
    assert done.stderr == (
        "benchrun: error: in 'custom_response.py': task 'word': format 'Word': field 'answer': its pattern "
        "'^[[:alpha:]]+$' holds a class within a class ([[...), which pydantic reads as a class (a POSIX class such "
        "as [:alpha:], a nested one) and the format check as the character '[' and what follows; write its "
        "characters out ([a-zA-Z]), or escape the '[' as \\[\n")


@pytest.mark.parametrize(("pattern", "apart"), [
    (r"^[a-c[x-z]]$", "a class within a class ([a-c[...)"), (r"^[^[:alpha:]]$", "a class within a class ([^[...)"),
    (r"^[a-z&&[^aeiou]]+$", "'&&' within a class ([a-z&&...)"), (r"^[\w--\d]+$", "'--' within a class ([\\w--...)"),
    (r"^[~~a]$", "'~~' within a class ([~~...)"), (r"(?s)^a.b$", "the flag 's' ((?s)) before a '.'"),
    (r"^(?is:a.)$", "the flag 's' ((?is:) before a '.'"),
    (r"^a{2}{3}$", "a quantifier after a quantifier ({2}{3})"), (r"^a+{2}$", "a quantifier after a quantifier (+{2})"),
    (r"^a{2}+$", "a quantifier after a quantifier ({2}+)"), (r"^a+?{2}$", "a quantifier after a quantifier (+?{2})"),
    (r"^((?s)a.)$", "the flag 's' ((?s)) before a '.'"), (r"^(?s:a)b.$", None), (r"^((?s)a).$", None),
    (r"(?s)^a(?-s).$", None), (r"^a{2}?$", None), (r"^a+?$", None), (r"^(a{2}){3}$", None), (r"^a\{2}{3}$", None),
    (r"^[0-9]+$", None), (r"^[\[\]]+$", None), (r"^[]a]+$", None), (r"^[^]a]$", None), (r"^[a-z-]+$", None),
    (r"(?s)^a\.b$", None), (r"(?i-s)^a.b$", None), (r"^[\s\S]$", None), (r"^(?P<n>[0-9]+)$", None)])
def test_what_the_two_regex_readers_read_apart_is_named(pattern, apart):
    found = read_apart(pattern)
    assert (found.split(", which")[0].split(", a set")[0] if found else None) == apart


def test_every_regex_of_a_format_is_found_with_its_field():
    schema = {"properties": {"answer": {"type": "array", "items": {"$ref": "#/$defs/In"}},
                             "tags": {"patternProperties": {"^[[:alpha:]]$": {}}, "default": {"pattern": "[[x]"}}},
              "$defs": {"In": {"properties": {"name": {"pattern": "^a$", "examples": [{"pattern": "[[y]"}]}}}}}
    assert sorted(patterns_in(schema)) == [("In.name", "^a$"), ("tags", "^[[:alpha:]]$")]


TYPED = '''import datetime

from pydantic import BaseModel


class When(BaseModel):
    answer: datetime.datetime
'''


def _echo(req: ChatRequest) -> str:
    """The prompt's value as the answer: `Say 2024-01-01T10:00:00.` answered `{"answer": "2024-01-01T10:00:00"}`."""
    return json.dumps({"answer": req.prompt.removeprefix("Say ").removesuffix(".")})


def test_an_answer_its_classs_type_refuses_is_format_invalid(tmp_path):
    """Before: format_valid [1, 1, 1]: `nope` for a `datetime` field taken, the `format` keyword unasserted."""
    task = {**_task("when", "When"), "values": {"a": ["2024-01-01T10:00:00", "2024-01-01T10:00:00Z", "nope"]},
            "reference": ["x", "y", "z"]}
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump([task]), "custom_response.py": TYPED})
    run = make_run(tmp_path, "task.path=bench", responder=_echo)
    valid = [s for s in read_jsonl(run / "scores.jsonl") if s["scorer"] == "format_valid"]
    assert [(s["metrics"]["format_valid"], s["detail"]) for s in valid] == [
        (1, None), (1, None), (0, "answer: \"nope\" is not a 'date-time'")]


@pytest.mark.parametrize(("schema", "answers"), [
    ({"format": "date"}, {"2024-02-29": True, "2023-02-29": False, "yesterday": False}),
    ({"format": "time"}, {"10:00:00": True, "25:00": False}),
    ({"format": "duration"}, {"P1D": True, "PT1H30M": True, "one day": False}),
    ({"format": "uuid"}, {"12345678-1234-5678-1234-567812345678": True, "12345678123456781234567812345678": True,
                          "zz": False}),
    ({"format": "uri"}, {"https://example.org/a": True, "not a url": False}),
    ({"format": "ipv4"}, {"10.0.0.1": True, "10.0.0.256": False}),
    ({"format": "email"}, {"nope": True}), ({"format": "hostname"}, {"-": True}), ({"format": "mine"}, {"x": True}),
    ({"format": "date-time", "type": ["string", "integer"]}, {"5": True})])
def test_a_format_keyword_is_read_as_pydantic_reads_its_type(schema, answers):
    check = FormatCheck({"properties": {"answer": schema}})
    assert {answer: check.data_problem({"answer": json.loads(answer) if answer == "5" else answer}) is None
            for answer in answers} == answers


@pytest.mark.parametrize(("text", "problem"), [
    (r'{"answer": "\ud800"}', "invalid JSON: \\ud800 is half of a UTF-16 surrogate pair, not a character"),
    (r'{"answer": "a", "\udc00": 1}', "invalid JSON: \\udc00 is half of a UTF-16 surrogate pair, not a character"),
    (r'{"answer": "\ud83d\ude00"}', None), (r'{"answer": "\\ud800"}', None), ('{"answer": "\ufffd"}', None)])
def test_an_answer_escaping_half_a_surrogate_pair_is_format_invalid(text, problem):
    """Before: None for the first two (the half read as U+FFFD), where pydantic refuses the answer."""
    assert FormatCheck(StringAnswer.model_json_schema()).problem(text) == problem
    with pytest.raises(ValueError) if problem else contextlib.nullcontext():
        StringAnswer.model_validate_json(text)


LETTERS = _patterns(Letters=r"^\p{L}+\z", Coded=r"^(\x{e9}|\u{e8}|[a-z])+$")


def test_a_pattern_both_readers_read_is_compiled_whatever_pythons_re_says(tmp_path):
    """Before: `in 'custom_response.py': format 'Letters': its JSON schema is not a JSON Schema ('^\\\\p{L}+\\\\z' is
    not a 'regex', at properties/answer/pattern); let pydantic make it from the class's fields` (exit 2)."""
    tasks = [{**_task(name, name), "values": {"a": ["\u00e9t\u00e9", "abc", "a1"]}, "reference": ["x", "y", "z"]}
             for name in ("Letters", "Coded")]
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump(tasks), "custom_response.py": LETTERS})
    run = make_run(tmp_path, "task.path=bench", responder=_echo)
    valid = [(s["id"], s["metrics"]["format_valid"]) for s in read_jsonl(run / "scores.jsonl")
             if s["scorer"] == "format_valid"]
    assert [v for _, v in valid] == [1, 1, 0, 1, 1, 0]
