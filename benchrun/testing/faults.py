"""Fault scenarios: real `python -m benchrun` / `benchrun-audit` processes in the fault lab (benchrun.testing.lab).

Each scenario breaks a run the way the world does (a reused directory, a second writer, a signal, SIGKILL, a lost
server, a full disk, a tampered file, a scorer that exits) and then does what a user would do to recover. It
returns an `Outcome`: how many processes it ran, how many samples ended without exactly one response, how many
with more than one, whether `verify` (called in this process) calls the final archive intact, and what each process
said. Every fault lands at a moment the scenario waits for (the server holding its answers, a pause), never after
a guessed delay, so a scenario takes the same path each time. The tests assert on the details;
`benchmarks/faults.py` prints the table.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import socket
from pathlib import Path

from benchrun.testing.lab import SCORE_LINES, Lab, Outcome
from benchrun.testing.pause import Pause
from benchrun.testing.small_disk import fill, small_disk


def reused_directory(lab: Lab) -> Outcome:
    """Run twice into the same hydra.run.dir: the second is refused and changes nothing."""
    outcome, target = Outcome("the same run directory twice"), lab.root / "outputs" / "fixed"
    lab.run(*lab.args(f"hydra.run.dir={target}"), outcome=outcome)
    before = _snapshot(target)
    lab.run(*lab.args(f"hydra.run.dir={target}"), outcome=outcome)
    outcome.seen["unchanged"] = _snapshot(target) == before
    return lab.judge(outcome, target)


def _status(run_dir: Path) -> str:
    return json.loads((run_dir / "run.json").read_text())["status"]


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


def resume_while_running(lab: Lab) -> Outcome:
    """`resume` on a run that is still being written: refused, naming the writer."""
    outcome = Outcome("resume while the run is going")
    with lab.held_after(2, *lab.args()) as (proc, run_dir):
        lab.audit("resume", str(run_dir), outcome=outcome)
    lab.ended(proc, outcome)
    return lab.judge(outcome, run_dir)


def second_writer(lab: Lab) -> Outcome:
    """A second benchrun process into the directory a first is writing: refused, and the first finishes."""
    outcome, target = Outcome("a second run into a directory being written"), lab.root / "outputs" / "shared" / "run"
    with lab.held_after(2, *lab.args(f"hydra.run.dir={target}")) as (proc, _):
        lab.run(*lab.args(f"hydra.run.dir={target}"), outcome=outcome)
    lab.ended(proc, outcome)
    return lab.judge(outcome, target)


def signal_then_resume(lab: Lab, sig: int = signal.SIGTERM, answered: int | None = None) -> Outcome:
    """`sig` once `answered` samples (half of them unless given) are answered, then `resume`; `seen` says how many
    answers and how many graded ones the records held when the signal came."""
    answered = lab.n // 2 if answered is None else answered
    outcome = Outcome(f"{signal.Signals(sig).name} after {answered} of {lab.n} answers, then resume")
    with lab.held_after(answered, *lab.args()) as (proc, run_dir):
        outcome.seen.update(responses=lab.lines(run_dir), graded=lab.lines(run_dir, "scores.jsonl") // SCORE_LINES)
        lab.stop(proc, sig, outcome)
    lab.audit("resume", str(run_dir), outcome=outcome)
    return lab.judge(outcome, run_dir)


def killed_resume(lab: Lab) -> Outcome:
    """SIGKILL a third of the way, a resume SIGKILLed after two more answers, then a resume that finishes."""
    outcome, third = Outcome("SIGKILL, resume SIGKILLed, resume"), lab.n // 3
    with lab.held_after(third, *lab.args()) as (proc, run_dir):
        lab.stop(proc, signal.SIGKILL, outcome)
    with lab.held_after(2, "resume", str(run_dir), module="benchrun.audit", before=third) as (proc, _):
        lab.stop(proc, signal.SIGKILL, outcome)
    lab.audit("resume", str(run_dir), outcome=outcome)
    return lab.judge(outcome, run_dir)


def tampered_then_resume(lab: Lab, how: str) -> Outcome:
    """A run interrupted half-way whose records were `edited`, `duplicated` or given a `foreign` line: resume
    refuses; resume --force drops what does not belong and finishes."""
    outcome = Outcome(f"{how} line in an interrupted run, resume, resume --force")
    with lab.held_after(lab.n // 2, *lab.args()) as (proc, run_dir):
        lab.stop(proc, signal.SIGTERM, outcome)
    path = run_dir / "responses.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    if how == "edited":
        lines[1] = lines[1].replace(b'\\"answer\\": ', b'\\"answer\\": 1')
    elif how == "duplicated":
        lines.insert(3, lines[2])
    else:
        lines.append(lines[0].replace(b'"times7:a=0"', b'"times7:a=999"'))
    path.write_bytes(b"".join(lines))
    lab.audit("resume", str(run_dir), outcome=outcome)
    outcome.seen["status"] = _status(run_dir)
    lab.audit("resume", str(run_dir), "--force", outcome=outcome)
    return lab.judge(outcome, run_dir)


def lost_server(lab: Lab) -> Outcome:
    """The model server dies a third of the way through: the run stops as interrupted; resumed once it is back."""
    outcome = Outcome("the model server dies mid-run, then resume")
    with lab.held_after(lab.n // 3, *lab.args()) as (proc, run_dir):
        lab.server.stop()
        lab.ended(proc, outcome)
    outcome.seen["status"] = _status(run_dir)
    lab.server.start()
    lab.audit("resume", str(run_dir), outcome=outcome)
    return lab.judge(outcome, run_dir)


def exiting_scorer(lab: Lab) -> Outcome:
    """A scorer that calls sys.exit(0) on every answer: every answer is kept, each scorer call an error."""
    outcome = Outcome("a scorer calling sys.exit(0)")
    lab.run(*lab.args(), outcome=outcome)
    return lab.judge(outcome, lab.run_dirs()[0])


EXITING_SCORER = "import sys\n\ndef quits(response, values):\n    sys.exit(0)\n"


def disk_full(lab: Lab) -> Outcome:
    """outputs= on a small disk that fills a quarter of the way through: one line naming the file; resumed once
    space is freed."""
    outcome = Outcome("the disk fills mid-run, then resume once space is freed")
    with small_disk(lab.root / "disk", 1024) as disk:
        outputs, ballast = disk / "outputs", disk / "ballast"
        with lab.held_after(lab.n // 4, *lab.args(outputs=outputs), outputs=outputs) as (proc, run_dir):
            fill(ballast)
        lab.ended(proc, outcome)
        outcome.seen.update(status=_status(run_dir), reason=json.loads((run_dir / "run.json").read_text())["reason"],
                            leftovers=sorted(p.name for p in disk.rglob("*.tmp")))
        ballast.unlink()
        lab.audit("resume", str(run_dir), outcome=outcome)
        kept = Path(shutil.copytree(run_dir, lab.root / "recovered" / run_dir.name))  # the disk goes with the scenario
    return lab.judge(outcome, kept)


def signal_in_hydra(lab: Lab, hook: str) -> Outcome:
    """SIGTERM while Hydra runs its `hook` (benchrun.testing.pause.HOOKS), before the run claimed its directory:
    nothing may be left of it, Hydra's copies included (`seen["files"]`)."""
    outcome, marker = Outcome(f"SIGTERM in Hydra's {hook}"), lab.root / hook
    target = f"{Pause.__module__}.{Pause.__name__}"
    proc = lab.start(*lab.args(f"+hydra.callbacks.pause._target_={target}", f"+hydra.callbacks.pause.at={hook}",
                               f"+hydra.callbacks.pause.marker={marker}"))
    lab.wait_for(marker.exists)
    lab.stop(proc, signal.SIGTERM, outcome)
    outcome.seen["files"] = sorted(str(p) for p in (lab.root / "outputs").rglob("*"))
    return outcome


