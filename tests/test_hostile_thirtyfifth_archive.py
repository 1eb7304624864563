"""Hostile input, thirty-fifth pass, the archive and audit side (what the thirty-fourth left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. a response's `host` (sealed over, summary.json's speed made again to match) in a run that asked one server in
   every session, or naming a server none of its sessions asked: verify said intact; a response the run asked names a
   server of a list config.yaml's runner, run.json's runner or a resume's or retry's --host gave
   (`audit.askedservers.Servers`, `ResponseHosts`); a judge call's names one of its judge's servers (or the model's,
   which a judge naming none asks), where it was only bound to name none where no session asked a list
2. a rejudged rescore's own judge call (`rescores/NNN/judgements.jsonl`, its digest remade) whose chat was edited,
   whose grade was blanked or is of a reply its judge's format refuses, or that names a server where the rescore's
   judge asked one: verify said intact; a rescore's calls are checked by the rules a run's are, with the rescore's
   judge (`audit.summarycheck.RescoreBooks`, `audit.askedservers.rejudge_servers`); rescores rejudged by 784954b and
   63eb016 still verify
3. a response or judge call giving `cached_from` (sealed over) in a run whose config.yaml says `cache: false`: verify
   said intact; a run made without the response cache took nothing from it, which every benchrun since the cache
   came has kept (`audit.uncached.Uncached`); a cache left unset is not checked (benchruns told it on or off by
   other rules)

A fresh pass:

4. a retry's run.json (sealed over) whose parent is the run itself (its own id: a chain of retries made a cycle), or a
   merged run's naming itself as a shard: verify said intact, show `retry of` the run itself; a retry and a merge are
   each a new run with an id of its own (`archive.lineagefields.self_derived`); a run whose run.json (sealed over)
   names as its parent its own retry (the run in parent.path, which names it as parent and started after it): a
   retry is made of a run that ended before it (`audit.summarycheck._from_child`; the retry itself stays intact)
5. a run's benchmark folder whose name a copy from macOS re-normalised (NFD, `bénch` as e and a combining accent,
   where config.yaml's task.path gives é): `rescore` said `'bénch' is not a directory (looked in .../bénch)`, naming
   a folder that lists alike; a path not found whose name is there in another Unicode form says so
   (`core.unicodeforms.other_form`, in `core.resources.bench_dir`: `benchrun task.path=...` too)
6. a Run kept open (a notebook's) over a record file edited in place, as long as it was, its modification time set back
   (`touch -r`, os.utime): its `unverified` kept saying nothing changed, as a fresh read said the line was not the one
   written; a file's state is its change time too, which no user sets back (`archive.trust._stat`)
7. a run.json (sealed over, or written by hand) whose started_at or ended_at gives no UTC offset
   (`2026-12-07T03:30:00`): verify failed with a traceback (`can't subtract offset-naive and offset-aware
   datetimes`); a run's time without an offset is in UTC, as `list` read it already, wherever times are compared
   (`core.recordvalues.moment_at`, once `audit.listing.parse_time`)
"""
from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p25_archive import sealed_over
from tests.helpers.p29_archive import calls_rewritten, failed, rejudged
from tests.helpers.p32_archive import hosts_run, sealed_fields, speed_remade
from tests.helpers.p33_archive import judged_run
from tests.helpers.p34_archive import judged_copy
from tests.helpers.p35_archive import hosted, judge_listing

JUDGES = ("http://10.0.0.9:11434", "http://10.0.0.8:11434")
"""A judge's list of two servers."""
SAID = "config.yaml's runner.host, run.json's runner, each resume's or retry's --host"


# -- what the thirty-fourth pass left ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    """One judged run made with cache=false (`judged_run`) for the module's tests, each of which edits a copy."""
    return judged_run(tmp_path_factory.mktemp("judged"))


def test_a_responses_host_in_a_run_of_one_server_is_said_by_verify(tmp_path):
    run_dir = hosted(synthetic_run(tmp_path / "r", [1, 0]), "http://10.0.0.9:11434")
    assert failed(tmp_path, run_dir) == [
        f"FAIL  responses.jsonl: line 1 gives host 'http://10.0.0.9:11434', where the run asked one server in every "
        f"session ({SAID}): only a run asking a list of servers names the one that answered"]


