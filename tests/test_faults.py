"""Fault injection with real processes: every way a run can be broken, and that the archive keeps its promises.

Each scenario (benchrun.testing.faults) breaks a run, recovers as a user would, and reports what every process said;
these tests hold it to exact exit codes and messages, and to an archive with every sample exactly once that
`verify` calls intact."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.testing import faults
from benchrun.testing.lab import Lab, Outcome, comparable
from tests.fakes import read_jsonl

pytestmark = pytest.mark.slow
INTERRUPTED = re.compile(r"benchrun: error: interrupted by (SIGTERM|SIGINT): run ([0-9a-f]{12}) is recorded as "
                         r"'interrupted' with (\d+) of (\d+) samples(?: \(\d+ not graded yet\))? in (\S+); finish it with: "
                         r"benchrun-audit "
                         r"resume (\S+)\n")


@pytest.fixture
def lab(tmp_path):
    with Lab(tmp_path) as lab:
        yield lab


def whole(outcome: Outcome, n: int = 20) -> None:
    """The recovered archive: every sample once, intact, its counts those of its records."""
    assert (outcome.lost, outcome.duplicated, outcome.verified) == (0, 0, True), outcome.said
    info = json.loads((outcome.run_dir / "run.json").read_text())
    assert info["status"] == "completed"
    assert info["counts"] == {"samples": n, "responses": n, "request_errors": 0, "scorer_errors": 0,
                              "format_invalid": 0, "cached": 0}
    assert len(read_jsonl(outcome.run_dir / "scores.jsonl")) == 2 * n


def test_a_reused_directory_is_refused_and_left_as_it_was(lab):
    outcome = faults.reused_directory(lab)
    target = outcome.run_dir
    run_id = json.loads((target / "run.json").read_text())["run_id"]
    assert outcome.said == [
        (0, ""),
        (2, f"benchrun: error: {target} already holds run {run_id} (completed); nothing was changed; pick a new "
            "directory (hydra.run.dir=...)\n")]
    assert outcome.seen == {"unchanged": True}
    whole(outcome)


def test_resume_of_a_run_being_written_names_the_writer(lab):
    outcome = faults.resume_while_running(lab)
    (code, err), (refused, message) = outcome.said
    assert (code, err) == (0, "")
    assert refused == 4
    assert re.fullmatch(rf"benchrun: error: in '{re.escape(str(outcome.run_dir))}': another process is writing this "
                        r"run \(pid \d+ on host \S+ since \S+\); wait for it to finish or stop it first\n", message)
    whole(outcome)


def test_two_runs_started_into_one_directory(lab):
    outcome = faults.two_writers(lab)
    codes = sorted(code for code, _ in outcome.said)
    assert codes == [0, 2], outcome.said
    [refusal] = [err for code, err in outcome.said if code == 2]
    assert ("another process is writing this run" in refusal or "already holds run" in refusal), refusal
    whole(outcome)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_then_resume_counts_each_sample_once(lab, sig):
    outcome = faults.signal_then_resume(lab, sig)
    (code, err), (resumed, _) = outcome.said
    match = INTERRUPTED.fullmatch(err)
    assert code == 130 and match, err
    assert (match[1], match[4], match[5], match[6]) == (signal.Signals(sig).name, "20", str(outcome.run_dir),
                                                         str(outcome.run_dir))
    assert resumed == 0
    whole(outcome)
    [entry] = json.loads((outcome.run_dir / "run.json").read_text())["history"]
    assert entry["previous_status"] == "interrupted" and entry["previous_reason"] == f"interrupted by {match[1]}"


def test_sigkill_then_a_killed_resume_then_resume(lab):
    outcome = faults.killed_resume(lab)
    assert [code for code, _ in outcome.said] == [-9, -9, 0]
    whole(outcome)
    history = json.loads((outcome.run_dir / "run.json").read_text())["history"]
    assert len(history) == 2 and all(entry["stale_lock"]["pid"] for entry in history)


@pytest.mark.parametrize("how, problem", [
    ("edited", "line 2 is not the line written"),
    ("duplicated", "line 4 is not the line written"),
    ("foreign", "1 line after line 10 not written by the run"),
])
def test_tampered_records_are_refused_then_repaired_with_force(lab, how, problem):
    outcome = faults.tampered_then_resume(lab, how)
    (stopped, _), (refused, message), (forced, _) = outcome.said
    assert (stopped, refused, outcome.seen["status"], forced) == (130, 4, "interrupted", 0)
    assert message.startswith(f"benchrun: error: in '{outcome.run_dir / 'responses.jsonl'}': {problem}")
    assert message.endswith(": the records are not what the run wrote; resume with --force to drop what does not "
                            "belong (recorded in run.json)\n")
    whole(outcome)
    [entry] = json.loads((outcome.run_dir / "run.json").read_text())["history"]
    assert entry["forced"] is True and entry["problems"][0].startswith(f"responses.jsonl: {problem}")


def test_a_lost_server_interrupts_the_run_instead_of_burning_samples(lab):
    outcome = faults.lost_server(lab)
    (code, err), (resumed, _) = outcome.said
    assert (code, outcome.seen["status"], resumed) == (3, "interrupted", 0)
    assert re.fullmatch(r"benchrun: error: lost the model server: ConnectionError: Failed to connect to Ollama\. .* "
                        r"\(after 2 attempts "
                        r"at sample 'times7:a=\d+'\); run [0-9a-f]{12} is recorded as 'interrupted' with \d+ of 20 "
                        rf"samples in {re.escape(str(outcome.run_dir))}; finish it once the server is back with: "
                        rf"benchrun-audit resume {re.escape(str(outcome.run_dir))}\n", err), err
    whole(outcome)


def test_a_scorer_that_exits_costs_no_answer(tmp_path):
    with Lab(tmp_path, scorer=faults.EXITING_SCORER) as lab:
        outcome = faults.exiting_scorer(lab)
    assert outcome.said == [(0, "")]
    assert (outcome.lost, outcome.duplicated, outcome.verified) == (0, 0, True)
    scores = [s for s in read_jsonl(outcome.run_dir / "scores.jsonl") if s["scorer"] == "quits"]
    assert len(scores) == 20 and {json.dumps(s["error"]) for s in scores} == {
        '{"type": "SystemExit", "message": "0"}'}
    assert json.loads((outcome.run_dir / "run.json").read_text())["status"] == "completed_with_errors"


def test_a_scorer_file_that_exits_at_import(lab, tmp_path):
    (tmp_path / "bench" / "custom_scorer.py").write_text("import sys\nsys.exit(0)\n")
    result = lab.run(*lab.args())
    assert (result.returncode, result.stderr) == (
        2, "benchrun: error: in 'custom_scorer.py': cannot import: SystemExit: 0 (line 2)\n")
    [run_dir] = lab.run_dirs()
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["reason"]) == ("failed", "in 'custom_scorer.py': cannot import: SystemExit: 0 (line 2)")


@pytest.mark.skipif(not faults.can_mount(), reason="mounting a small tmpfs needs root")
def test_a_full_disk_is_one_line_and_resumable(lab):
    outcome = faults.disk_full(lab)
    (code, err), (resumed, _) = outcome.said
    assert re.fullmatch(r"benchrun: error: disk full writing \S+/disk/outputs/\S+/"
                        r"(responses\.jsonl|scores\.jsonl|records\.sha256|run\.json)\n", err), err
    assert (code, resumed) == (4, 0)
    assert outcome.seen == {"status": "failed", "reason": err.strip()[len("benchrun: error: "):], "leftovers": []}
    whole(outcome)
    [entry] = json.loads((outcome.run_dir / "run.json").read_text())["history"]
    assert entry["previous_status"] == "failed" and entry["previous_reason"] == err.strip()[len("benchrun: error: "):]


@pytest.mark.parametrize("delay_s", [0.3, 0.6, 0.9, 1.2, 1.5, 1.8])
def test_a_signal_at_any_moment_claims_nothing_that_was_not_written(lab, delay_s):
    outcome = faults.signal_at(lab, delay_s)
    code, err = outcome.said[0]
    if not outcome.seen:  # before the run claimed a directory: nothing of benchrun's, nor Hydra's, is left
        assert not [p for p in (lab.root / "outputs").rglob("*") if p.is_file()]
        assert (code, err) in [(-15, ""), (130, "benchrun: error: interrupted before the run started: nothing was "
                                                "asked or recorded\n")]
        return
    assert code == 130 and outcome.seen["status"] == "interrupted"
    match = INTERRUPTED.fullmatch(err)
    if match is None:  # stopped before the run compiled: nothing to resume
        assert re.fullmatch(r"benchrun: error: interrupted by SIGTERM: nothing was asked; run [0-9a-f]{12} is "
                            r"recorded as 'interrupted' in \S+; start it again\n", err), err
        return
    assert int(match[3]) == outcome.seen["responses"], "the message claims what the records hold"
    whole(outcome)


def test_a_signal_during_the_preflight(lab):
    outcome = faults.hanging_preflight(lab)
    (code, err), (resumed, _) = outcome.said
    match = INTERRUPTED.fullmatch(err)
    assert (code, outcome.seen["status"], resumed) == (130, "interrupted", 0) and match and match[3] == "0", err
    whole(outcome)


def test_sigkill_at_twenty_random_moments(tmp_path):
    with Lab(tmp_path / "killed", n=50, latency_s=0.3) as lab:
        outcome = faults.random_kills(lab, kills=20, seed=7)
    with Lab(tmp_path / "whole", n=50) as lab:
        lab.call(*lab.args())
        [uninterrupted] = lab.run_dirs()
    assert sum(code == -9 for code, _ in outcome.said) == 20, outcome.said
    whole(outcome, n=50)
    assert comparable(outcome.run_dir) == comparable(uninterrupted)


def test_a_signal_while_hydra_writes_its_copies_leaves_nothing(tmp_path):
    """The window the SIGTERM-at-any-moment tests hit now and then: Hydra has written .hydra/ and the run has not
    claimed its directory when the signal arrives; what Hydra made is taken back."""
    from omegaconf import OmegaConf

    from benchrun import callbacks, takeback

    run_dir = tmp_path / "outputs" / "2026-12-01" / "12-00-00.000000_bench_llama3.2"
    callbacks.RunDirCheck().on_run_start(OmegaConf.create({"dry_run": False, "hydra": {"run": {"dir": str(run_dir)}}}))
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "config.yaml").write_text("task: {}\n")
    takeback.take_back_unstarted()
    assert list((tmp_path / "outputs").rglob("*")) == []


CLAIMED_THEN_SIGNALLED = """
import signal, sys
from benchrun import app
from benchrun.__main__ import main

