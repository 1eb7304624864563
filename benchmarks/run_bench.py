"""How much time and memory benchrun adds to the model's own time: benchrun vs. a bare asyncio loop.

    python benchmarks/run_bench.py [--quick | --full | --n N] [--repeats K]

Each scenario asks the same N structured prompts ("find the product of {a} and {b}", format IntAnswer)
of the fake Ollama server (`python -m benchrun.testing.ollama_server`, a fresh process per measurement):
- bare: a worker pool of C tasks around the official `ollama.AsyncClient().chat`, in this process;
  nothing written, nothing scored;
- benchrun: a real `python -m benchrun` subprocess on the same prompts as a list-style benchmark
  (calculated reference, a custom scorer), the progress bar live as on a terminal.
"execute s" is manifest.json written -> run.json's `ended_at` (preflight, asking, grading, archiving, summary);
"wall - start-up" is the subprocess's wall time minus that of a dry run of the same benchmark. CPU columns
are the client's CPU per sample (benchrun: run minus dry run), which shared machines disturb far less than
wall time. Every figure is the best of K repeats, bare and benchrun measured in turn.

Targets (issue 3, "Speed"): instant server, concurrency 1 and 8: execute <= 1.3x bare; 50 ms per request
and a server serving 8 at once, concurrency 8: execute <= 1.25x ideal (N x 50 ms / 8); memory flat in N.
Scenario c uses N=2,000 by default (ideal 12.5 s); `--full` runs it at N=10,000 (ideal 62.5 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import ollama
import yaml

from benchrun.formats import IntAnswer

MODEL = "llama3.2"
OPTIONS = {"temperature": 0, "seed": 0}
TEMPLATE = "find the product of {a} and {b}"
B = 7
SCORER = '''import json


def calculated_answer(response, values):
    return int(json.loads(response)["answer"] == values["a"] * values["b"])
'''
LIVE_TERMINAL = {"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"}
"""Makes rich draw the progress bar into the pipe, so its per-sample cost is measured too."""
NO_SERVER = "http://127.0.0.1:9"
"""The host given to dry runs, which call no model."""
BARE_RATIO, IDEAL_RATIO = 1.3, 1.25
FLAT_MB = 2.0
"""Memory is flat in N when what a run adds over its dry run's peak (the compile) grows by at most this."""


@dataclass(frozen=True)
class Scenario:
    """One row: N prompts at concurrency C against a server with this latency and parallelism."""

    label: str
    n: int
    concurrency: int
    latency_s: float = 0.0
    max_parallel: int | None = None

    @property
    def ideal_s(self) -> float | None:
        """The model's own time when the server is the only cost: N x latency / requests served at once."""
        if not self.latency_s:
            return None
        return self.n * self.latency_s / min(self.concurrency, self.max_parallel or self.concurrency)


@dataclass(frozen=True)
class Timing:
    """Wall and CPU seconds of one measurement, and the peak RSS when it is a subprocess."""

    seconds: float
    cpu_s: float
    rss_mb: float = 0.0


@dataclass(frozen=True)
class Row:
    """The measured figures of one scenario (each the best of the repeats)."""

    scenario: Scenario
    bare: Timing
    run: Timing
    startup: Timing
    execute_s: float

    @property
    def ratio(self) -> float:
        return self.execute_s / self.bare.seconds

    @property
    def bare_cpu_us(self) -> float:
        return self.bare.cpu_s / self.scenario.n * 1e6

    @property
    def run_cpu_us(self) -> float:
        """The run's CPU per sample, less what its dry run (start-up and compile) took."""
        return (self.run.cpu_s - self.startup.cpu_s) / self.scenario.n * 1e6


def prompts(n: int) -> list[str]:
    return [TEMPLATE.format(a=a, b=B) for a in range(n)]


