"""An oracle for the shipped benchmarks: the right answer to each prompt of listbench and folderbench (and any
`find the product of A and B` or `what is A + B?`, `A - B`, `A * B`), in the response class asked for; `wrong` answers
each wrongly; `demo` is the oracle with one weak model (mistral: every product or sum above 10 off by one), and
`seeded` the demo with answers that vary with the request's seed.

The loopback servers answer with `demo` from the command line, so the README's commands show what a new user sees,
and comparing a model with the weak one has something to show."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping
from typing import Any

from benchrun.testing.chat import ChatRequest, Reply, Responder, default_responder

SYMBOLS = {"@": "at", "$": "dollar sign", "#": "pound"}
DIRECTIONS = {"^": ("carat", "up"), "<": ("less", "left"), ">": ("greater", "right")}
_PRODUCT = re.compile(r"find the product of (-?\d+) and (-?\d+)")
_ARITHMETIC = re.compile(r"what is (-?\d+) ([-+*]) (-?\d+)\?")
_OPERATIONS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
_SYMBOL = re.compile(r"what is the name for the following symbol\? (.)")
_DIRECTION = re.compile(r"what direction does the (.) symbol point\? and what is its name ")
_RUBRIC = re.compile(r"^Answer: (?P<answer>.*)$.*^Reference: (?P<reference>.*)$", re.M | re.S)
"""A judge's rubric as the README's example words it, rendered by rendering 1: the answer and the reference on lines
of their own."""
_FENCED = re.compile(r"^(?P<fence>`{3,})(?P<label>\w+)\n(?P<text>.*?)\n(?P=fence)$", re.M | re.S)
"""A field of a rubric rendered by rendering 2 (`core.rubric.fenced`): its text in a fence labelled by its name."""


WEAK_MODEL = "mistral"
"""The model that, in `demo`, gets every product or sum above WEAK_LIMIT wrong."""
WEAK_LIMIT = 10


def answers(args: argparse.Namespace) -> Responder:
    """The responder a fake server's command line asks for: `wrong` with --wrong, `seeded` with --by-seed, else
    `demo`."""
    return wrong if args.wrong else seeded if args.by_seed else demo


def seeded(req: ChatRequest) -> Reply | str:
    """The demo's answer, but every answer wrong when the request's seed is one more than a multiple of 3 (so
    repeats with seeds 0, 1, 2 get 2 of 3 right): a server whose answers vary with the seed."""
    seed = req.options.get("seed", 0)
    return _answer(req, wrong=isinstance(seed, int) and seed % 3 == 1, weak=req.model.split(":")[0] == WEAK_MODEL)


def demo(req: ChatRequest) -> Reply | str:
    """The oracle's answer, except that WEAK_MODEL is off by one on every product or sum above WEAK_LIMIT."""
    return _answer(req, wrong=False, weak=req.model.split(":")[0] == WEAK_MODEL)


def oracle(req: ChatRequest) -> Reply | str:
    """The right answer, as JSON of the requested format (a justification that says how, when one is asked)."""
    return _answer(req, wrong=False)


def wrong(req: ChatRequest) -> Reply | str:
    """A wrong answer of the right shape to every question the oracle knows."""
    return _answer(req, wrong=True)


def _answer(req: ChatRequest, wrong: bool, weak: bool = False) -> Reply | str:
    fields = _properties(req.format)
    if graded := judged(req.prompt):
        named = (graded[1].split() or [""])[0].casefold() in graded[0].casefold()
        return verdict(req, named is not wrong)
    if m := _PRODUCT.fullmatch(req.prompt):
        a, b = int(m[1]), int(m[2])
        off = wrong or (weak and a * b > WEAK_LIMIT)
        return _json(fields, a * b + off, "a guess" if off else f"add {a} to itself {b} times")
    if m := _ARITHMETIC.fullmatch(req.prompt):
        value = _OPERATIONS[m[2]](int(m[1]), int(m[3]))
        return _json(fields, value + (wrong or (weak and value > WEAK_LIMIT)), "count on from the first")
    if m := _SYMBOL.fullmatch(req.prompt):
        return _json(fields, "no idea" if wrong else SYMBOLS.get(m[1], "unknown"), "")
    if m := _DIRECTION.fullmatch(req.prompt):
        name, direction = DIRECTIONS.get(m[1], ("unknown", "up"))
        return json.dumps({"name": "arrow" if wrong else name, "direction": "left" if wrong and direction != "left"
                           else "right" if wrong else direction})
    return default_responder(req)


def fenced_fields(prompt: str) -> dict[str, str]:
    """The fields of a rubric rendered by rendering 2, by name: each fenced block's text."""
    return {m["label"]: m["text"] for m in _FENCED.finditer(prompt)}


def judged(prompt: str) -> tuple[str, str] | None:
    """(answer, reference) of a judge's rubric as the README's example words it, by either rendering; None for
    another prompt."""
    fields = fenced_fields(prompt)
    if "response" in fields and "reference" in fields:
        return fields["response"], fields["reference"]
    m = _RUBRIC.search(prompt)
    return (m["answer"], m["reference"]) if m else None


def verdict(req: ChatRequest, right: bool) -> str:
    """A judge's reply in the format asked: its first field `right`/`wrong` (an Enum that has them), true/false (a
    bool), 1/0 (a number), or the Enum's first or last value."""
    schema = req.format if isinstance(req.format, Mapping) else {}
    field, prop = next(iter(_properties(schema).items()), ("verdict", {}))
    if "$ref" in prop:
        prop = schema.get("$defs", {}).get(prop["$ref"].rsplit("/", 1)[-1], {})
    values = prop.get("enum")
    if values:
        grade = ("right" if right else "wrong") if {"right", "wrong"} <= set(values) else values[0 if right else -1]
    else:
        grade = right if prop.get("type") == "boolean" else int(right)
    return json.dumps({field: grade})


def _properties(schema: Any) -> dict[str, Any]:
    return dict(schema.get("properties", {})) if isinstance(schema, Mapping) else {}


def _json(fields: dict[str, Any], answer: Any, justification: str) -> str:
    """`{"answer": ...}`, with the justification when the format has one; a string answer when it wants one."""
    wants_text = fields.get("answer", {}).get("type") == "string"
    body: dict[str, Any] = {"answer": str(answer) if wants_text else answer}
    if "justification" in fields:
        body["justification"] = justification
    return json.dumps(body)
