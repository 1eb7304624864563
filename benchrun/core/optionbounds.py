"""The bounds of each runner option whose meaning to Ollama (api.Options, docs/api.md, its Modelfile's table of
parameters, passing most on to llama.cpp) has them: a count's least value, a probability's 0 to 1.

Past them a value means nothing of its own: Ollama sends a negative context's size on to its engine (`-c -5`), takes
a batch or a thread count below one silently for its default, reads top_k below 0 as 0, and a top_p or min_p past 1
as no cut at all, and a temperature below 0 as 0 (its engine clamps it; llama.cpp's takes the likeliest token for
any of 0 or less); each run then asks otherwise than its manifest says. Its own special values are kept (num_predict
-1: no limit, -2: until the context is full).

runner=local's llama.cpp (llama-cpp-python) reads otherwise: any num_predict of 0 or less alike (until the context is
full), and a temperature below 0 as the model's own chances, top_k, top_p and min_p unread (`LOCAL`)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationInfo, field_validator

LEAST = {"num_ctx": (0, "is no context's size (0 is the model's own)"),
         "num_predict": (-2, "is no count of tokens to predict (-1 is no limit, -2 until the context is full)"),
         "num_batch": (1, "is no batch's size (a batch holds one token at least)"),
         "num_thread": (0, "is no count of threads (0 lets the server choose)"),
         "num_gpu": (-1, "is no count of layers to put on a GPU (-1 lets the server choose, 0 puts none)"),
         "num_keep": (-1, "is no count of the prompt's tokens to keep (-1 keeps them all)"),
         "top_k": (0, "is no count of the likeliest tokens to sample from (0 takes them all)"),
         "repeat_last_n": (-1, "is no count of tokens to look back over (-1 is the whole context, 0 none)"),
         "temperature": (0, "is no temperature of its own: Ollama and llama.cpp's server read any below 0 as 0 "
                            "(the likeliest token each time)")}
"""Option -> the least value Ollama gives a meaning, and why a lower one is none."""
PROBABILITIES = {"top_p": "the share of chance the likeliest tokens sampled from add up to (1 takes them all)",
                 "min_p": "the least chance of a token sampled, as a share of the likeliest one's (0 takes them all)",
                 "typical_p": "the share of chance of the typical tokens sampled from (1 takes them all)"}
"""Option -> what the probability (0 to 1) it is means."""
BOUNDED = (*LEAST, *PROBABILITIES)
LOCAL = {**LEAST, "temperature": (0, "is a temperature llama.cpp reads as any other below 0 (the model's own "
                                     "chances, top_k, top_p and min_p unread)")}
"""runner=local's least values: Ollama's, and a temperature's."""
LOCAL_UNLIMITED = ("num_predict", -1, "is a count of tokens to predict llama.cpp reads as -1 (any of 0 or less: "
                                      "until the context is full)")
"""runner=local's one spelling of a num_predict of no limit, and why another is refused (each its own manifest)."""


def out_of_bounds(option: str, value: float | None, least_of: dict[str, tuple[int, str]] = LEAST) -> float | None:
    """`value`, refused (ValueError) when it is outside the bounds `option` takes (`least_of`: whose)."""
    if value is None:
        return value
    if option in PROBABILITIES and not 0 <= value <= 1:
        raise ValueError(f"{value} is no probability, which {option} is, {PROBABILITIES[option]}: give 0 to 1")
    least, meaning = least_of.get(option, (None, ""))
    if least is not None and value < least:
        raise ValueError(f"{value} {meaning}: give {least} or more")
    return value


def _local_bounded(cls: Any, value: Any, info: ValidationInfo) -> Any:
    name, unlimited, meaning = LOCAL_UNLIMITED
    if info.field_name == name and value is not None and value <= 0 and value != unlimited:
        raise ValueError(f"{value} {meaning}: give {unlimited} for that, or 1 or more")
    return out_of_bounds(info.field_name, value, LOCAL)


LOCAL_VALIDATORS = {"_bounded": field_validator(*BOUNDED, check_fields=False)(
    classmethod(_local_bounded))}
"""runner=local's options' validator of bounds, in place of Ollama's (`Options._bounded`)."""