def write_benchmark(root: Path, n: int) -> Path:
    """A list-style benchmark of one task whose n samples are exactly `prompts(n)`."""
    bench = root / f"bench{n}"
    bench.mkdir()
    task = {"name": "product", "template": TEMPLATE, "values": {"a": list(range(n)), "b": [B] * n},
            "reference": "calculated", "scorer": "calculated_answer", "format": "IntAnswer"}
    (bench / "tasks.yml").write_text(yaml.safe_dump([task], sort_keys=False), encoding="utf-8")
    (bench / "custom_scorer.py").write_text(SCORER, encoding="utf-8")
    return bench


@contextmanager
def fake_server(scenario: Scenario) -> Iterator[str]:
    """The fake Ollama in its own process, with the scenario's latency; yields its URL."""
    args = [sys.executable, "-m", "benchrun.testing.ollama_server", "--port", "0", "--models", MODEL,
            "--latency", str(scenario.latency_s)]
    if scenario.max_parallel:
        args += ["--max-parallel", str(scenario.max_parallel)]
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True) as server:
        try:
            yield server.stdout.readline().strip()
        finally:
            server.terminate()


async def bare_loop(url: str, questions: list[str], concurrency: int) -> Timing:
    """Ask every question through `concurrency` workers sharing one official AsyncClient."""
    client = ollama.AsyncClient(host=url)
    schema = IntAnswer.model_json_schema()
    queue = iter(questions)

    async def worker() -> None:
        for prompt in queue:
            await client.chat(MODEL, messages=[{"role": "user", "content": prompt}], format=schema, options=OPTIONS)

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    timing = Timing(time.perf_counter() - started, time.process_time() - cpu)
    await client.close()
    return timing


def run_child(args: list[str], cwd: Path) -> Timing:
    """Run a command to completion; raises with its output if it fails."""
    started = time.perf_counter()
    with subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, **LIVE_TERMINAL}) as child:
        output = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage, not every child's
        child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if child.returncode:
        raise RuntimeError(f"{' '.join(args)} exited {child.returncode}:\n{output}")
    return Timing(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)  # Linux: ru_maxrss in KiB


def benchrun_args(bench: Path, url: str, concurrency: int, outputs: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "benchrun", f"task.path={bench}", f"runner.host={url}", f"runner.model={MODEL}",
            f"runner.concurrency={concurrency}", f"outputs={outputs}", *extra]


def execute_seconds(outputs: Path) -> float:
    """From the only run directory under `outputs`: manifest.json written -> run.json's ended_at."""
    (run_json,) = outputs.rglob("run.json")
    info = json.loads(run_json.read_text(encoding="utf-8"))
    if info["status"] != "completed":
        raise RuntimeError(f"{run_json}: status {info['status']}")
    ended = datetime.fromisoformat(info["ended_at"]).timestamp()
    return ended - (run_json.parent / "manifest.json").stat().st_mtime


def measure_benchrun(scenario: Scenario, bench: Path, scratch: Path) -> tuple[Timing, Timing, float]:
    """A dry run, then a real run against a fresh server: both subprocesses and the execute seconds."""
    outputs = Path(tempfile.mkdtemp(prefix="outputs-", dir=scratch))
    startup = run_child(benchrun_args(bench, NO_SERVER, scenario.concurrency, outputs, "dry_run=true"), scratch)
    with fake_server(scenario) as url:
        run = run_child(benchrun_args(bench, url, scenario.concurrency, outputs, "cache=false"), scratch)  # all asked
    return run, startup, execute_seconds(outputs)


def measure(scenario: Scenario, bench: Path, scratch: Path, repeats: int) -> Row:
    """Bare loop and benchrun in turn, `repeats` times, each against a fresh server; the best of each."""
    bares, runs = [], []
    for _ in range(repeats):
        with fake_server(scenario) as url:
            bares.append(asyncio.run(bare_loop(url, prompts(scenario.n), scenario.concurrency)))
        runs.append(measure_benchrun(scenario, bench, scratch))
    run, startup, execute_s = min(runs, key=lambda r: r[2])
    return Row(scenario, min(bares, key=lambda t: t.seconds), run, startup, execute_s)


