"""What benchrun costs over the loop a user would write, both measured as whole processes (issue 13).

    python benchmarks/run_bench.py [--quick] [--n N] [--latency-n N] [--pairs P] [--scenario a b c]

Each scenario asks N structured prompts ("find the product of {a} and 7", format IntAnswer) of the fake Ollama
server (`python -m benchrun.testing.ollama_server`, a fresh process for every measurement), in P pairs A B A B:
- A, the bare loop: `python benchmarks/bare_loop.py`, C workers around the official `ollama.AsyncClient().chat`
  with the same schema and options, each answer kept as a JSON line;
- B, benchrun: `python -m benchrun cache=false` on the same prompts as a list-style benchmark of one task
  (calculated reference, a custom scorer), the progress bar live as on a terminal.
Wall seconds and CPU seconds (the child's own rusage, from os.wait4) are of the whole process, start-up included.
Per scenario it prints each pair's walls and ratio, the medians, the median of the pair ratios, and the CPU per
sample of each (median CPU seconds / N) with their ratio. With scenario b it also prints the peak RSS of benchrun at
N and N/5 (and of their dry runs: the compile) and the bytes written per sample: the run directory and each record
file, against the bare loop's answers file.

Scenario s asks one prompt: what benchrun costs whatever the size of the run (start-up, the compile, the preflight,
the scorer process, the summary and seal at the end). From s and a (and b), benchrun's own cost per answer: its CPU
per answer beyond s, less the bare loop's beyond its own s.

Targets (issues 13 and 23; ratios from one sitting): a. zero latency, concurrency 1 and b. zero latency,
concurrency 8: benchrun wall <= 1.15x the bare loop, CPU per sample <= 1.3x; c. 50 ms per request, the server
serving 8 at once, concurrency 8: wall <= 1.05x the bare loop; s: benchrun's fixed cost <= 0.8 s more than the bare
loop's; benchrun's own cost <= 100 µs an answer; memory flat in N. N is 10,000 for a and b, 2,000 for c.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from bare_loop import MODEL, SCHEMA, TEMPLATE, B

from benchrun.compiler.formats import IntAnswer

BARE_LOOP = Path(__file__).with_name("bare_loop.py")
SCORER = '''import json


def calculated_answer(response, values):
    return int(json.loads(response)["answer"] == values["a"] * values["b"])
'''
LIVE_TERMINAL = {"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"}
"""Makes rich draw the progress bar into the pipe, so its per-sample cost is measured too."""
NO_SERVER = "http://127.0.0.1:9"
"""The host given to dry runs, which call no model."""
RECORD_FILES = ("responses.jsonl", "scores.jsonl", "records.sha256", "manifest.json")
FIXED_S = 0.8
"""benchrun's start-up and finish may take this much longer than the bare loop's (issue 23)."""
OWN_US = 100
"""benchrun's own CPU per answer, beyond the bare loop's (issue 23)."""
FLAT_MB = 2.0
"""Memory is flat in N when what a run adds over its dry run's peak (the compile) grows by at most this."""


@dataclass(frozen=True)
class Scenario:
    """N prompts at concurrency C against a server with this latency and parallelism; issue 13's targets."""

    key: str
    label: str
    n: int
    concurrency: int
    latency_s: float = 0.0
    max_parallel: int | None = None
    wall_target: float | None = 1.15
    cpu_target: float | None = 1.3

    @property
    def ideal_s(self) -> float:
        """The server's own time: N x latency / requests served at once (0 at zero latency)."""
        return self.n * self.latency_s / min(self.concurrency, self.max_parallel or self.concurrency)


@dataclass(frozen=True)
class Timing:
    """Wall and CPU seconds of one whole process, and its peak RSS."""

    seconds: float
    cpu_s: float
    rss_mb: float


@dataclass(frozen=True)
class Pair:
    """The bare loop then benchrun, each against its own fresh server; where each left what it wrote."""

    bare: Timing
    run: Timing
    answers: Path
    run_dir: Path

    @property
    def ratio(self) -> float:
        return self.run.seconds / self.bare.seconds


