"""Deterministic model answers for the shipped benchmarks, as responders for the fake servers, and what a run of
listbench so answered sums up to."""

from __future__ import annotations

import json
import re

from benchrun.execute.runners.openai import PROBE_PROMPT
from benchrun.testing.chat import default_responder
from benchrun.testing.lab import half_right
from benchrun.testing.ollama_server import ChatRequest, Reply

SYMBOLS = {"@": {"answer": "at"}, "$": {"answer": "dollar"}, "#": {"answer": "hash or pound"}}
DIRECTIONS = {"^": {"name": "carat", "direction": "up"}, "<": {"name": "less", "direction": "right"},
              ">": {"name": "greater than", "direction": "right"}}
SUMS = {(2, 3): "5", (4, 5): "9", (8, 9): "16"}


def listbench_answer(req: ChatRequest) -> Reply | str:
    """product: (3,4) wrong; product_combination: (5,5) wrong, 'add' when a == 2; symbols and directions above."""
    if m := re.fullmatch(r"find the product of (\d+) and (\d+)", req.prompt):
        a, b = int(m[1]), int(m[2])
        if "justification" in req.format["properties"]:
            answer = 24 if (a, b) == (5, 5) else a * b
            return json.dumps({"answer": answer, "justification": "add a to itself b times" if a == 2 else "times"})
        return json.dumps({"answer": 11 if (a, b) == (3, 4) else a * b})
    if m := re.fullmatch(r"what is the name for the following symbol\? (.)", req.prompt):
        return json.dumps(SYMBOLS[m[1]])
    if m := re.fullmatch(r"what direction does the (.) symbol point\? and what is its name ", req.prompt):
        return json.dumps(DIRECTIONS[m[1]])
    if m := re.fullmatch(r"what is (\d+) \+ (\d+)\?", req.prompt):
        return json.dumps({"answer": SUMS[int(m[1]), int(m[2])]})
    if req.prompt == PROBE_PROMPT:  # runner=openai's structured-output probe
        return default_responder(req)
    return Reply(status=400, error=f"unexpected prompt {req.prompt!r}")


THIRD, SIXTH, NINTH = 1 / 3, 1 / 6, 1 / 9
LISTBENCH_SUMMARY = {
    ("product", "calculated_answer"): (3, 2 / 3, THIRD, 0),
    ("product", "format_valid"): (3, 1.0, 0.0, 0),
    ("product_combination", "add_justify"): (9, THIRD, SIXTH, 0),
    ("product_combination", "calculated_answer"): (9, 8 / 9, NINTH, 0),
    ("product_combination", "format_valid"): (9, 1.0, 0.0, 0),
    ("symbol", "contains"): (3, 2 / 3, THIRD, 0),
    ("symbol", "format_valid"): (3, 1.0, 0.0, 0),
    ("symbol_dir", "check_name_dir.direction"): (3, 2 / 3, THIRD, 0),
    ("symbol_dir", "check_name_dir.name"): (3, 2 / 3, THIRD, 0),
    ("symbol_dir", "format_valid"): (3, 1.0, 0.0, 0),
}
"""summary.json of a listbench run answered by listbench_answer: (task, metric) -> (n, mean, stderr, errors)."""


def broken_answer(req: ChatRequest) -> Reply | str:
    """listbench_answer, except: product (2,3) not JSON, product (5,5) HTTP 503, symbol_dir '<' not JSON."""
    if req.prompt == "find the product of 2 and 3":
        return "the answer is 6"
    if req.prompt == "find the product of 5 and 5":
        return Reply(status=503, error="server busy")
    if req.prompt.startswith("what direction does the < symbol"):
        return "not json"
    return listbench_answer(req)


BROKEN = ("task.only=[product,symbol_dir]", "runner.retries=0")
"""The overrides of a run with broken_answer: every kind of failure in six samples."""


def odd_one(odd: Reply | str):
    """`odd` for the sample of a = 3, half_right's answers for the others."""
    def answer(req: ChatRequest) -> Reply | str:
        return odd if req.prompt.split()[4:5] == ["3"] else half_right(req)
    return answer


SAY_A = '- {name: t, template: "say {a}", values: {a: [1, 2]}, reference: ["1", "2"]}\n'
"""Two samples, `say 1` and `say 2`, their references `1` and `2`."""


def one_request_fails(request: ChatRequest) -> str | Reply:
    """`say 1`'s second repeat fails (HTTP 500); every other answer is right."""
    prompt = request.messages[-1]["content"]
    return Reply(status=500) if (prompt, request.options["seed"]) == ("say 1", 1) else prompt.split()[-1]
