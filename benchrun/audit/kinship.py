"""Two compared runs one of which is made of the other's answers (a retry of it, a merge of it as a shard): those
answers are the one asking's, recorded twice, and agree because they are the same records, not a second asking."""

from __future__ import annotations

from benchrun.archive.reader import Run
from benchrun.core.text import counted

_SAME = "the answers carried are {} own records, not asked again, so they agree by being one"
"""What is said of the answers a run carried from another (`{}`: whose they are)."""


def kinship(baseline: Run, run: Run) -> str | None:
    """What a reader of `run` compared with `baseline` must know when either is made of the other's answers; None
    when neither is."""
    if (said := _made_of(run, baseline)) is not None:
        return f"{said} the baseline, run {baseline.id}: " + _SAME.format("the baseline's")
    if (said := _made_of(baseline, run)) is not None:
        return f"the baseline is {said} it: " + _SAME.format("its")
    return None


def _made_of(derived: Run, source: Run) -> str | None:
    """`a retry (5 answers carried) of`, `a merge (shard 1/2) of` when `derived` is made of `source`'s answers."""
    info = derived.info
    if info.parent is not None and info.parent.run_id == source.id:
        return f"a retry ({counted(info.parent.carried, 'answer')} carried) of"
    shards = [shard.shard for shard in info.merged.shards if shard.run_id == source.id] if info.merged else []
    return f"a merge (shard {shards[0]}) of" if shards else None
