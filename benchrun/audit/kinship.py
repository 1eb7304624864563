"""Two compared runs one of which is made of the other's answers (a retry of it, a merge of it as a shard, or a run
made so of one that was: a retry of a merge of it): those answers are the one asking's, recorded twice, and agree
because they are the same records, not a second asking."""

from __future__ import annotations

from collections.abc import Iterator

from benchrun.archive.reader import Run, load_run
from benchrun.core.errors import BenchrunError
from benchrun.core.text import counted

_SAME = "the answers carried are {} own records, not asked again, so they agree by being one"
"""What is said of the answers a run carried from another (`{}`: whose they are)."""

_STEPS = 8
"""How many runs back a chain of retries and merges is followed."""


def kinship(baseline: Run, run: Run) -> str | None:
    """What a reader of `run` compared with `baseline` must know when either is made of the other's answers; None
    when neither is."""
    if (said := _made_of(run, baseline.id)) is not None:
        return f"{said} the baseline, run {baseline.id}: " + _SAME.format("the baseline's")
    if (said := _made_of(baseline, run.id)) is not None:
        return f"the baseline is {said} it: " + _SAME.format("its")
    return None


def _made_of(derived: Run, source: str) -> str | None:
    """`a retry (5 answers carried) of`, `a merge (shard 1/2) of`, `a retry (...) of a merge (...) of` when `derived`
    is made of the answers of run `source`, itself or through the runs it was made of (as their folders still hold
    them), each run looked in once."""
    reached, seen = [(derived, "")], {derived.id}
    for _ in range(_STEPS):
        further: list[tuple[Run, str]] = []
        for run, chain in reached:
            for made, said in _sources(run):
                if made == source:
                    return f"{chain}{said}"
                if made not in seen and (between := _there(run, made)) is not None:
                    seen.add(made)
                    further.append((between, f"{chain}{said} "))
        reached = further
    return None


def _sources(derived: Run) -> Iterator[tuple[str, str]]:
    """Each run `derived` was made of (its id) and how it was: its retry's parent, its merge's shards."""
    info = derived.info
    if info.parent is not None:
        yield info.parent.run_id, f"a retry ({counted(info.parent.carried, 'answer')} carried) of"
    for shard in info.merged.shards if info.merged else ():
        yield shard.run_id, f"a merge (shard {shard.shard}) of"


def _there(derived: Run, made: str) -> Run | None:
    """Run `made`, which `derived` was made of, as the folder its run.json names still holds it; None when not."""
    info = derived.info
    paths = [info.parent.path] if info.parent is not None and info.parent.run_id == made else []
    paths += [shard.path for shard in info.merged.shards if shard.run_id == made] if info.merged else []
    for path in paths:
        try:
            if (found := load_run(path)).id == made:
                return found
        except (BenchrunError, OSError):
            continue
    return None