def signal_while_compiling(lab: Lab) -> Outcome:
    """SIGTERM while the benchmark's scorer file is imported: the run has claimed its directory and asked nothing;
    its run.json says interrupted and verify calls it intact."""
    outcome, marker = Outcome("SIGTERM while the benchmark compiles"), lab.root / "importing"
    scorer = lab.root / "bench" / "custom_scorer.py"
    scorer.write_text(f"from benchrun.testing.pause import pause\npause({str(marker)!r})\n{scorer.read_text()}")
    proc = lab.start(*lab.args())
    lab.wait_for(marker.exists)
    lab.stop(proc, signal.SIGTERM, outcome)
    [outcome.run_dir] = lab.run_dirs()
    outcome.seen["status"] = _status(outcome.run_dir)
    outcome.verified = lab.verified(outcome.run_dir)
    return outcome


def hanging_preflight(lab: Lab) -> Outcome:
    """SIGTERM while the preflight waits on a server that accepts its connection and never answers."""
    outcome = Outcome("SIGTERM during the preflight")
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen(16)
        mute.settimeout(60)
        proc = lab.start(*lab.args(f"runner.host=http://127.0.0.1:{mute.getsockname()[1]}"))
        connection, _ = mute.accept()
        with connection:
            lab.stop(proc, signal.SIGTERM, outcome)
    [run_dir] = lab.run_dirs()
    outcome.seen["status"] = _status(run_dir)
    lab.audit("resume", str(run_dir), "--host", lab.server.url, outcome=outcome)
    return lab.judge(outcome, run_dir)


def random_kills(lab: Lab, kills: int = 20, seed: int = 0) -> Outcome:
    """SIGKILL `kills` times, each after a seeded number (0 to 2) of further answers, resuming after each (each
    resume the target of the next kill); a last resume finishes."""
    outcome, rng = Outcome(f"SIGKILL {kills} times at seeded moments, resume after each"), random.Random(seed)
    args, module, recorded = lab.args(), "benchrun", 0
    for _ in range(kills):
        answered = min(rng.randint(0, 2), lab.n - 1 - recorded)
        with lab.held_after(answered, *args, module=module, before=recorded) as (proc, run_dir):
            lab.stop(proc, signal.SIGKILL, outcome)
        args, module, recorded = ["resume", str(run_dir)], "benchrun.audit", recorded + answered
    lab.audit("resume", str(run_dir), outcome=outcome)
    return lab.judge(outcome, run_dir)
