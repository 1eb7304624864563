"""`resume`: finishing a run whose executor was killed, exactly once per sample."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import half_right, untimed_records, untimed_summary
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun, make_run
from tests.helpers.killed import KILLED_AT, N, killed_run, write_bench

pytestmark = pytest.mark.slow
# killed_run kills a real `python -m benchrun` with SIGKILL: that process stays; resume and verify run in this process.


def test_resume_after_sigkill_asks_each_missing_sample_once(tmp_path):
    write_bench(tmp_path / "bench")
    with FakeOllama(responder=half_right, latency_s=0.05) as server:
        run_dir = killed_run(tmp_path, server)
        before = json.loads((run_dir / "run.json").read_text())
        asked_before = len(server.requests)
        assert before["status"] == "running"
        answered = {r["id"] for r in read_jsonl(run_dir / "responses.jsonl")}
        assert len(answered) == KILLED_AT
        result = call_benchrun("resume", before["run_id"][:8], "--root", "outputs", cwd=tmp_path,
                              module="benchrun.audit")
        assert result.returncode == EXIT["ok"], result.stderr
        asked_after = {r["messages"][-1]["content"] for r in server.requests[asked_before:] if r["path"] == "/api/chat"}
    responses = read_jsonl(run_dir / "responses.jsonl")
    assert sorted(r["id"] for r in responses) == sorted(f"times7:a={a},b=7" for a in range(N))
    prompts = {f"times7:a={a},b=7": f"find the product of {a} and 7" for a in range(N)}
    assert asked_after == {prompts[i] for i in prompts.keys() - answered}
    scores = read_jsonl(run_dir / "scores.jsonl")
    assert sorted((s["id"], s["scorer"]) for s in scores) == sorted(
        (f"times7:a={a},b=7", scorer) for a in range(N) for scorer in ("format_valid", "calculated_answer"))

    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "completed" and info["run_id"] == before["run_id"]
    assert info["counts"] == {"samples": N, "responses": N, "request_errors": 0, "scorer_errors": 0,
                              "format_invalid": 0, "cached": 0}
    [entry] = info["history"]
    assert (entry["previous_status"], entry["forced"], entry["changed_sources"]) == ("running", False, [])

    uninterrupted = make_run(tmp_path / "again", f"task.path={tmp_path / 'bench'}", responder=half_right)
    for name in ("responses.jsonl", "scores.jsonl"):
        assert untimed_records(run_dir, name) == untimed_records(uninterrupted, name)
    assert untimed_summary(run_dir) == untimed_summary(uninterrupted)
    speed = json.loads((run_dir / "summary.json").read_text())["speed"]
    assert (speed["n"], speed["wall_s"], speed["samples_per_s"]) == (N, None, None)  # the killed session's time is lost
    assert "completed: 60/60 samples" in result.stdout


def test_resume_refuses_changed_sources_unless_forced(tmp_path):
    bench = write_bench(tmp_path / "bench")
    with FakeOllama(responder=half_right, latency_s=0.05) as server:
        run_dir = killed_run(tmp_path, server)
        (bench / "custom_scorer.py").write_text((bench / "custom_scorer.py").read_text() + "\n# edited\n")
        refused = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
        assert refused.returncode == EXIT["archive"]
        assert refused.stderr == (
            "benchrun: error: the benchmark's sources changed since run "
            f"{json.loads((run_dir / 'run.json').read_text())['run_id']}: custom_scorer.py (changed); "
            "resume with --force to use them anyway (recorded in run.json)\n")
        forced = call_benchrun("resume", str(run_dir), "--force", cwd=tmp_path, module="benchrun.audit")
        assert forced.returncode == EXIT["ok"], forced.stderr
    [entry] = json.loads((run_dir / "run.json").read_text())["history"]
    assert (entry["forced"], entry["changed_sources"]) == (True, ["custom_scorer.py (changed)"])


def test_resume_cuts_off_half_written_lines_quietly(tmp_path):
    write_bench(tmp_path / "bench")
    with FakeOllama(responder=half_right, latency_s=0.05) as server:
        run_dir = killed_run(tmp_path, server)
        with open(run_dir / "responses.jsonl", "ab") as handle:
            handle.write(b'{"id": "times7:a=59')
        with open(run_dir / "scores.jsonl", "ab") as handle:
            handle.write(b'{"id": "half')
        result = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
        assert result.returncode == EXIT["ok"], result.stderr
    ids = [r["id"] for r in read_jsonl(run_dir / "responses.jsonl")]
    assert sorted(ids) == sorted(f"times7:a={a},b=7" for a in range(N))
    assert len(read_jsonl(run_dir / "scores.jsonl")) == 2 * N
    [entry] = json.loads((run_dir / "run.json").read_text())["history"]
    assert entry["tail_lines_cut"] == {"responses.jsonl": 1, "scores.jsonl": 1}
    assert (entry["dropped_lines"], entry["problems"]) == ({}, [])
    assert verify(run_dir).returncode == EXIT["ok"]


def test_resume_cuts_off_the_score_lines_of_several_answers_written_together(tmp_path):
    """The scores of every grading done by then are one write, then their digests: a kill between the two leaves the
    score lines of several answers without digests, which is a kill's tail, not lines the run did not write."""
    write_bench(tmp_path / "bench")
    with FakeOllama(responder=half_right, latency_s=0.05) as server:
        run_dir = killed_run(tmp_path, server)
        digests = (run_dir / "records.sha256").read_bytes().splitlines(keepends=True)
        scores = [i for i, line in enumerate(digests) if line.startswith(b"s ")]
        (run_dir / "records.sha256").write_bytes(b"".join(d for i, d in enumerate(digests) if i not in scores[-4:]))
        cut = {line["id"] for line in read_jsonl(run_dir / "scores.jsonl")[len(scores) - 4:len(scores)]}
        result = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
        assert result.returncode == EXIT["ok"], result.stderr
    [entry] = json.loads((run_dir / "run.json").read_text())["history"]
    assert (entry["tail_lines_cut"], entry["dropped_lines"], entry["problems"]) == ({"scores.jsonl": 4}, {}, [])
    assert len(cut) == 2 and cut <= set(entry["regraded"])
    assert len(read_jsonl(run_dir / "scores.jsonl")) == 2 * N
    assert verify(run_dir).returncode == EXIT["ok"]


