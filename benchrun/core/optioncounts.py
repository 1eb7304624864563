"""The least value of each runner option that counts something, by what Ollama makes of it (api.Options, docs/api.md,
its Modelfile's table of parameters), passing most on to llama.cpp.

Below it a value means nothing: Ollama sends a negative context's size on to its engine (`-c -5`), takes a batch or
a thread count below one silently for its default, and reads top_k below 0 as 0; each run then asks otherwise than
its manifest says. Its own special values are kept (num_predict -1: no limit, -2: until the context is full)."""

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


def count_below_least(option: str, value: int | None) -> int | None:
    """`value`, refused (ValueError) when it is below the least `option` takes."""
    least, meaning = LEAST[option]
    if value is not None and value < least:
        raise ValueError(f"{value} {meaning}: give {least} or more")
    return value
