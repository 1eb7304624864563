"""Hostile input, fortysecond pass, the archive and audit side (pass 41's rules checked to hold together, then a fresh
pass): the cases it found bad, each with the rule it now obeys.

Pass 41's rules together:

1. `compare` of a shard and a retry of the merge made of it (or of a run and a retry of its retry), either first: the
   answers the retry carried are the shard's records, and compare paired them as two askings (delta 0, p 1) without a
   word, where it names a retry or a merge of the run itself. A run made of the other's answers through the runs its
   run.json names, as their folders still hold them, is said to be, the chain named (`audit.kinship`)

A fresh pass:

2. a run id prefix that begins the ids of many runs (an archive of thousands, `show 5`): refused as ambiguous naming
   the first five, and not saying there were more, as if five were all. The rest are counted, and what to do said
   (`archive.lookup.resolve_run`)
"""
from __future__ import annotations

from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p42_archive import retry_chain, vs_lines

# -- pass 41's rules together ------------------------------------------------------------------------------------------

CARRIED = "the answers carried are {} own records, not asked again, so they agree by being one"


def test_compare_says_a_run_is_made_of_the_others_answers_through_another_run(tmp_path):
    first, _, last = retry_chain(tmp_path, ["5" * 12, "6" * 12, "7" * 12])
    assert [vs_lines(tmp_path, *pair) for pair in ((first.name, last.name), (last.name, first.name))] == [
        ["vs m 777777777777 (r.retry1.retry1): a retry (1 answer carried) of a retry (1 answer carried) of the "
         "baseline, run 555555555555: " + CARRIED.format("the baseline's")],
        ["vs m 555555555555 (r): the baseline is a retry (1 answer carried) of a retry (1 answer carried) of it: "
         + CARRIED.format("its")]]


# -- a fresh pass ------------------------------------------------------------------------------------------------------


def test_a_prefix_of_many_runs_ids_counts_those_not_shown(tmp_path):
    for n in range(7):
        synthetic_run(tmp_path / "runs" / f"r{n}", [1], run_id=f"ab{n}")
    done = audit(tmp_path, "show", "ab", "--root", "runs")
    shown = ", ".join(f"ab{n} (runs/r{n})" for n in range(5))
    assert (done.returncode, done.stderr) == (4, f"benchrun: error: run id prefix 'ab' is ambiguous: {shown}, and 2 "
                                                 "more (give more of the id)\n")