def write_benchmark(root: Path, n: int) -> Path:
    """A list-style benchmark of one task whose n samples are bare_loop's n prompts."""
    bench = root / f"bench{n}"
    bench.mkdir()
    task = {"name": "product", "template": TEMPLATE, "values": {"a": list(range(n)), "b": [B] * n},
            "reference": "calculated", "scorer": "calculated_answer", "format": "IntAnswer"}
    (bench / "tasks.yml").write_text(yaml.safe_dump([task], sort_keys=False), encoding="utf-8")
    (bench / "custom_scorer.py").write_text(SCORER, encoding="utf-8")
    return bench


def benchmark(scratch: Path, n: int) -> Path:
    """The n-sample benchmark in `scratch`, written the first time it is asked for."""
    bench = scratch / f"bench{n}"
    return bench if bench.exists() else write_benchmark(scratch, n)


@contextmanager
def fake_server(latency_s: float = 0.0, max_parallel: int | None = None) -> Iterator[str]:
    """The fake Ollama in its own process, with this latency and parallelism; yields its URL."""
    args = [sys.executable, "-m", "benchrun.testing.ollama_server", "--port", "0", "--models", MODEL,
            "--latency", str(latency_s)]
    if max_parallel:
        args += ["--max-parallel", str(max_parallel)]
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True) as server:
        try:
            yield server.stdout.readline().strip()
        finally:
            server.terminate()


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


def completed_run(outputs: Path) -> tuple[Path, dict[str, Any]]:
    """The only run directory under `outputs` and its run.json; raises unless the run completed."""
    (run_json,) = outputs.rglob("run.json")
    info = json.loads(run_json.read_text(encoding="utf-8"))
    if info["status"] != "completed":
        raise RuntimeError(f"{run_json}: status {info['status']}")
    return run_json.parent, info


def time_bare(scenario: Scenario, answers: Path, scratch: Path) -> Timing:
    """bare_loop.py against a fresh server; checks that it kept one answer per prompt."""
    with fake_server(scenario.latency_s, scenario.max_parallel) as url:
        timing = run_child([sys.executable, str(BARE_LOOP), url, str(scenario.n), str(scenario.concurrency),
                            str(answers)], scratch)
    with answers.open(encoding="utf-8") as lines:
        if (kept := sum(1 for _ in lines)) != scenario.n:
            raise RuntimeError(f"{answers}: {kept} answers, expected {scenario.n}")
    return timing


def time_benchrun(scenario: Scenario, bench: Path, scratch: Path, name: str) -> tuple[Timing, Path]:
    """`python -m benchrun cache=false` (all asked) against a fresh server, outputs in scratch/name; the timing and
    the run directory."""
    outputs = scratch / name
    with fake_server(scenario.latency_s, scenario.max_parallel) as url:
        timing = run_child(benchrun_args(bench, url, scenario.concurrency, outputs, "cache=false"), scratch)
    run_dir, info = completed_run(outputs)
    if info["counts"]["cached"]:
        raise RuntimeError(f"{run_dir}: {info['counts']['cached']} answers from the cache, expected none")
    return timing, run_dir


def measure_pair(scenario: Scenario, bench: Path, scratch: Path, number: int) -> Pair:
    """Pair `number`: the bare loop, then benchrun."""
    answers = scratch / f"answers-{scenario.key}{number}.jsonl"
    bare = time_bare(scenario, answers, scratch)
    run, run_dir = time_benchrun(scenario, bench, scratch, f"outputs-{scenario.key}{number}")
    print(f"{scenario.key} pair {number}: bare {bare.seconds:.2f} s, benchrun {run.seconds:.2f} s",
          file=sys.stderr, flush=True)
    return Pair(bare, run, answers, run_dir)


def median_of(pairs: list[Pair], figure: Callable[[Pair], float]) -> float:
    return statistics.median(figure(p) for p in pairs)


def verdict(met: bool, text: str) -> None:
    print(f"[{'met' if met else 'NOT met'}] {text}")


