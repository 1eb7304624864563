"""What a seed may be: one that llama.cpp (Ollama's engine, runner=local, llama-cpp-python's server) takes as given,
for the seed set and for each repeat's (seed + i), so that a run repeats as its recorded seed says."""

from __future__ import annotations

from typing import Any, Mapping

MAX_SEED = 2**32 - 2
"""The largest seed llama.cpp takes as given: it reads a seed as 32 bits, so 2^32 - 1 (LLAMA_DEFAULT_SEED) asks it
for a random one, and a larger seed is another one (2^32 + 7 is 7)."""


def a_seed(seed: Any) -> Any:
    """`seed` (an option's value), refused when negative or past MAX_SEED."""
    if isinstance(seed, int) and seed < 0:
        raise ValueError(f"a negative seed ({seed}): -1 asks Ollama and llama.cpp for a random seed (and other "
                         "negative ones wrap), so the run would not repeat though its seed is recorded; give 0 or more")
    if isinstance(seed, int) and seed > MAX_SEED:
        raise ValueError(_past(f"a seed of {seed:,}"))
    return seed


def repeat_seeds_fit(options: Mapping[str, Any], repeats: int, key: str, counted: str) -> None:
    """Refuse a seed (the option at config `key`) whose repeats (`counted`), asked with seed + i, would pass MAX_SEED."""
    seed = options.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool) and seed <= MAX_SEED < seed + repeats - 1:
        last = f"the seed of repeat {repeats - 1} ({seed:,} + {repeats - 1}, {counted}={repeats})"
        raise ValueError(f"{key}: {_past(last)}")


def _past(what: str) -> str:
    """Why a seed past MAX_SEED (`what` says which) is refused, with the fix."""
    return (f"{what} is past the seeds llama.cpp takes as given (0 to {MAX_SEED:,}): it reads a seed as 32 bits, so "
            f"{MAX_SEED + 1:,} asks it for a random seed and a larger one is another seed (modulo 2^32), and the run "
            "would not repeat as its seed is recorded; give a smaller seed")
