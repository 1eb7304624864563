"""The bounds of each runner option whose meaning to Ollama (api.Options, docs/api.md, its Modelfile's table of
parameters, passing most on to llama.cpp) has them: a count's least value, a probability's 0 to 1.

Past them a value means nothing of its own: Ollama sends a negative context's size on to its engine (`-c -5`), takes
a batch or a thread count below one silently for its default, reads top_k below 0 as 0, and a top_p or min_p past 1
as no cut at all; each run then asks otherwise than its manifest says. Its own special values are kept (num_predict
-1: no limit, -2: until the context is full)."""

from __future__ import annotations

LEAST = {"num_ctx": (0, "is no context's size (0 is the model's own)"),
         "num_predict": (-2, "is no count of tokens to predict (-1 is no limit, -2 until the context is full)"),
         "num_batch": (1, "is no batch's size (a batch holds one token at least)"),
         "num_thread": (0, "is no count of threads (0 lets the server choose)"),
         "num_gpu": (-1, "is no count of layers to put on a GPU (-1 lets the server choose, 0 puts none)"),
         "num_keep": (-1, "is no count of the prompt's tokens to keep (-1 keeps them all)"),
         "top_k": (0, "is no count of the likeliest tokens to sample from (0 takes them all)"),
         "repeat_last_n": (-1, "is no count of tokens to look back over (-1 is the whole context, 0 none)")}
"""Option -> the least value Ollama gives a meaning, and why a lower one is none."""
PROBABILITIES = {"top_p": "the share of chance the likeliest tokens sampled from add up to (1 takes them all)",
                 "min_p": "the least chance of a token sampled, as a share of the likeliest one's (0 takes them all)",
                 "typical_p": "the share of chance of the typical tokens sampled from (1 takes them all)"}
"""Option -> what the probability (0 to 1) it is means."""
BOUNDED = (*LEAST, *PROBABILITIES)


def out_of_bounds(option: str, value: float | None) -> float | None:
    """`value`, refused (ValueError) when it is outside the bounds `option` takes."""
    if value is None:
        return value
    if option in PROBABILITIES and not 0 <= value <= 1:
        raise ValueError(f"{value} is no probability, which {option} is, {PROBABILITIES[option]}: give 0 to 1")
    least, meaning = LEAST.get(option, (None, ""))
    if least is not None and value < least:
        raise ValueError(f"{value} {meaning}: give {least} or more")
    return value