create = app.RunWriter.create


def claimed_then_signalled(run_dir, info):
    writer = create(run_dir, info)
    signal.raise_signal(signal.SIGTERM)
    return writer


app.RunWriter.create = claimed_then_signalled
sys.argv = ["benchrun", *sys.argv[1:]]
main()
"""


def test_a_signal_as_the_directory_is_claimed_is_recorded_as_interrupted(tmp_path):
    """The moment after the run took its directory's lock and before run.json exists: the signal waits until the
    run can be recorded as interrupted (it once left a bare run.lock behind). A process of its own: the signal is
    real."""
    result = subprocess.run([sys.executable, "-c", CLAIMED_THEN_SIGNALLED, "runner.host=http://127.0.0.1:9",
                             f"outputs={tmp_path / 'outputs'}"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    [run_json] = (tmp_path / "outputs").glob("*/*/run.json")
    info = json.loads(run_json.read_text())
    assert (result.returncode, info["status"], info["reason"]) == (130, "interrupted", "interrupted by SIGTERM")


SLOW = """import json, time

def slow(response, values):
    time.sleep(0.5)
    return int(json.loads(response)['answer'] == values['a'] * 7)
"""


def test_a_signal_while_the_scorers_are_behind_says_what_is_not_graded(tmp_path):
    """Answers are recorded while a slow scorer works; a SIGTERM then leaves answers without scores, the message
    says how many, and resume grades exactly those."""
    with Lab(tmp_path, n=12, latency_s=0, scorer=SLOW) as lab:
        proc = lab.start(*lab.args("runner.concurrency=1"))
        run_dir = lab.first_run_dir()
        lab.wait_for(lambda: lab.lines(run_dir) >= 12)
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        graded = sum(s["scorer"] == "format_valid" for s in read_jsonl(run_dir / "scores.jsonl"))
        assert proc.returncode == 130 and graded < 12, err
        assert f"with 12 of 12 samples ({12 - graded} not graded yet) in {run_dir}" in err, err
        assert INTERRUPTED.fullmatch(err), err
        resumed = lab.audit("resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    [entry] = json.loads((run_dir / "run.json").read_text())["history"]
    assert len(entry["regraded"]) == 12 - graded
    assert len(read_jsonl(run_dir / "scores.jsonl")) == 24
