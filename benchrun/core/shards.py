"""Shards: the i-th of n disjoint, deterministic parts of a manifest's samples (`shard=i/n`), the manifest itself
unchanged (one manifest id for every part). Part i holds the samples at positions i-1, i-1+n, i-1+2n, ... of the
manifest, each with all its repeats: the parts are disjoint, together complete, and within one of each other in size."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Iterator, Mapping

from pydantic import Field

from benchrun.core.errors import ConfigError
from benchrun.core.frozen import Frozen
from benchrun.core.keys import override_key
from benchrun.core.layout import number_in
from benchrun.core.text import too_many_digits

if TYPE_CHECKING:
    from benchrun.core.manifest import Manifest, Query, Sample

SHARD = re.compile(r"^([0-9]+)/([0-9]+)$")
MAX_SHARDS = 10_000
"""The most parts a manifest is split into (`shard=i/n`, `shards=n`, one job each; Slurm's MaxArraySize is 1001 unless
raised): a sweep of 10**11 jobs was built whole, its list of overrides alone past any memory."""
RULE = "position"
"""How samples are dealt to shards: by their position in the manifest, modulo the number of shards."""


class Shard(Frozen):
    """run.json's `shard`: which part of the manifest the run asks."""

    index: Annotated[int, Field(ge=1)]
    """Which part, from 1."""
    count: Annotated[int, Field(ge=1, le=MAX_SHARDS)]
    """Of how many parts, at most MAX_SHARDS (a run.json saying more is refused where it is read: `merge` listed the
    shards missing from 10**20 until memory ran out)."""
    rule: str = RULE
    """How samples are dealt: `position` (the sample at manifest position p goes to part p mod count + 1)."""

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`3/8` -> the third of eight parts; ValueError naming the fault otherwise."""
        match = SHARD.match(text.strip())
        if not match:
            raise ValueError(f"'{text}' is not i/n (the i-th of n parts, e.g. 1/8)")
        try:
            index, count = int(match[1]), int(match[2])
        except ValueError:  # past Python's limit of digits
            raise ValueError(f"i/n holds {too_many_digits()}") from None
        if count < 1 or not 1 <= index <= count:
            raise ValueError(f"'{text}': i/n needs 1 <= i <= n (the i-th of n parts, e.g. 1/8 to 8/8)")
        if count > MAX_SHARDS:
            raise ValueError(f"'{text}': n is at most {MAX_SHARDS:,} parts")
        return cls(index=index, count=count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def samples(self, manifest: Manifest) -> tuple[Sample, ...]:
        """The manifest's samples this part holds, in manifest order."""
        return manifest.samples[self.index - 1::self.count]


def configured(cfg: Mapping[str, Any]) -> Shard | None:
    """The shard a checked config asks (`shard`), or None for the whole manifest."""
    return Shard.parse(cfg["shard"]) if cfg.get("shard") else None


def samples_of(manifest: Manifest, shard: Shard | None) -> tuple[Sample, ...]:
    """The samples a run of `manifest` asks: all of them, or its shard's."""
    return manifest.samples if shard is None else shard.samples(manifest)


def queries_of(manifest: Manifest, shard: Shard | None) -> Iterator[Query]:
    """Every (sample, repeat) a run of `manifest` asks, of its shard when it has one."""
    return manifest.queries(samples_of(manifest, shard))


def answers_of(manifest: Manifest, shard: Shard | None) -> int:
    """How many answers a run of `manifest` asks for: its (shard's) samples x repeats."""
    return len(samples_of(manifest, shard)) * manifest.k


def expand_shards(argv: list[str]) -> list[str]:
    """`shards=n` on the command line as the sweep it stands for: `-m shard=1/n,...,n/n` (ConfigError for an n that
    is not a whole number from 1; for `+shards=n` or `~shards`, which Hydra said as `unknown key 'shards' (did you
    mean 'shard'?)`)."""
    if marked := next((arg for arg in argv if arg.startswith(("+", "~")) and override_key(arg) == "shards"), None):
        raise ConfigError(f"{marked}: shards=n is a word of benchrun's command line (the sweep shard=1/n,...,n/n), "
                          "not a key of the config: write it as shards=8, without '+' or '~'")
    found = [arg for arg in argv if arg.startswith("shards=")]
    if not found:
        return argv
    value = found[-1].removeprefix("shards=")
    count = number_in(value)
    if count is None or not 1 <= count <= MAX_SHARDS:
        raise ConfigError(f"shards={value}: a whole number of parts from 1 to {MAX_SHARDS} (shards=8 runs "
                          "shard=1/8,...,8/8)")
    rest = [arg for arg in argv if not arg.startswith("shards=")]
    if any(arg.startswith("shard=") for arg in rest):
        raise ConfigError("shards=n and shard=i/n together: give one (shards=n runs every shard=i/n)")
    multirun = [] if {"-m", "--multirun"} & set(rest) else ["-m"]
    return [*multirun, *rest, "shard=" + ",".join(f"{i}/{count}" for i in range(1, count + 1))]
