"""`shard=i/n`: the i-th of n disjoint, deterministic parts of a manifest's samples, the manifest id unchanged; and
`shards=n`, the sweep of every part."""

from __future__ import annotations

import json
import shutil

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama, fake_digest
from tests.helpers.answers import LISTBENCH_SUMMARY, listbench_answer
from tests.helpers.archives import read_jsonl, summary_of
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of, run_in_process, squeezed, sweep_dir_of
from tests.helpers.faults import DiesAfter
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The unsplit run (outputs/whole) and its three shards (outputs/part1..3), made once; tests take a copy."""
    root = tmp_path_factory.mktemp("thirds")
    run_in_process(root, "whole")
    for i in (1, 2, 3):
        run_in_process(root, f"part{i}", f"shard={i}/3")
    return root / "outputs"


def _copied(made, tmp_path, *names, to=None):
    """Copies of the shared runs `names` in tmp_path/outputs (under the names `to`, or their own), as
    run_in_process(tmp_path, name, ...) makes them."""
    for name, copy in zip(names, to or names):
        shutil.copytree(made / name, tmp_path / "outputs" / copy)
    return [tmp_path / "outputs" / copy for copy in to or names]


def test_shards_are_disjoint_parts_of_one_manifest_that_together_are_the_whole(tmp_path, made):
    whole, *parts = _copied(made, tmp_path, "whole", "part1", "part2", "part3")
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


def test_a_dry_run_of_a_shard_says_how_much_of_the_plan_it_asks(tmp_path):
    result = call_benchrun("shard=2/4", "dry_run=true", cwd=tmp_path)
    assert result.stdout.splitlines()[-2] == ("4 tasks, 18 samples -> 18 model calls; shard 2/4 asks 5 of them "
                                              "(dry run: no model was called)")


def test_a_shard_that_is_not_i_of_n_is_refused_in_one_line(tmp_path):
    for shard, why in [("3/2", "'3/2': i/n needs 1 <= i <= n (the i-th of n parts, e.g. 1/8 to 8/8)"),
                       ("0/4", "'0/4': i/n needs 1 <= i <= n (the i-th of n parts, e.g. 1/8 to 8/8)"),
                       ("half", "'half' is not i/n (the i-th of n parts, e.g. 1/8)"),
                       ("'٣/٨'", "'٣/٨' is not i/n (the i-th of n parts, e.g. 1/8)")]:
        result = call_benchrun(f"shard={shard}", "dry_run=true", cwd=tmp_path)
        assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: in 'config': shard: {why}\n")
    for args, why in [(["shards=0"], "shards=0: a whole number of parts from 1 to 10000 (shards=8 runs "
                                     "shard=1/8,...,8/8)"),
                      (["shards=²"], "shards=²: a whole number of parts from 1 to 10000 (shards=8 runs "
                                     "shard=1/8,...,8/8)"),
                      (["shards=99999999999"], "shards=99999999999: a whole number of parts from 1 to 10000 (shards=8 "
                                               "runs shard=1/8,...,8/8)"),
                      (["shards=2", "shard=1/2"], "shards=n and shard=i/n together: give one (shards=n runs every "
                                                  "shard=i/n)")]:
        result = call_benchrun(*args, cwd=tmp_path)
        assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {why}\n")


def _lines(run_dir, name, *keys):
    return [tuple(line.get(key) for key in keys) for line in read_jsonl(run_dir / name)]


def test_merged_shards_are_the_unsplit_run_record_for_record_and_verify(tmp_path, made):
    whole, *parts = _copied(made, tmp_path, "whole", "part3", "part1", "part2")
    into = tmp_path / "merged"
    result = audit(tmp_path, "merge", *map(str, parts), "--into", str(into))
    assert result.returncode == EXIT["ok"], result.stderr
    infos = {i: json.loads((tmp_path / "outputs" / f"part{i}" / "run.json").read_text()) for i in (1, 2, 3)}
    assert result.stdout.splitlines()[-3:] == [
        "completed: 18/18 samples, 0 request errors, 0 scorer errors, 0 invalid formats",
        f"run directory: {into}",
        "merge of 3 shards: " + ", ".join(f"{i}/3 ({infos[i]['run_id']})" for i in (1, 2, 3))]
    answer = ("id", "repeat", "task", "text", "error")
    assert _lines(into, "responses.jsonl", *answer) == _lines(whole, "responses.jsonl", *answer)
    again = audit(tmp_path, "merge", *map(str, parts), "--into", str(into))
    merged_id = json.loads((into / "run.json").read_text())["run_id"]
    assert (again.returncode, again.stderr) == (EXIT["usage"], (
        f"benchrun: error: {into} already holds run {merged_id} (completed); nothing was changed; pick a new "
        "directory (--into DIR)\n"))
    score = ("id", "repeat", "scorer", "metrics", "error", "detail")
    assert _lines(into, "scores.jsonl", *score) == _lines(whole, "scores.jsonl", *score)
    order = [s["id"] for s in json.loads((whole / "manifest.json").read_text())["samples"]]
    assert [r["shard"] for r in read_jsonl(into / "responses.jsonl")] == [f"{p % 3 + 1}/3" for p in range(18)]
    assert {s["shard"] for s in read_jsonl(into / "scores.jsonl")} == {"1/3", "2/3", "3/3"}
    assert [r["id"] for r in read_jsonl(into / "responses.jsonl")] == order
    assert summary_of(into) == summary_of(whole) == LISTBENCH_SUMMARY
    assert (into / "manifest.json").read_bytes() == (whole / "manifest.json").read_bytes()
    info = json.loads((into / "run.json").read_text())
    assert "shard" not in info and info["overrides"] == infos[1]["overrides"][:-1]
    assert info["merged"]["shards"] == [{"run_id": infos[i]["run_id"], "path": str(tmp_path / "outputs" / f"part{i}"),
                                         "shard": f"{i}/3", "status": "completed", "responses": 6,
                                         "identity": infos[i]["identity"], "environment": infos[i]["environment"],
                                         "runner": infos[i]["runner"], "judge_runner": None, "history": []}
                                        for i in (1, 2, 3)]
    assert (info["merged"]["partial"], info["merged"]["missing"]) == (False, [])
    verified = audit(tmp_path, "verify", str(into))
    assert verified.returncode == EXIT["ok"], verified.stdout
    listed = json.loads(audit(tmp_path, "list", str(tmp_path / "outputs"), "--json").stdout)
    assert {(entry["shard"], entry["merged_from"]) for entry in listed} == {
        ("1/3", None), ("2/3", None), ("3/3", None), (None, None)}
    assert "merge of 3/3 shards" in audit(tmp_path, "list", str(tmp_path)).stdout
    merged_from = " ".join(f"{i}/3 {infos[i]['run_id']} {tmp_path / 'outputs' / f'part{i}'}" for i in (1, 2, 3))
    assert squeezed(f"merge of {merged_from}") in squeezed(audit(tmp_path, "show", str(into)).stdout)
    assert squeezed("shard 2/3 (samples at manifest positions 1 mod 3)") in squeezed(
        audit(tmp_path, "show", str(parts[2])).stdout)
    for part in parts:
        assert audit(tmp_path, "verify", str(part)).returncode == EXIT["ok"]


def test_shards_that_overlap_miss_a_part_or_do_not_match_are_refused_with_nothing_written(tmp_path, made):
    one, two = (run_in_process(tmp_path, f"part{i}", f"shard={i}/2") for i in (1, 2))
    again = run_in_process(tmp_path, "again", "shard=2/2")
    other_model = run_in_process(tmp_path, "gemma", "shard=2/2", "runner.model=gemma3")
    warmer = run_in_process(tmp_path, "warm", "shard=2/2", "runner.options.temperature=0.5")
    thirds, whole = _copied(made, tmp_path, "part2", "whole", to=["thirds", "whole"])  # shard=2/3, and unsplit
    ids = {p.name: json.loads((p / "run.json").read_text())["run_id"] for p in
           (one, two, again, other_model, warmer, thirds, whole)}
    digest = {m: fake_digest(m)[:12] for m in ("llama3.2", "gemma3")}
    into = tmp_path / "merged"
    cases = [
        ([one, two, again], f"shard 2/2 is given twice: runs {ids['part2']} and {ids['again']}"),
        ([one], "the shards are incomplete: no run of shard 2/2; merge with --partial to merge what there is "
                "(recorded)"),
        ([one, other_model], f"shard runs {ids['part1']} (1/2) and {ids['gemma']} (2/2) asked different models: "
                             f"digest {digest['llama3.2']} and digest {digest['gemma3']}"),
        ([one, warmer], f"shard runs {ids['part1']} (1/2) and {ids['warm']} (2/2) asked with different options: "
                        "{'temperature': 0, 'seed': 0} and {'temperature': 0.5, 'seed': 0}"),
        ([one, thirds], f"shard runs {ids['part1']} (1/2) and {ids['thirds']} (2/3) are parts of different splits: "
                        "2 and 3 shards"),
        ([one, whole], f"in '{whole}': run {ids['whole']} is not a shard run (it was not run with shard=i/n)"),
    ]
    for runs, why in cases:
        result = audit(tmp_path, "merge", *map(str, runs), "--into", str(into))
        assert (result.returncode, result.stderr) == (EXIT["archive"], f"benchrun: error: {why}\n")
        assert not into.exists()


def test_a_partial_merge_is_recorded_and_resume_asks_the_rest(tmp_path, made):
    whole, one, three = _copied(made, tmp_path, "whole", "part1", "part3")
    into = tmp_path / "merged"
    result = audit(tmp_path, "merge", str(one), str(three), "--into", str(into), "--partial")
    assert result.returncode == EXIT["ok"], result.stderr
    info = json.loads((into / "run.json").read_text())
    assert (info["status"], info["reason"]) == (
        "interrupted", f"merged with --partial: no run of shard 2/3; 6 answers not asked; finish it with: "
                       f"benchrun-audit resume {into}")
    assert (info["merged"]["partial"], info["merged"]["missing"], info["counts"]["responses"]) == (True, ["2/3"], 12)
    assert audit(tmp_path, "verify", str(into)).returncode == EXIT["ok"]
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        resumed = audit(tmp_path, "resume", str(into), "--host", server.url)
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    assert summary_of(into) == summary_of(whole)
    assert [r.get("shard") for r in read_jsonl(into / "responses.jsonl")][-6:] == [None] * 6


def test_shards_n_is_the_sweep_of_every_part(tmp_path):
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        result = call_benchrun("shards=2", f"runner.host={server.url}", "cache=false",
                               f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    sweep = json.loads((sweep_dir_of(result.stdout) / "sweep.json").read_text())
    assert [(job["dir"], job["label"], job["status"]) for job in sweep["jobs"]] == [
        ("0_shard-1-2", "shard=1/2", "completed"), ("1_shard-2-2", "shard=2/2", "completed")]


def test_a_shard_answered_by_two_models_is_not_merged(tmp_path):
    one = run_in_process(tmp_path, "part1", "shard=1/2")
    two = tmp_path / "outputs" / "part2"
    dying = DiesAfter(3)
    with FakeOllama(models=["llama3.2"], responder=dying) as server:
        dying.server = server
        result = call_benchrun(f"runner.host={server.url}", "cache=false", "runner.backoff_s=0", "shard=2/2",
                               f"hydra.run.dir={two}", cwd=tmp_path)
    assert result.returncode == EXIT["runner"], result.stderr
    with FakeOllama(models=["llama3.2"], responder=listbench_answer, digests={"llama3.2": "cd" * 32}) as pulled:
        resumed = audit(tmp_path, "resume", str(two), "--force", "--host", pulled.url)
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    run_id = json.loads((two / "run.json").read_text())["run_id"]
    merged = audit(tmp_path, "merge", str(one), str(two), "--into", str(tmp_path / "merged"))
    assert (merged.returncode, merged.stderr) == (
        EXIT["archive"], f"benchrun: error: in '{two}': run {run_id} (shard 2/2) holds answers from 2 models: 3 by "
                         f"{fake_digest('llama3.2')[:12]}, 6 by cdcdcdcdcdcd: a merged run is of one model\n")
    assert not (tmp_path / "merged").exists()


def test_shards_of_a_benchmark_with_a_judge_merge_with_their_judge_calls(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    common = ("task.path=bench", "judge.model=qwen2.5", "cache=false", f"outputs={tmp_path / 'outputs'}")
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        runs = [call_benchrun(f"runner.host={server.url}", *common, *shard, cwd=tmp_path)
                for shard in ([], ["shard=1/2"], ["shard=2/2"])]
    assert [r.returncode for r in runs] == [EXIT["ok"]] * 3, runs[0].stderr
    whole, *parts = (run_dir_of(r.stdout) for r in runs)
    into = tmp_path / "merged"
    assert audit(tmp_path, "merge", *map(str, parts), "--into", str(into)).returncode == EXIT["ok"]
    call = ("id", "judge", "judge_repeat", "grade", "value", "error", "messages", "reply")
    assert sorted(_lines(into, "judgements.jsonl", *call)) == sorted(_lines(whole, "judgements.jsonl", *call))
    assert [c["shard"] for c in read_jsonl(into / "judgements.jsonl")] == ["1/2", "2/2", "1/2"]
    assert summary_of(into) == summary_of(whole)
    merged, unsplit = (json.loads((d / "summary.json").read_text())["judges"] for d in (into, whole))
    assert merged == unsplit
    assert json.loads((into / "run.json").read_text())["judge"] == json.loads((whole / "run.json").read_text())["judge"]
    assert audit(tmp_path, "verify", str(into)).returncode == EXIT["ok"]
