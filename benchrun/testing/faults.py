"""Fault scenarios: real `python -m benchrun` / `benchrun-audit` processes in the fault lab (benchrun.testing.lab).

Each scenario breaks a run the way the world does (a reused directory, a second writer, a signal, SIGKILL, a lost
server, a full disk, a tampered file, a scorer that exits) and then does what a user would do to recover. It
returns an `Outcome`: how many processes it ran, how many samples ended without exactly one response, how many
with more than one, whether `verify` (called in this process) calls the final archive intact, and what each process
said. The tests assert on the details; `benchmarks/faults.py` prints the table.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from benchrun.testing.lab import Lab, Outcome


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
    with lab.holding_answers(after=2):  # the run is still going when resume comes, however fast it is
        proc = lab.start(*lab.args())
        run_dir = lab.first_run_dir()
        lab.wait_for(lambda: lab.lines(run_dir) >= 2)
        lab.audit("resume", str(run_dir), outcome=outcome)
    out, err = proc.communicate(timeout=120)
    outcome.runs += 1
    outcome.said.insert(0, (proc.returncode, err))
    return lab.judge(outcome, run_dir)


def two_writers(lab: Lab) -> Outcome:
    """Two benchrun processes started into one directory at once: one runs, the other is refused."""
    outcome, target = Outcome("two runs into one directory at once"), lab.root / "outputs" / "shared"
    procs = [lab.start(*lab.args(f"hydra.run.dir={target}")) for _ in range(2)]
    for proc in procs:
        lab.ended(proc, outcome)
    return lab.judge(outcome, target)


def signal_then_resume(lab: Lab, sig: int = signal.SIGTERM) -> Outcome:
    """A signal half-way through the run, then `resume`."""
    outcome = Outcome(f"{signal.Signals(sig).name} half-way, then resume")
    proc = lab.start(*lab.args())
    run_dir = lab.first_run_dir()
    lab.wait_for(lambda: lab.lines(run_dir) >= lab.n // 2)
    lab.stop(proc, sig, outcome)
    lab.audit("resume", str(run_dir), outcome=outcome)
    return lab.judge(outcome, run_dir)


def killed_resume(lab: Lab) -> Outcome:
    """SIGKILL, a resume SIGKILLed too, then a resume that finishes."""
    outcome = Outcome("SIGKILL, resume SIGKILLed, resume")
    proc = lab.start(*lab.args())
    run_dir = lab.first_run_dir()
    lab.wait_for(lambda: lab.lines(run_dir) >= lab.n // 3)
    lab.stop(proc, signal.SIGKILL, outcome)
    done = lab.lines(run_dir)
    proc = lab.start("resume", str(run_dir), module="benchrun.audit")
    lab.wait_for(lambda: lab.lines(run_dir) >= done + 2)
    lab.stop(proc, signal.SIGKILL, outcome)
    lab.audit("resume", str(run_dir), outcome=outcome)
    return lab.judge(outcome, run_dir)


def tampered_then_resume(lab: Lab, how: str) -> Outcome:
    """An interrupted run whose records were edited (`edit`), `duplicate`d or given a `foreign` line: resume refuses;
    resume --force drops what does not belong and finishes."""
    outcome = Outcome(f"{how} line in an interrupted run, resume, resume --force")
    proc = lab.start(*lab.args())
    run_dir = lab.first_run_dir()
    lab.wait_for(lambda: lab.lines(run_dir) >= lab.n // 2)
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
    proc = lab.start(*lab.args())
    run_dir = lab.first_run_dir()
    lab.wait_for(lambda: lab.lines(run_dir) >= lab.n // 3)
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


@contextmanager
def small_disk(path: Path, size_kb: int) -> Iterator[Path]:
    """A tmpfs of `size_kb` mounted at `path` (needs root)."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(path)], check=True,
                   capture_output=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def can_mount() -> bool:
    """Whether this process may mount a tmpfs (root, and a kernel that lets it)."""
    probe = Path(os.environ.get("TMPDIR", "/tmp")) / f"benchrun-mount-probe-{os.getpid()}"
    try:
        with small_disk(probe, 64):
            return True
    except (subprocess.CalledProcessError, OSError):
        return False
    finally:
        probe.rmdir() if probe.exists() else None


