"""A judge's rubric rendered for one answer, by the rendering its manifest records (`JudgeSpec.render`). Rendering 1
(every manifest before 2, which names none) puts each field's text in as it is: an answer holding `Grade: A` or a
line `user: ...` read as the rubric's own words. Rendering 2 puts each field's text in a fenced block of its own
lines that the text cannot close (`fenced`): the rubric's own words are the only words outside a fence."""

from __future__ import annotations

import json
import re
import string
from typing import Any, Mapping

from benchrun.core.manifest import JudgeSpec, Message, Sample

FENCE_CHAR = "`"
_RUNS = re.compile(f"{FENCE_CHAR}+")


def rubric_chat(spec: JudgeSpec, sample: Sample, response: str, asked: list[Message]) -> list[Message]:
    """What the judge model is asked about `response` to `sample` (which was `asked` as this chat): its rubric,
    rendered by the judge's rendering."""
    reference = "" if sample.reference is None else sample.reference
    text = reference if isinstance(reference, str) else json.dumps(reference, ensure_ascii=False)
    fields = {**sample.values, "prompt": sample.prompt, "response": response, "reference": text}
    if spec.render is None:
        chat = "\n\n".join(f"{turn['role']}: {turn['content']}" for turn in asked)
        return [{"role": "user", "content": spec.rubric.format_map({**fields, "chat": chat})}]
    return [{"role": "user", "content": fenced_rubric(spec.rubric, fields, asked)}]


def fenced(text: str, label: str = "") -> str:
    """`text` as a CommonMark fenced code block (`label` its info string): its fence of backticks is longer than any
    run of backticks in the text, so no line of the text closes it."""
    fence = FENCE_CHAR * max(3, 1 + max((len(run) for run in _RUNS.findall(text)), default=0))
    return f"{fence}{label}\n{text}\n{fence}"


def fenced_chat(asked: list[Message], conversion: str | None) -> str:
    """The chat as rendering 2 shows it: each turn its role on a line, then its text fenced, a blank line between."""
    return "\n\n".join(f"{turn['role']}:\n{fenced(_converted(turn['content'], conversion))}" for turn in asked)


def fenced_rubric(rubric: str, fields: Mapping[str, Any], asked: list[Message]) -> str:
    """`rubric` (a str.format template, checked at compile) with each field a fenced block on lines of its own: a
    field written inside a line (`Answer: {response}`) starts its block on the next line, and the text after it
    resumes on the line after the block."""
    out: list[str] = []
    after_block = False
    for literal, name, _, conversion in string.Formatter().parse(rubric):
        if literal:
            out.append("\n" + literal if after_block and not literal.startswith("\n") else literal)
            after_block = False
        if name is None:
            continue
        if out and not out[-1].endswith("\n"):
            out.append("\n")
        out.append(fenced_chat(asked, conversion) if name == "chat" else
                   fenced(_converted(fields[name], conversion), name))
        after_block = True
    return "".join(out)


def _converted(value: Any, conversion: str | None) -> str:
    """A field's text as str.format writes it with its conversion (`!r`, `!s` or none)."""
    return repr(value) if conversion == "r" else str(value)


_OPENING = re.compile(r" {0,3}(`{3,}(?!.*`)|~{3,})")
"""A line opening a fenced block, as CommonMark reads one (a backtick fence's info string holds no backtick)."""


def field_in_fence(rubric: str) -> tuple[str, int] | None:
    """The first field (name, line number) that `rubric` writes inside a fenced block it opens itself: rendering 2
    fences the field's text in a fence the text cannot close, but the text can close the rubric's fence (a line of
    its backticks), and what follows would read as the rubric's words. None when no field is."""
    parsed = list(string.Formatter().parse(rubric))
    names = [name for _, name, _, _ in parsed if name is not None]
    marked = "".join(literal + "\0" * (name is not None) for literal, name, _, _ in parsed)
    fence, seen = "", 0
    for number, line in enumerate(marked.split("\n"), start=1):
        if not fence and (opening := _OPENING.match(line)):
            fence, line = opening[1], line[opening.end():]
        elif fence and set(line.strip()) == {fence[0]} and len(line.strip()) >= len(fence):
            fence = ""
        if fence and "\0" in line:
            return names[seen], number
        seen += line.count("\0")
    return None
