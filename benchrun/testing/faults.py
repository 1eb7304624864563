"""Fault scenarios against real `python -m benchrun` / `benchrun-audit` processes and the fake Ollama server.

Each scenario breaks a run the way the world does (a reused directory, a second writer, a signal, SIGKILL, a lost
server, a full disk, a tampered file, a scorer that exits) and then does what a user would do to recover. It
returns an `Outcome`: how many processes it ran, how many samples ended without exactly one response, how many
with more than one, whether `verify` (called in this process) calls the final archive intact, and what each process
said. The tests assert on the details; `benchmarks/faults.py` prints the table.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from benchrun.speed import WALL_CLOCK
from benchrun.testing.chat import default_responder
from benchrun.testing.inprocess import child_env, cli
from benchrun.testing.ollama_server import ChatRequest, FakeOllama, Reply

SCORER = "import json\n\ndef times7(response, values):\n    return int(json.loads(response)['answer'] == values['a'] * 7)\n"


def half_right(req: ChatRequest) -> Reply | str:
    """`find the product of A and 7`: right for even A, 0 for odd A; any other prompt (runner=openai's probe, say)
    a valid instance of its format."""
    words = req.prompt.split()
    if words[:4] != ["find", "the", "product", "of"] or not words[4:5] or not words[4].isdigit():
        return default_responder(req)
    a = int(words[4])
    return json.dumps({"answer": a * 7 if a % 2 == 0 else 0})


@dataclass
class Outcome:
    """What a scenario left behind, once recovered."""

    fault: str
    runs: int = 0
    lost: int = 0
    duplicated: int = 0
    verified: bool = False
    said: list[tuple[int, str]] = field(default_factory=list)
    """(exit code, stderr) of every process, in order."""
    seen: dict[str, Any] = field(default_factory=dict)
    """What the scenario saw on the way: the status a fault left, the files it left behind, ..."""
    run_dir: Path | None = None


class Lab:
    """A scratch directory holding a benchmark of `n` samples (`find the product of A and 7`, a custom scorer) and a
    fake Ollama server; runs benchrun and benchrun-audit there, as processes (`start`, `run`, `audit`) or in this
    process (`call`)."""

    def __init__(self, root: Path, n: int = 20, latency_s: float = 0.05, scorer: str = SCORER,
                 responder: Callable[[ChatRequest], Reply | str] = half_right):
        self.root, self.n = root, n
        bench = root / "bench"
        bench.mkdir(parents=True, exist_ok=True)
        (bench / "custom_scorer.py").write_text(scorer)
        (bench / "tasks.yml").write_text(
            "- name: times7\n  template: 'find the product of {a} and 7'\n"
            f"  values:\n    a: {list(range(n))}\n  reference: calculated\n  scorer: {_scorer_name(scorer)}\n"
            "  format: IntAnswer\n")
        self.server = FakeOllama(responder=responder, latency_s=latency_s)

    def __enter__(self) -> Lab:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    @contextmanager
    def holding_answers(self, after: int) -> Iterator[None]:
        """The server answers `after` chat requests, then holds the others until the block ends."""
        respond, released, answered = self.server.responder, threading.Event(), itertools.count()

        def held(req: ChatRequest) -> Reply | str:
            if next(answered) >= after:
                released.wait(60)
            return respond(req)

        self.server.responder = held
        try:
            yield
        finally:
            released.set()
            self.server.responder = respond

    def args(self, *extra: str, outputs: Path | None = None) -> list[str]:
        """A run of the lab's benchmark that asks the server every time (cache=false): faults are about asking."""
        return ["task.path=bench", f"runner.host={self.server.url}", f"outputs={outputs or self.root / 'outputs'}",
                "runner.retries=1", "runner.backoff_s=0.05", "cache=false", *extra]

    def start(self, *args: str, module: str = "benchrun") -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", module, *args], cwd=self.root, env=child_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, *args: str, module: str = "benchrun", outcome: Outcome | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        proc = self.start(*args, module=module)
        out, err = proc.communicate(timeout=timeout)
        return _noted(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), outcome)

    def call(self, *args: str, module: str = "benchrun", outcome: Outcome | None = None) -> subprocess.CompletedProcess:
        """`run`, in this process (benchrun.testing.inprocess)."""
        return _noted(cli(*args, cwd=self.root, module=module), outcome)

    def audit(self, *args: str, outcome: Outcome | None = None) -> subprocess.CompletedProcess:
        return self.run(*args, module="benchrun.audit", outcome=outcome)

    def stop(self, proc: subprocess.Popen, sig: int, outcome: Outcome) -> None:
        """Send `sig`, wait for the process and note what it said."""
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        outcome.runs += 1
        outcome.said.append((proc.returncode, err))

    def run_dirs(self, outputs: Path | None = None) -> list[Path]:
        return sorted(p.parent for p in (outputs or self.root / "outputs").glob("*/*/run.json"))

    def wait_for(self, condition: Callable[[], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError("the condition did not come true in time")
            time.sleep(0.01)

    def lines(self, run_dir: Path, name: str = "responses.jsonl") -> int:
        path = run_dir / name
        return path.read_bytes().count(b"\n") if path.is_file() else 0

    def first_run_dir(self) -> Path:
        self.wait_for(lambda: bool(self.run_dirs()))
        return self.run_dirs()[0]

    def judge(self, outcome: Outcome, run_dir: Path) -> Outcome:
        """Count the samples lost and duplicated in `run_dir`, and verify it."""
        ids = Counter(json.loads(line)["id"] for line in (run_dir / "responses.jsonl").read_text().splitlines())
        expected = {f"times7:a={a}" for a in range(self.n)}
        outcome.lost = len(expected - ids.keys()) + len(ids.keys() - expected)
        outcome.duplicated = sum(1 for count in ids.values() if count > 1)
        outcome.verified = self.call("verify", str(run_dir), module="benchrun.audit").returncode == 0
        outcome.run_dir = run_dir
        return outcome


def _noted(result: subprocess.CompletedProcess, outcome: Outcome | None) -> subprocess.CompletedProcess:
    """`result`, its exit code and stderr noted in `outcome` (when given)."""
    if outcome is not None:
        outcome.runs += 1
        outcome.said.append((result.returncode, result.stderr))
    return result


def _scorer_name(source: str) -> str:
    return source.split("def ", 1)[1].split("(", 1)[0]


def comparable(run_dir: Path) -> dict[str, Any]:
    """A run's records and summary without wall-clock fields, for comparing with an uninterrupted run."""
    def records(name: str) -> list[str]:
        rows = [json.loads(line) for line in (run_dir / name).read_text().splitlines()]
        for row in rows:
            row.pop("seconds", None)
        return sorted(json.dumps(row, sort_keys=True) for row in rows)
    summary = json.loads((run_dir / "summary.json").read_text())
    for figure in WALL_CLOCK:
        summary["speed"].pop(figure)
    return {"responses": records("responses.jsonl"), "scores": records("scores.jsonl"), "summary": summary,
            "counts": json.loads((run_dir / "run.json").read_text())["counts"]}


# -- scenarios ------------------------------------------------------------------------------------------------------


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
        _, err = proc.communicate(timeout=120)
        outcome.runs += 1
        outcome.said.append((proc.returncode, err))
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
    _, err = proc.communicate(timeout=120)
    outcome.runs += 1
    outcome.said.append((proc.returncode, err))
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
        _, err = proc.communicate(timeout=120)
        outcome.runs += 1
        outcome.said.append((proc.returncode, err))
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
        _, err = proc.communicate(timeout=120)
        outcome.runs += 1
        outcome.said.append((proc.returncode, err))
    run_dir = run_dir or lab.first_run_dir()
    if json.loads((run_dir / "run.json").read_text())["status"] != "completed":
        lab.audit("resume", str(run_dir), outcome=outcome)
    return lab.judge(outcome, run_dir)


def _remove(run_dir: Path) -> None:
    for path in sorted(run_dir.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    run_dir.rmdir()
