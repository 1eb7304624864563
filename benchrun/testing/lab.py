"""The fault lab: a scratch directory with a small benchmark and a fake Ollama server, where benchrun and
benchrun-audit run as real processes (or in this process) and a scenario notes what each said (`Outcome`)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from benchrun.archive.speed import WALL_CLOCK
from benchrun.core.errors import EXIT
from benchrun.testing.chat import Responder, default_responder
from benchrun.testing.holding import Hold, holding_answers
from benchrun.testing.inprocess import child_env, cli
from benchrun.testing.ollama_server import ChatRequest, FakeOllama, Reply

SCORER = ("import json\n\ndef times7(response, values):\n"
          "    return int(json.loads(response)['answer'] == values['a'] * 7)\n")
SCORE_LINES = 2
"""Score lines per graded answer in a lab's run: format_valid and the lab's one scorer."""


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
                 responder: Responder = half_right):
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

    def holding_answers(self, after: int) -> ContextManager[Hold]:
        """The server answers `after` chat requests, then holds the others until the block ends."""
        return holding_answers(self.server, after)

    @contextmanager
    def held_after(self, answered: int, *args: str, module: str = "benchrun", outputs: Path | None = None,
                   before: int = 0) -> Iterator[tuple[subprocess.Popen, Path]]:
        """`start(*args)` with the server answering `answered` chat requests and holding the rest until the block
        ends; yields the process and its run directory once it holds `before + answered` answers and waits for the
        next. (The scores of the last answers may not be written yet: they are, as the next answer comes.)"""
        with self.holding_answers(after=answered) as hold:
            proc = self.start(*args, module=module)
            run_dir, recorded = self.first_run_dir(outputs), before + answered
            self.wait_for(lambda: hold.holding and self.lines(run_dir) == recorded)
            yield proc, run_dir

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
        self.ended(proc, outcome)

    def ended(self, proc: subprocess.Popen, outcome: Outcome) -> None:
        """Wait for the process to end and note what it said."""
        _, err = proc.communicate(timeout=120)
        outcome.runs += 1
        outcome.said.append((proc.returncode, err))

    def run_dirs(self, outputs: Path | None = None) -> list[Path]:
        return sorted(p.parent for p in (outputs or self.root / "outputs").glob("*/*/run.json"))

    def wait_for(self, condition: Callable[[], bool], timeout: float = 60) -> None:
        wait_for(condition, timeout)

    def lines(self, run_dir: Path, name: str = "responses.jsonl") -> int:
        return line_count(run_dir / name)

    def first_run_dir(self, outputs: Path | None = None) -> Path:
        self.wait_for(lambda: bool(self.run_dirs(outputs)))
        return self.run_dirs(outputs)[0]

    def judge(self, outcome: Outcome, run_dir: Path) -> Outcome:
        """Count the samples lost and duplicated in `run_dir`, and verify it."""
        ids = Counter(json.loads(line)["id"] for line in (run_dir / "responses.jsonl").read_text().splitlines())
        expected = {f"times7:a={a}" for a in range(self.n)}
        outcome.lost = len(expected - ids.keys()) + len(ids.keys() - expected)
        outcome.duplicated = sum(1 for count in ids.values() if count > 1)
        outcome.verified, outcome.run_dir = self.verified(run_dir), run_dir
        return outcome

    def verified(self, run_dir: Path) -> bool:
        """Whether `benchrun-audit verify` (in this process) calls `run_dir` intact."""
        return self.call("verify", str(run_dir), module="benchrun.audit").returncode == EXIT["ok"]


def wait_for(condition: Callable[[], bool], timeout: float = 60) -> None:
    """Return once `condition()` is true; TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the condition did not come true in time")
        time.sleep(0.01)


def line_count(path: Path) -> int:
    """The whole lines of the file at `path` (0 when there is none)."""
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def _noted(result: subprocess.CompletedProcess, outcome: Outcome | None) -> subprocess.CompletedProcess:
    """`result`, its exit code and stderr noted in `outcome` (when given)."""
    if outcome is not None:
        outcome.runs += 1
        outcome.said.append((result.returncode, result.stderr))
    return result


def _scorer_name(source: str) -> str:
    return source.split("def ", 1)[1].split("(", 1)[0]


def untimed_records(run_dir: Path, name: str) -> list[str]:
    """A record file's lines without the wall-clock `seconds`, as sorted canonical JSON."""
    rows = [json.loads(line) for line in (run_dir / name).read_text().splitlines()]
    for row in rows:
        row.pop("seconds", None)
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


def untimed_summary(run_dir: Path) -> dict[str, Any]:
    """summary.json without the speed figures the wall clock measured."""
    summary = json.loads((run_dir / "summary.json").read_text())
    for figure in WALL_CLOCK:
        summary["speed"].pop(figure)
    return summary


def comparable(run_dir: Path) -> dict[str, Any]:
    """A run's records and summary without wall-clock fields, for comparing with an uninterrupted run."""
    return {"responses": untimed_records(run_dir, "responses.jsonl"),
            "scores": untimed_records(run_dir, "scores.jsonl"), "summary": untimed_summary(run_dir),
            "counts": json.loads((run_dir / "run.json").read_text())["counts"]}
