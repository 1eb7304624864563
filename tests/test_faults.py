"""Fault injection with real processes: every way a run can be broken, and that the archive keeps its promises.

Each scenario (benchrun.testing.faults) breaks a run at a moment it waits for, recovers as a user would, and reports
what every process said; these tests hold it to exact exit codes and messages, and to an archive with every sample
exactly once that `verify` calls intact."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.interrupts import SIGNALS, Interrupts
from benchrun.testing import faults
from benchrun.testing.lab import Lab, Outcome, comparable
from benchrun.testing.pause import HOOKS
from benchrun.testing.small_disk import can_mount
from tests.helpers.archives import read_jsonl

pytestmark = pytest.mark.slow


def interrupted(run_dir: Path, answered: int, n: int = 20, sig: str = "SIGTERM", ungraded: int = 0) -> str:
    """What benchrun says when `sig` interrupts its run in `run_dir` with `answered` of `n` samples answered."""
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    graded = f" ({ungraded} not graded yet)" if ungraded else ""
    return (f"benchrun: error: interrupted by {sig}: run {run_id} is recorded as 'interrupted' with {answered} of {n} "
            f"samples{graded} in {run_dir}; finish it with: benchrun-audit resume {run_dir}\n")


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
        (EXIT["ok"], ""),
        (EXIT["usage"], f"benchrun: error: {target} already holds run {run_id} (completed); nothing was changed; "
                        "pick a new directory (hydra.run.dir=...)\n")]
    assert outcome.seen == {"unchanged": True}
    whole(outcome)


def test_resume_of_a_run_being_written_names_the_writer(lab):
    outcome = faults.resume_while_running(lab)
    (refused, message), (code, err) = outcome.said
    assert (code, err) == (EXIT["ok"], "")
    assert refused == EXIT["archive"]
    assert re.fullmatch(rf"benchrun: error: in '{re.escape(str(outcome.run_dir))}': another process is writing this "
                        r"run \(pid \d+ on host \S+ since \S+\); wait for it to finish or stop it first\n", message)
    whole(outcome)


def test_a_second_run_into_a_directory_being_written_is_refused(lab):
    outcome = faults.second_writer(lab)
    target = outcome.run_dir
    run_id = json.loads((target / "run.json").read_text())["run_id"]
    assert outcome.said == [
        (EXIT["usage"], f"benchrun: error: {target} already holds run {run_id} (running); nothing was changed; "
                        f"pick a new directory (hydra.run.dir=...), or finish that run with: benchrun-audit resume "
                        f"{target}\n"),
        (EXIT["ok"], "")]
    whole(outcome)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_then_resume_counts_each_sample_once(lab, sig):
    outcome = faults.signal_then_resume(lab, sig)
    (code, err), (resumed, _) = outcome.said
    ungraded = 10 - outcome.seen["graded"]
    expected = interrupted(outcome.run_dir, 10, sig=signal.Signals(sig).name, ungraded=ungraded)
    assert (code, err, resumed) == (EXIT["interrupted"], expected, EXIT["ok"])
    assert outcome.seen["responses"] == 10
    whole(outcome)
    [entry] = json.loads((outcome.run_dir / "run.json").read_text())["history"]
    assert (entry["previous_status"], entry["previous_reason"]) == ("interrupted",
                                                                    f"interrupted by {signal.Signals(sig).name}")


def test_sigkill_then_a_killed_resume_then_resume(lab):
    outcome = faults.killed_resume(lab)
    assert [code for code, _ in outcome.said] == [-signal.SIGKILL, -signal.SIGKILL, EXIT["ok"]]
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
    assert (stopped, refused, outcome.seen["status"], forced) == (EXIT["interrupted"], EXIT["archive"], "interrupted",
                                                                  EXIT["ok"])
    assert message.startswith(f"benchrun: error: in '{outcome.run_dir / 'responses.jsonl'}': {problem}")
    assert message.endswith(": the records are not what the run wrote; resume with --force to drop what does not "
                            "belong (recorded in run.json)\n")
    whole(outcome)
    [entry] = json.loads((outcome.run_dir / "run.json").read_text())["history"]
    assert entry["forced"] is True and entry["problems"][0].startswith(f"responses.jsonl: {problem}")


def test_a_lost_server_interrupts_the_run_instead_of_burning_samples(lab):
    outcome = faults.lost_server(lab)
    (code, err), (resumed, _) = outcome.said
    assert (code, outcome.seen["status"], resumed) == (EXIT["runner"], "interrupted", EXIT["ok"])
    assert re.fullmatch(r"benchrun: error: lost the model server: ConnectionError: Failed to connect to Ollama\. .* "
                        r"\(after 2 attempts "
                        r"at sample 'times7:a=6'\); run [0-9a-f]{12} is recorded as 'interrupted' with 6 of 20 "
                        rf"samples in {re.escape(str(outcome.run_dir))}; finish it once the server is back with: "
                        rf"benchrun-audit resume {re.escape(str(outcome.run_dir))}\n", err), err
    whole(outcome)


def test_a_scorer_that_exits_costs_no_answer(tmp_path):
    with Lab(tmp_path, scorer=faults.EXITING_SCORER) as lab:
        outcome = faults.exiting_scorer(lab)
    assert outcome.said == [(EXIT["ok"], "")]
    assert (outcome.lost, outcome.duplicated, outcome.verified) == (0, 0, True)
    scores = [s for s in read_jsonl(outcome.run_dir / "scores.jsonl") if s["scorer"] == "quits"]
    assert len(scores) == 20 and {json.dumps(s["error"]) for s in scores} == {
        '{"type": "SystemExit", "message": "0"}'}
    assert json.loads((outcome.run_dir / "run.json").read_text())["status"] == "completed_with_errors"


def test_a_scorer_file_that_exits_at_import(lab, tmp_path):
    (tmp_path / "bench" / "custom_scorer.py").write_text("import sys\nsys.exit(0)\n")
    result = lab.run(*lab.args())
    assert (result.returncode, result.stderr) == (
        EXIT["usage"], "benchrun: error: in 'custom_scorer.py': cannot import: SystemExit: 0 (line 2)\n")
    [run_dir] = lab.run_dirs()
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["reason"]) == ("failed", "in 'custom_scorer.py': cannot import: SystemExit: 0 (line 2)")


@pytest.mark.skipif(not can_mount(), reason="mounting a small tmpfs needs root")
def test_a_full_disk_is_one_line_and_resumable(lab):
    outcome = faults.disk_full(lab)
    (code, err), (resumed, _) = outcome.said
    assert re.fullmatch(r"benchrun: error: disk full writing \S+/disk/outputs/\S+/responses\.jsonl\n", err), err
    assert (code, resumed) == (EXIT["archive"], EXIT["ok"])
    assert outcome.seen == {"status": "failed", "reason": err.strip()[len("benchrun: error: "):], "leftovers": []}
    whole(outcome)
    [entry] = json.loads((outcome.run_dir / "run.json").read_text())["history"]
    assert entry["previous_status"] == "failed" and entry["previous_reason"] == err.strip()[len("benchrun: error: "):]


@pytest.mark.parametrize("hook", HOOKS)
def test_a_signal_before_the_run_claimed_its_directory_leaves_nothing(lab, hook):
    """In Hydra's on_run_start nothing is written yet; in on_job_start Hydra has written its copies, and they are
    taken back."""
    outcome = faults.signal_in_hydra(lab, hook)
    assert outcome.said == [(EXIT["interrupted"], "benchrun: error: interrupted before the run started: nothing was "
                                                  "asked or recorded\n")]
    assert outcome.seen == {"files": []}


def test_a_signal_while_the_benchmark_compiles_is_recorded_with_nothing_asked(lab):
    outcome = faults.signal_while_compiling(lab)
    run_id = json.loads((outcome.run_dir / "run.json").read_text())["run_id"]
    assert outcome.said == [(EXIT["interrupted"], f"benchrun: error: interrupted by SIGTERM: nothing was asked; run "
                                                  f"{run_id} is recorded as 'interrupted' in {outcome.run_dir}; start "
                                                  "it again\n")]
    assert (outcome.seen, outcome.verified) == ({"status": "interrupted"}, True)


@pytest.mark.parametrize("answered", [0, 1, 19])
def test_a_signal_at_any_answer_claims_exactly_what_was_written(lab, answered):
    outcome = faults.signal_then_resume(lab, answered=answered)
    (code, err), (resumed, _) = outcome.said
    ungraded = answered - outcome.seen["graded"]
    expected = interrupted(outcome.run_dir, answered, ungraded=ungraded)
    assert (code, err, resumed) == (EXIT["interrupted"], expected, EXIT["ok"])
    assert outcome.seen["responses"] == answered
    whole(outcome)


def test_a_signal_during_the_preflight(lab):
    outcome = faults.hanging_preflight(lab)
    (code, err), (resumed, _) = outcome.said
    assert (code, err, outcome.seen["status"], resumed) == (EXIT["interrupted"], interrupted(outcome.run_dir, 0),
                                                            "interrupted", EXIT["ok"])
    whole(outcome)


def test_sigkill_at_twenty_moments(tmp_path):
    with Lab(tmp_path / "killed", n=50) as lab:
        outcome = faults.random_kills(lab, kills=20, seed=7)
    with Lab(tmp_path / "whole", n=50) as lab:
        lab.call(*lab.args())
        [uninterrupted] = lab.run_dirs()
    assert [code for code, _ in outcome.said] == [-signal.SIGKILL] * 20 + [EXIT["ok"]], outcome.said
    whole(outcome, n=50)
    assert comparable(outcome.run_dir) == comparable(uninterrupted)


CLAIMED_THEN_SIGNALLED = """
import signal, sys
from benchrun.__main__ import main
from benchrun.archive.writer import RunWriter