def print_scenario(scenario: Scenario, pairs: list[Pair]) -> None:
    """Each pair's walls, CPU and ratio; the medians; CPU per sample; a verdict per target."""
    ideal = f"; the server's own time N x latency / served at once = {scenario.ideal_s:.2f} s" \
        if scenario.ideal_s else ""
    print(f"\n{scenario.key}. {scenario.label}: {scenario.n:,} samples, concurrency {scenario.concurrency}{ideal}")
    print("{:<8}{:>10}{:>12}{:>8}{:>12}{:>16}".format("pair", "bare s", "benchrun s", "ratio", "bare CPU s",
                                                      "benchrun CPU s"))
    for number, p in enumerate(pairs, 1):
        print(f"{number:<8}{p.bare.seconds:>10.2f}{p.run.seconds:>12.2f}{p.ratio:>8.2f}{p.bare.cpu_s:>12.2f}"
              f"{p.run.cpu_s:>16.2f}")
    ratio = median_of(pairs, lambda p: p.ratio)
    bare_cpu, run_cpu = median_of(pairs, lambda p: p.bare.cpu_s), median_of(pairs, lambda p: p.run.cpu_s)
    print(f"{'median':<8}{median_of(pairs, lambda p: p.bare.seconds):>10.2f}"
          f"{median_of(pairs, lambda p: p.run.seconds):>12.2f}{ratio:>8.2f}{bare_cpu:>12.2f}{run_cpu:>16.2f}")
    cpu_ratio = run_cpu / bare_cpu
    print(f"CPU per sample: bare {bare_cpu / scenario.n * 1e6:,.0f} µs, benchrun {run_cpu / scenario.n * 1e6:,.0f} µs"
          f" ({cpu_ratio:.2f}x)")
    if scenario.wall_target:
        verdict(ratio <= scenario.wall_target, f"{scenario.key}: benchrun wall {ratio:.2f}x the bare loop "
                f"(median of {len(pairs)} pair ratios; target <= {scenario.wall_target})")
    if scenario.cpu_target:
        verdict(cpu_ratio <= scenario.cpu_target, f"{scenario.key}: CPU per sample {cpu_ratio:.2f}x the bare loop "
                f"(target <= {scenario.cpu_target})")


def print_disk(pair: Pair, n: int) -> None:
    """Bytes per sample of benchrun's run directory and of each record file, and of the bare loop's answers."""
    files = [path for path in pair.run_dir.rglob("*") if path.is_file()]
    sizes = {"run directory": sum(path.stat().st_size for path in files),
             **{name: (pair.run_dir / name).stat().st_size for name in RECORD_FILES},
             "bare loop's answers": pair.answers.stat().st_size}
    print(f"\ndisk written per sample (N={n:,}): " + ", ".join(f"{name} {size / n:,.0f} B"
                                                               for name, size in sizes.items()))


def peak_rss(scenario: Scenario, bench: Path, scratch: Path) -> tuple[float, float]:
    """Peak RSS in MB of a dry run (the compile) and of a real run of `bench`, alike but for N."""
    dry = run_child(benchrun_args(bench, NO_SERVER, scenario.concurrency, scratch / f"memory-dry{scenario.n}",
                                  "dry_run=true"), scratch)
    run, _ = time_benchrun(scenario, bench, scratch, f"memory-run{scenario.n}")
    return dry.rss_mb, run.rss_mb


