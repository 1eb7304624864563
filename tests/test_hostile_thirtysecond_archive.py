"""Hostile input, thirty-second pass, the archive and audit side (what the thirty-first left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. a record line (sealed over) given lineage fields no writer of its run gives: a response's `attempts` -1, 0, 2.0 or
   5 (its failed attempts and its answer make 1; one from the response cache makes 0), a `carried_from` in a run that
   is no retry, a `shard` in a run that is no merge, a merged run's line giving another shard than the one holding
   its sample, a score line another shard than its response: verify said intact; what run.json says the run was made
   from decides which lineage fields its lines give, and their bounds (`archive.lineagefields.Made`, in
   `archive.repair._vet`, for verify and resume)
"""
from __future__ import annotations

import json

import pytest

from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p29_archive import failed
from tests.helpers.p32_archive import merged_run, retried, sealed_fields

# -- what the thirty-first pass left -----------------------------------------------------------------------------------

NO_PARENT = ("but run.json names no parent: only a retry carries answers over from another run (or a merged run, from "
             "its shards')")
NO_SHARDS = ("but run.json names no shards: only a merged run's lines name the shard run that made them (and a retry's "
             "carried over from one)")


@pytest.mark.parametrize(("name", "fields", "said"), [
    ("responses.jsonl", {"attempts": -1}, "gives attempts -1, which is no count of requests"),
    ("responses.jsonl", {"attempts": 2.0}, "gives attempts 2.0, which is no count of requests"),
    ("responses.jsonl", {"attempts": True}, "gives attempts True, which is no count of requests"),
    ("responses.jsonl", {"attempts": 0}, "gives attempts 0, where its failed attempts (0) and its answer make 1"),
    ("responses.jsonl", {"attempts": 5}, "gives attempts 5, where its failed attempts (0) and its answer make 1"),
    ("responses.jsonl", {"cached_from": "7" * 12},
     "gives attempts 1, where its failed attempts (0) and an answer from the response cache make 0"),
    ("responses.jsonl", {"carried_from": "7" * 12}, f"gives carried_from '777777777777', {NO_PARENT}"),
    ("responses.jsonl", {"shard": "1/2"}, f"gives shard '1/2', {NO_SHARDS}"),
    ("scores.jsonl", {"shard": "1/2"}, "gives shard '1/2', where the response it is of gives none"),
])
def test_a_lineage_field_no_writer_of_the_run_gives_is_said_by_verify(tmp_path, name, fields, said):
    run_dir = sealed_fields(synthetic_run(tmp_path / "r", [1, 0]), name, 1, **fields)
    assert failed(tmp_path, run_dir) == [f"FAIL  {name}: line 1 {said}"]


@pytest.mark.slow
def test_a_merged_runs_lines_give_the_shard_holding_their_sample_and_a_retry_of_it_keeps_them(tmp_path):
    run_dir = merged_run(tmp_path)
    again = retried(tmp_path, run_dir)
    carried = [json.loads(line) for line in (again / "responses.jsonl").read_text().splitlines()]
    assert [(line["shard"], line["carried_from"] is not None) for line in carried if "shard" in line] == [
        ("1/2", True), ("2/2", True), ("2/2", True), ("1/2", True), ("2/2", True)]
    assert [audit(tmp_path, "verify", str(run)).stdout.splitlines()[-1] for run in (run_dir, again)] == ["intact"] * 2
    sealed_fields(run_dir, "responses.jsonl", 1, shard="2/2")
    sealed_fields(again, "responses.jsonl", 6, shard="1/2")
    assert failed(tmp_path, run_dir) == [
        "FAIL  responses.jsonl: line 1 gives shard '2/2', but its sample 'product:a=2,b=3' (manifest position 0) is of "
        "shard 1/2",
        *(f"FAIL  scores.jsonl: line {n} gives shard '1/2', where the response it is of gives '2/2'" for n in (1, 2))]
    assert failed(tmp_path, again) == [f"FAIL  responses.jsonl: line 6 gives shard '1/2', {NO_SHARDS}"]