def disk_full(lab: Lab) -> Outcome:
    """outputs= on a small disk that fills mid-run: one line naming the file; resumed once space is freed."""
    outcome = Outcome("the disk fills mid-run, then resume once space is freed")
    with small_disk(lab.root / "disk", 1024) as disk:
        proc = lab.start(*lab.args(outputs=disk / "outputs"))
        lab.wait_for(lambda: bool(lab.run_dirs(disk / "outputs")))
        [run_dir] = lab.run_dirs(disk / "outputs")
        lab.wait_for(lambda: lab.lines(run_dir) >= lab.n // 4)
        ballast = disk / "ballast"
        _fill(ballast)
        lab.ended(proc, outcome)
        outcome.seen.update(status=_status(run_dir), reason=json.loads((run_dir / "run.json").read_text())["reason"],
                            leftovers=sorted(p.name for p in disk.rglob("*.tmp")))
        ballast.unlink()
        lab.audit("resume", str(run_dir), outcome=outcome)
        kept = Path(shutil.copytree(run_dir, lab.root / "recovered" / run_dir.name))  # the disk goes with the scenario
    return lab.judge(outcome, kept)


def _fill(path: Path) -> None:
    """Write `path` until the disk is full."""
    with open(path, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(bytes(4096))
        except OSError:
            pass


def signal_at(lab: Lab, delay_s: float, sig: int = signal.SIGTERM) -> Outcome:
    """`sig` `delay_s` after start: whatever the moment, a run directory's run.json says interrupted, the message
    says what was written, and (if anything was asked) resume finishes it."""
    outcome = Outcome(f"{signal.Signals(sig).name} {delay_s:.1f} s after start")
    proc = lab.start(*lab.args("runner.concurrency=1"))  # asking one at a time: the moments up to 1.8 s fall in the run
    time.sleep(delay_s)
    lab.stop(proc, sig, outcome)
    dirs = lab.run_dirs()
    if not dirs:
        return outcome
    info = json.loads((dirs[0] / "run.json").read_text())
    outcome.seen.update(status=info["status"], responses=lab.lines(dirs[0]))
    if info["manifest_id"] is None:  # stopped before anything could be asked: verified as it is, nothing to resume
        outcome.run_dir = dirs[0]
        outcome.verified = lab.call("verify", str(dirs[0]), module="benchrun.audit").returncode == 0
        return outcome
    lab.audit("resume", str(dirs[0]), outcome=outcome)
    return lab.judge(outcome, dirs[0])


def hanging_preflight(lab: Lab) -> Outcome:
    """SIGTERM while the preflight waits on a server that accepts connections and never answers."""
    outcome = Outcome("SIGTERM during the preflight")
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen(16)
        host = f"http://127.0.0.1:{mute.getsockname()[1]}"
        proc = lab.start(*lab.args(f"runner.host={host}"))
        lab.wait_for(lambda: bool(lab.run_dirs()) and (lab.run_dirs()[0] / "manifest.json").is_file())
        time.sleep(0.3)
        lab.stop(proc, signal.SIGTERM, outcome)
    [run_dir] = lab.run_dirs()
    outcome.seen["status"] = _status(run_dir)
    lab.audit("resume", str(run_dir), "--host", lab.server.url, outcome=outcome)
    return lab.judge(outcome, run_dir)


def random_kills(lab: Lab, kills: int = 20, seed: int = 0) -> Outcome:
    """SIGKILL at `kills` seeded random moments, resuming after each (each resume a target for the next kill)."""
    outcome, rng = Outcome(f"SIGKILL at {kills} random moments, resume after each"), random.Random(seed)
    proc = lab.start(*lab.args())
    run_dir = None
    for _ in range(kills):
        time.sleep(rng.uniform(0.2, 2.0))
        lab.stop(proc, signal.SIGKILL, outcome)
        run_dir = run_dir or (lab.run_dirs() or [None])[0]
        if run_dir is None or not (run_dir / "manifest.json").is_file():
            for leftover in lab.run_dirs():  # killed before the run compiled: nothing to resume, start again
                _remove(leftover)
            run_dir = None
            proc = lab.start(*lab.args())
            continue
        if json.loads((run_dir / "run.json").read_text())["status"] == "completed":
            break
        proc = lab.start("resume", str(run_dir), module="benchrun.audit")
    else:
        lab.ended(proc, outcome)
    run_dir = run_dir or lab.first_run_dir()
    if json.loads((run_dir / "run.json").read_text())["status"] != "completed":
        lab.audit("resume", str(run_dir), outcome=outcome)
    return lab.judge(outcome, run_dir)


def _remove(run_dir: Path) -> None:
    for path in sorted(run_dir.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    run_dir.rmdir()