create = RunWriter.create


def claimed_then_signalled(run_dir, info, **given):
    writer = create(run_dir, info, **given)
    signal.raise_signal(signal.SIGTERM)
    return writer


RunWriter.create = claimed_then_signalled
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
    assert (result.returncode, info["status"], info["reason"]) == (EXIT["interrupted"], "interrupted",
                                                                   "interrupted by SIGTERM")


BEHIND = """import json, time
from pathlib import Path

def behind(response, values):
    while values['a'] >= 3 and not Path(__file__).with_name('release').exists():
        time.sleep(0.01)
    return int(json.loads(response)['answer'] == values['a'] * 7)
"""


def test_a_signal_while_the_scorers_are_behind_says_what_is_not_graded(tmp_path):
    """Answers are recorded while the scorer, from the fourth answer on, waits to be let go: a SIGTERM then leaves
    nine answers without scores, the message says so, and resume grades exactly those."""
    with Lab(tmp_path, n=12, latency_s=0, scorer=BEHIND) as lab:
        proc = lab.start(*lab.args("scorer_timeout_s=60"))
        run_dir = lab.first_run_dir()
        lab.wait_for(lambda: lab.lines(run_dir) == 12 and lab.lines(run_dir, "scores.jsonl") == 6)
        lab.stop(proc, signal.SIGTERM, outcome := Outcome("SIGTERM while the scorers are behind"))
        (tmp_path / "bench" / "release").touch()
        resumed = lab.audit("resume", str(run_dir))
    assert outcome.said == [(EXIT["interrupted"], interrupted(run_dir, 12, n=12, ungraded=9))]
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    [entry] = json.loads((run_dir / "run.json").read_text())["history"]
    assert sorted(entry["regraded"]) == sorted(f"times7:a={a}" for a in range(3, 12))
    assert len(read_jsonl(run_dir / "scores.jsonl")) == 24


