"""Where a derived run came from: a retry's parent, a merged run's shards."""

from __future__ import annotations

import os
from typing import Annotated, Any

from pydantic import AfterValidator

from benchrun.core.errors import ConfigError
from benchrun.core.frozen import Frozen
from benchrun.core.layout import Status
from benchrun.core.metrictypes import Tally
from benchrun.core.recordvalues import Environment, History, Identity, RunId
from benchrun.core.shards import Shard
from benchrun.core.text import undecoded


def _part(text: str) -> str:
    """A shard as `i/n`, kept as written (ValueError naming the fault otherwise)."""
    Shard.parse(text)
    return text


def recorded(run_dir: os.PathLike[str]) -> str:
    """A run directory as a derived run's run.json records it: absolute, so that it names the same folder read from
    any directory (a path relative to where the command was given names another folder, or none, from elsewhere);
    one whose name is not UTF-8 (renamed so by another tool), which run.json cannot hold as text, refused."""
    path = os.path.abspath(run_dir)
    if (shown := undecoded(path)) is not None:
        raise ConfigError(f"'{shown}' is not UTF-8 text, and a run records the runs it is made from by their "
                          "directories' paths as text (run.json): rename that directory; nothing was written")
    return path


def _some(shards: tuple[MergedShard, ...]) -> tuple[MergedShard, ...]:
    if not shards:
        raise ValueError("a merged run is made of at least one shard run")
    return shards


class Lineage(Frozen):
    """Where a retry came from."""

    run_id: RunId
    path: str
    """The parent's run directory, as it was when the retry was made (absolute, `recorded`; an older retry's may be
    relative to where it was made)."""
    carried: Tally
    """How many of the parent's responses were carried over."""
    asked: Tally
    """How many samples were asked again (their requests had failed in the parent, or were never made)."""


class MergedShard(Frozen):
    """One shard run a merged run was made of."""

    run_id: RunId
    path: str
    """The shard's run directory, as it was when the merge was made (absolute, `recorded`; an older merge's may be
    relative to where it was made)."""
    shard: Annotated[str, AfterValidator(_part)]
    """Which part it asked (i/n)."""
    status: Status
    responses: Tally
    """How many of its response lines the merged run holds (all of them)."""
    identity: Identity | None = None
    """The model as the shard's servers described it (its run.json's `identity`: hosts, server version), which the
    merged run's names only for the first shard; None in an older merge."""
    environment: Environment | None = None
    """The shard's machine and versions (its run.json's `environment`): the merged run's own is the machine that
    merged, which answered nothing; None in an older merge."""
    runner: dict[str, Any] | None = None
    """The runner settings the shard asked with (its run.json's `runner`: its limits, its servers), which the merged
    run's names only for the first shard; None in an older merge."""
    judge_runner: dict[str, Any] | None = None
    """The judge's runner settings the shard graded with (its run.json's `judge.runner`), likewise; None without a
    judge, or in an older merge."""
    history: History | None = None
    """The shard run's own history (its run.json's: its resumes, or what it retried, forced or not), which the merged
    run's, made fresh, does not hold; None in an older merge."""


class Merge(Frozen):
    """Where a merged run came from (`benchrun-audit merge`): its shards, in shard order."""

    shards: Annotated[tuple[MergedShard, ...], AfterValidator(_some)]
    partial: bool = False
    """Merged with --partial: shards or answers are missing (`missing`, and counts.responses < counts.samples)."""
    missing: tuple[str, ...] = ()
    """The shards (i/n) no run was given for."""
    merged_at: str