def scenarios(n: int, latency_n: int) -> list[Scenario]:
    return [Scenario("a. instant, c=1", n, 1), Scenario("b. instant, c=8", n, 8),
            Scenario("c. 50 ms, 8 at once, c=8", latency_n, 8, latency_s=0.05, max_parallel=8)]


def print_table(rows: list[Row]) -> None:
    header = ("scenario", "N", "conc", "bare s", "wall s", "start-up s", "wall-start", "execute s", "ratio",
              "ideal s", "x ideal", "bare CPU µs", "run CPU µs", "RSS MB", "dry MB")
    print("{:<26}{:>7}{:>5}{:>8}{:>8}{:>11}{:>11}{:>10}{:>7}{:>8}{:>8}{:>12}{:>11}{:>8}{:>8}".format(*header))
    for r in rows:
        s, ideal = r.scenario, r.scenario.ideal_s
        ideal_cells = f"{ideal:>8.2f}{r.execute_s / ideal:>8.2f}" if ideal else f"{'-':>8}{'-':>8}"
        print(f"{s.label:<26}{s.n:>7,}{s.concurrency:>5}{r.bare.seconds:>8.2f}{r.run.seconds:>8.2f}"
              f"{r.startup.seconds:>11.2f}{r.run.seconds - r.startup.seconds:>11.2f}{r.execute_s:>10.2f}"
              f"{r.ratio:>7.2f}{ideal_cells}{r.bare_cpu_us:>12.0f}{r.run_cpu_us:>11.0f}"
              f"{r.run.rss_mb:>8.1f}{r.startup.rss_mb:>8.1f}")


def verdict(met: bool, text: str) -> None:
    print(f"[{'met' if met else 'NOT met'}] {text}")


def print_verdicts(rows: list[Row], small: Row, big: Row) -> None:
    """One line per target of issue 3; memory compares two runs alike but for N (`small` and `big`)."""
    for r in rows:
        if r.scenario.ideal_s:
            x = r.execute_s / r.scenario.ideal_s
            verdict(x <= IDEAL_RATIO, f"{r.scenario.label}: execute {x:.2f}x ideal (target <= {IDEAL_RATIO})")
        else:
            verdict(r.ratio <= BARE_RATIO, f"{r.scenario.label}: execute {r.ratio:.2f}x bare (target <= {BARE_RATIO})")
    added = {r.scenario.n: r.run.rss_mb - r.startup.rss_mb for r in (small, big)}
    verdict(added[big.scenario.n] - added[small.scenario.n] <= FLAT_MB,
            "memory: peak RSS over the dry run's (compile) peak "
            + ", ".join(f"{mb:+.1f} MB at N={n:,}" for n, mb in added.items())
            + f" (target: grows <= {FLAT_MB} MB); whole run {small.run.rss_mb:.1f} -> {big.run.rss_mb:.1f} MB, "
            f"dry run {small.startup.rss_mb:.1f} -> {big.startup.rss_mb:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="prompts per scenario (default 10,000)")
    parser.add_argument("--quick", action="store_true", help="N=1,000 everywhere, one repeat: a smoke run")
    parser.add_argument("--full", action="store_true", help="scenario c at N as well (default 2,000)")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per figure, the best kept")
    args = parser.parse_args()
    n, repeats = (1_000, 1) if args.quick else (args.n, args.repeats)
    latency_n = n if args.full or args.quick else min(n, 2_000)
    small = Scenario("memory, instant, c=8", n // 5, 8)
    with tempfile.TemporaryDirectory(prefix="benchrun-run-bench-") as tmp:
        scratch = Path(tmp)
        benches = {k: write_benchmark(scratch, k) for k in {n, latency_n, small.n}}
        rows = []
        for scenario in [*scenarios(n, latency_n), small]:
            rows.append(measure(scenario, benches[scenario.n], scratch, repeats))
            print(f"measured {scenario.label}", file=sys.stderr, flush=True)
    print_table(rows)
    print_verdicts(rows[:-1], small=rows[-1], big=rows[1])


if __name__ == "__main__":
    main()