def print_memory(scenario: Scenario, scratch: Path) -> None:
    """Memory is flat in N: what a run adds over its dry run's peak, at N/5 and at N."""
    small = replace(scenario, n=scenario.n // 5)
    rss = {s.n: peak_rss(s, benchmark(scratch, s.n), scratch) for s in (small, scenario)}
    added = {n: run - dry for n, (dry, run) in rss.items()}
    verdict(added[scenario.n] - added[small.n] <= FLAT_MB,
            "memory: peak RSS over the dry run's (compile) peak "
            + ", ".join(f"{mb:+.1f} MB at N={n:,}" for n, mb in added.items())
            + f" (target: grows <= {FLAT_MB} MB); whole run "
            + " -> ".join(f"{run:.1f}" for _, run in rss.values()) + " MB, dry run "
            + " -> ".join(f"{dry:.1f}" for dry, _ in rss.values()) + " MB")


def print_fixed(pairs: list[Pair]) -> None:
    """What a one-prompt run costs benchrun beyond the bare loop: wall and CPU seconds."""
    wall = median_of(pairs, lambda p: p.run.seconds - p.bare.seconds)
    cpu = median_of(pairs, lambda p: p.run.cpu_s - p.bare.cpu_s)
    verdict(wall <= FIXED_S, f"s: benchrun's fixed cost {wall:.2f} s of wall ({cpu:.2f} s of CPU) more than the bare "
            f"loop's (median of {len(pairs)} pairs; target <= {FIXED_S} s)")


def print_own_cost(fixed: list[Pair], scenario: Scenario, pairs: list[Pair]) -> None:
    """benchrun's CPU per answer beyond its fixed cost, less the bare loop's beyond its own."""
    def per_answer(side: Callable[[Pair], Timing]) -> float:
        beyond = median_of(pairs, lambda p: side(p).cpu_s) - median_of(fixed, lambda p: side(p).cpu_s)
        return beyond / (scenario.n - 1) * 1e6

    bare, run = per_answer(lambda p: p.bare), per_answer(lambda p: p.run)
    verdict(run - bare <= OWN_US, f"{scenario.key}: benchrun's own cost {run - bare:,.0f} µs an answer (CPU per answer "
            f"beyond the fixed cost: benchrun {run:,.0f}, bare loop {bare:,.0f}; target <= {OWN_US} µs)")


def scenarios(n: int, latency_n: int) -> list[Scenario]:
    return [Scenario("s", "one prompt", 1, 1, wall_target=None, cpu_target=None),
            Scenario("a", "zero latency", n, 1), Scenario("b", "zero latency", n, 8),
            Scenario("c", "50 ms, 8 served at once", latency_n, 8, latency_s=0.05, max_parallel=8,
                     wall_target=1.05, cpu_target=None)]


def measure(scenario: Scenario, pairs: int, scratch: Path, fixed: list[Pair] | None) -> list[Pair]:
    """P pairs of the scenario, printed; with scenario s measured, benchrun's own cost per answer; with scenario b,
    disk per sample and memory at N/5 and N too."""
    measured = [measure_pair(scenario, benchmark(scratch, scenario.n), scratch, k) for k in range(1, pairs + 1)]
    print_scenario(scenario, measured)
    if scenario.key == "s":
        print_fixed(measured)
    elif fixed and scenario.latency_s == 0:
        print_own_cost(fixed, scenario, measured)
    if scenario.key == "b":
        print_disk(measured[-1], scenario.n)
        print_memory(scenario, scratch)
    return measured


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, help="samples of scenarios a and b (default 10,000)")
    parser.add_argument("--latency-n", type=int, help="samples of scenario c (default 2,000)")
    parser.add_argument("--pairs", type=int, help="bare/benchrun pairs per scenario (default 5)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: N=1,000 everywhere, 2 pairs")
    parser.add_argument("--scenario", nargs="+", choices="sabc", default=list("sabc"), help="run only these")
    args = parser.parse_args()
    args.n = args.n or (1_000 if args.quick else 10_000)
    args.latency_n = args.latency_n or (args.n if args.quick else 2_000)
    args.pairs = args.pairs or (2 if args.quick else 5)
    return args


def main() -> None:
    args = parse_args()
    if SCHEMA != IntAnswer.model_json_schema():
        raise RuntimeError(f"bare_loop.SCHEMA is not IntAnswer's: {IntAnswer.model_json_schema()}")
    print(f"{args.pairs} pairs per scenario, each a whole bare-loop process then a whole `python -m benchrun`")
    fixed = None
    with tempfile.TemporaryDirectory(prefix="benchrun-run-bench-") as tmp:
        for scenario in scenarios(args.n, args.latency_n):
            if scenario.key in args.scenario:
                measured = measure(scenario, args.pairs, Path(tmp), fixed)
                fixed = measured if scenario.key == "s" else fixed


if __name__ == "__main__":
    main()