def test_a_responses_host_none_of_its_runs_servers_is_said_by_verify(tmp_path):
    run_dir = hosts_run(tmp_path / "r")
    assert audit(tmp_path, "verify", "r").stdout.splitlines()[-1] == "intact"
    assert failed(tmp_path, hosted(run_dir, "http://c:3")) == [
        f"FAIL  responses.jsonl: line 1 gives host 'http://c:3', none of the servers the run asked ({SAID})"]


def test_a_judge_calls_host_none_of_its_judges_servers_is_said_by_verify(tmp_path, judged):
    run_dir = judged_copy(tmp_path, judged)
    judge_listing(sealed_fields(run_dir, "judgements.jsonl", 4, host="http://10.0.0.7:11434"), *JUDGES)
    assert failed(tmp_path, run_dir) == [
        "FAIL  judgements.jsonl: line 4 gives host 'http://10.0.0.7:11434', none of the servers the run's judge asked "
        "(config.yaml's judge.host, run.json's judge, each resume's or retry's --judge-host)"]
    sealed_fields(run_dir, "judgements.jsonl", 4, host=JUDGES[1])
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"


@pytest.fixture(scope="module")
def rejudge(tmp_path_factory) -> Path:
    """One run rescored with --rejudge (`rejudged`) for the module's tests, each of which edits a copy."""
    return rejudged(tmp_path_factory.mktemp("rejudged"))


@pytest.mark.parametrize(("fields", "said"), [
    ({"messages": [{"role": "user", "content": "rate this as right"}]},
     "gives messages other than its judge's rubric rendered for the answer it judges: not what the judge was asked"),
    ({"grade": None}, 'gives grade null, where its reply gives "right" (\'verdict\')'),
    ({"reply": '{"verdict": "maybe"}', "grade": "maybe"},
     'gives grade "maybe" of a reply not in its judge\'s format Verdict: verdict: "maybe" is not one of ["right", '
     '"wrong"]'),
    ({"host": "http://10.0.0.9:11434"},
     "gives host 'http://10.0.0.9:11434', where the rescore's judge asked one server (rescores/001/rescore.json's "
     "judge.runner): only a judge asking a list of servers names the one that answered"),
])
def test_a_rejudged_rescores_judge_call_is_checked_as_a_runs(tmp_path, rejudge, fields, said):
    run_dir = judged_copy(tmp_path, rejudge)
    calls_rewritten(run_dir / "rescores" / "001", lambda calls: calls[0].update(fields))
    assert failed(tmp_path, run_dir) == [f"FAIL  rescores/001/judgements.jsonl: line 1 {said}"]


@pytest.mark.parametrize("name", ["responses.jsonl", "judgements.jsonl"])
def test_a_line_from_the_cache_in_a_run_made_without_it_is_said_by_verify(tmp_path, judged, name):
    run_dir = judged_copy(tmp_path, judged)
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    fields = {"cached_from": run_id, "attempts": 0, "seconds": 0.0}
    if name == "responses.jsonl":
        speed_remade(sealed_fields(run_dir, name, 2, **fields))
    else:
        sealed_fields(run_dir, name, 2, **fields)
    assert failed(tmp_path, run_dir) == [
        f"FAIL  {name}: line 2 gives cached_from '{run_id}', where config.yaml's cache is false: a run made without "
        "the response cache took nothing from it"]


# -- a fresh pass ------------------------------------------------------------------------------------------------------

OWN = "5" * 12
"""The run id of a `synthetic_run`."""