def test_resume_of_a_run_written_by_0_2_goes_on_in_lean_digest_lines(tmp_path):
    """A run killed under benchrun 0.2 (records.sha256 lines `<file> <line> <sha256>`) resumes and verifies; the
    lines it adds are lean."""
    write_bench(tmp_path / "bench")
    with FakeOllama(responder=half_right, latency_s=0.05) as server:
        run_dir = killed_run(tmp_path, server)
        old = digests_as_0_2(run_dir)
        result = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
        assert result.returncode == EXIT["ok"], result.stderr
    lines = (run_dir / "records.sha256").read_bytes().splitlines(keepends=True)
    assert lines[:len(old)] == old and len(lines) == 3 * N
    assert all(len(line) == 35 and line[:2] in (b"r ", b"s ") for line in lines[len(old):])
    assert verify(run_dir).returncode == EXIT["ok"]


def digests_as_0_2(run_dir: Path) -> list[bytes]:
    """Rewrite the whole lines of records.sha256 as benchrun 0.2 wrote them (`<file> <line> <sha256>`); those lines."""
    names, numbers, old = {b"r": "responses.jsonl", b"s": "scores.jsonl"}, {b"r": 0, b"s": 0}, []
    records = {tag: (run_dir / name).read_bytes().splitlines(keepends=True) for tag, name in names.items()}
    for lean in (run_dir / "records.sha256").read_bytes().splitlines(keepends=True):
        if lean.endswith(b"\n"):
            tag = lean[:1]
            numbers[tag] += 1
            line = records[tag][numbers[tag] - 1]
            old.append(f"{names[tag]} {numbers[tag]} {hashlib.sha256(line).hexdigest()}\n".encode())
    (run_dir / "records.sha256").write_bytes(b"".join(old))
    return old


def verify(run_dir: Path) -> subprocess.CompletedProcess:
    return call_benchrun("verify", str(run_dir), cwd=run_dir, module="benchrun.audit")


def test_resume_refuses_a_removed_line_and_force_regrades_its_sample(tmp_path):
    write_bench(tmp_path / "bench")
    with FakeOllama(responder=half_right, latency_s=0.05) as server:
        run_dir = killed_run(tmp_path, server)
        ungraded = ({r["id"] for r in read_jsonl(run_dir / "responses.jsonl")}
                    - {s["id"] for s in read_jsonl(run_dir / "scores.jsonl")})
        lines = (run_dir / "scores.jsonl").read_bytes().splitlines(keepends=True)
        first = json.loads(lines[0])
        assert first["scorer"] == "format_valid"
        (run_dir / "scores.jsonl").write_bytes(b"".join(lines[:1] + lines[2:]))
        refused = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
        assert refused.returncode == EXIT["archive"]
        assert refused.stderr.startswith(f"benchrun: error: in '{run_dir / 'scores.jsonl'}': line 2 is not the line "
                                         "written (")
        assert refused.stderr.endswith("the records are not what the run wrote; resume with --force to drop what "
                                       "does not belong (recorded in run.json)\n")
        assert json.loads((run_dir / "run.json").read_text())["status"] == "running"
        forced = call_benchrun("resume", str(run_dir), "--force", cwd=tmp_path, module="benchrun.audit")
        assert forced.returncode == EXIT["ok"], forced.stderr
    scores = read_jsonl(run_dir / "scores.jsonl")
    assert sorted(s["scorer"] for s in scores if s["id"] == first["id"]) == ["calculated_answer", "format_valid"]
    assert len(scores) == 2 * N
    [entry] = json.loads((run_dir / "run.json").read_text())["history"]
    assert entry["forced"] is True and sorted(entry["regraded"]) == sorted(ungraded | {first["id"]})
    assert entry["problems"][0].startswith("scores.jsonl: line 2 is not the line written")
    assert verify(run_dir).returncode == EXIT["ok"]


def test_a_finished_run_has_nothing_to_resume(tmp_path):
    run_dir = make_run(tmp_path, "task=folderbench")
    result = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert (result.returncode, result.stderr) == (
        EXIT["archive"], f"benchrun: error: in '{run_dir}': run {run_id} is completed; nothing to resume\n")
