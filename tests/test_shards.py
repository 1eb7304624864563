"""`shard=i/n`: the i-th of n disjoint, deterministic parts of a manifest's samples, the manifest id unchanged; and
`shards=n`, the sweep of every part."""

from __future__ import annotations

import json

from benchrun.core.errors import EXIT
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun, run_in_process


def test_shards_are_disjoint_parts_of_one_manifest_that_together_are_the_whole(tmp_path):
    whole = run_in_process(tmp_path, "whole")
    parts = [run_in_process(tmp_path, f"part{i}", f"shard={i}/3") for i in (1, 2, 3)]
    manifest = json.loads((whole / "manifest.json").read_text())
    order = [sample["id"] for sample in manifest["samples"]]
    infos = [json.loads((part / "run.json").read_text()) for part in parts]
    assert {info["manifest_id"] for info in infos} == {json.loads((whole / "run.json").read_text())["manifest_id"]}
    assert [info["shard"] for info in infos] == [{"index": i, "count": 3, "rule": "position"} for i in (1, 2, 3)]
    assert [info["counts"]["samples"] for info in infos] == [6, 6, 6]
    assert [info["status"] for info in infos] == ["completed"] * 3
    ids = [[r["id"] for r in read_jsonl(part / "responses.jsonl")] for part in parts]
    assert ids == [order[0::3], order[1::3], order[2::3]]
    assert "shard" not in json.loads((whole / "run.json").read_text())


def test_a_shard_that_is_not_i_of_n_is_refused_in_one_line(tmp_path):
    for shard, why in [("3/2", "'3/2': i/n needs 1 <= i <= n (the i-th of n parts, e.g. 1/8 to 8/8)"),
                       ("0/4", "'0/4': i/n needs 1 <= i <= n (the i-th of n parts, e.g. 1/8 to 8/8)"),
                       ("half", "'half' is not i/n (the i-th of n parts, e.g. 1/8)")]:
        result = call_benchrun(f"shard={shard}", "dry_run=true", cwd=tmp_path)
        assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: in 'config': shard: {why}\n")
    for args, why in [(["shards=0"], "shards=0: a whole number of parts from 1 (shards=8 runs shard=1/8,...,8/8)"),
                      (["shards=2", "shard=1/2"], "shards=n and shard=i/n together: give one (shards=n runs every "
                                                  "shard=i/n)")]:
        result = call_benchrun(*args, cwd=tmp_path)
        assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {why}\n")