@pytest.mark.parametrize(("made_from", "said"), [
    ({"parent": {"run_id": OWN, "path": "/x/r", "carried": 0, "asked": 2}},
     f"parent.run_id is '{OWN}', the run's own id: a retry is a new run, with an id of its own"),
    ({"merged": {"shards": [{"run_id": id_, "path": f"/x/s{i}", "shard": f"{i}/2", "status": "completed",
                             "responses": 1} for i, id_ in ((1, "1" * 12), (2, OWN))], "merged_at": "2026-01-01"}},
     f"merged.shards.1.run_id is '{OWN}', the run's own id: a merged run is a new run, with an id of its own"),
])
def test_a_run_made_from_itself_is_said_by_verify(tmp_path, made_from, said):
    run_dir = synthetic_run(tmp_path / "r", [1, 0], **made_from)
    assert failed(tmp_path, run_dir) == [f"FAIL  run.json: {said}"]


def test_a_run_naming_its_own_retry_as_its_parent_is_said_by_verify_and_the_retry_is_intact(tmp_path):
    first = synthetic_run(tmp_path / "a", [1, 0], run_id="a" * 12)
    synthetic_run(tmp_path / "b", [1, 0], run_id="b" * 12,
                  parent={"run_id": "a" * 12, "path": str(first), "carried": 0, "asked": 2})

    def child_named(text: str) -> str:
        info = json.loads(text)
        info["parent"] = {"run_id": "b" * 12, "path": str(tmp_path / "b"), "carried": 0, "asked": 2}
        return json.dumps(info, indent=2)

    sealed_over(first, child_named)
    assert failed(tmp_path, first) == [
        f"FAIL  run.json: parent.run_id is '{'b' * 12}', the run in {tmp_path / 'b'}, whose own parent is this run: a "
        "retry is made of a run that ended before it, never of its child"]
    assert audit(tmp_path, "verify", "b").stdout.splitlines()[-1] == "intact"


def test_a_benchmark_folder_renamed_to_another_unicode_form_is_said(tmp_path):
    given, copied = unicodedata.normalize("NFC", "bénch"), unicodedata.normalize("NFD", "bénch")
    synthetic_run(tmp_path / "r", [1, 0], config=f"task: {{path: {given}}}\n")
    (tmp_path / copied).mkdir()
    done = audit(tmp_path, "rescore", "r")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", (
        f"benchrun: error: in 'r': cannot find the run's benchmark (task.path: '{given}' is not a directory (looked in "
        f"{tmp_path / given}); {tmp_path / copied} is there, its name in another Unicode form (NFD, as a copy from "
        "macOS names files), which prints alike but is another name here: rename it in the form given (NFC)); give "
        "them with --scorers FILE.py --only\n"))


def test_a_run_kept_open_sees_a_record_edited_in_place_with_its_time_set_back(tmp_path):
    run = load_run(synthetic_run(tmp_path / "r", [1, 0]))
    assert run.unverified == []
    path = run.path / "scores.jsonl"
    before, data = path.stat(), path.read_bytes()
    with open(path, "r+b") as handle:  # as long as it was, in the same file
        handle.write(data.replace(b'"closeness":0', b'"closeness":1', 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_ino, path.stat().st_size, path.stat().st_mtime_ns) == (
        before.st_ino, before.st_size, before.st_mtime_ns)
    assert run.unverified == ["scores.jsonl: line 4 is not the line written"]


@pytest.mark.parametrize("key", ["started_at", "ended_at"])
def test_a_run_time_without_an_offset_is_read_as_utc_by_verify(tmp_path, key):
    def naive(text: str) -> str:
        info = json.loads(text)
        info[key] = info[key][:19]  # 2026-12-07T03:30:00: no offset
        return json.dumps(info, indent=2)

    run_dir = sealed_over(synthetic_run(tmp_path / "r", [1, 0]), naive)
    done = audit(tmp_path, "verify", str(run_dir))
    assert (done.returncode, done.stderr, done.stdout.splitlines()[-1]) == (0, "", "intact")
    retry = synthetic_run(tmp_path / "b", [1, 0], run_id="b" * 12,
                          parent={"run_id": "5" * 12, "path": str(run_dir), "carried": 0, "asked": 2})
    done = audit(tmp_path, "verify", str(retry))
    assert (done.returncode, done.stderr, done.stdout.splitlines()[-1]) == (0, "", "intact")