def test_a_signal_another_thread_receives_wakes_the_idle_event_loop():
    """The kernel may hand a process's signal to any of its threads (the event loop's helpers among them), but the
    handler runs in the main thread: an event loop idle there is woken for it, so the run is interrupted at once, not
    when some answer comes (a joblib worker sent SIGTERM once went on waiting for a held answer)."""
    interrupts, woke, seen = Interrupts(), threading.Event(), []
    before = {sig: signal.getsignal(sig) for sig in SIGNALS}

    async def idle() -> None:
        loop, answered = asyncio.get_running_loop(), asyncio.Event()

        def other_thread() -> None:
            time.sleep(0.5)  # the main thread is idle in the loop's select by then
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
            seen.append(woke.wait(10))
            if not seen[0]:
                loop.call_soon_threadsafe(answered.set)
        thread = threading.Thread(target=other_thread)
        thread.start()
        try:
            await answered.wait()
        finally:
            woke.set()
            await asyncio.to_thread(thread.join)
    interrupts.install()
    try:
        with pytest.raises(KeyboardInterrupt, match="^SIGTERM$"):
            interrupts.run(idle)
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    assert seen == [True]


def test_the_asking_loop_runs_in_a_thread_that_is_not_the_main_one():
    """The Python API called from a thread of its own (a notebook's worker, say): the loop there is not woken by
    signals (Python lets only the main thread set the wakeup fd, which raised ValueError), and it runs."""
    said = []
    thread = threading.Thread(target=lambda: said.append(Interrupts().run(lambda: asyncio.sleep(0, "asked"))))
    thread.start()
    thread.join()
    assert said == ["asked"]
