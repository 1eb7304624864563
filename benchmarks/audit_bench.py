"""How fast the audit commands read a large archive: `list` over 1,000 runs, `show`/`verify` on a 100,000-sample run.

    python benchmarks/audit_bench.py [--runs N] [--samples N] [--repeats N] [--keep DIR]

Writes, with benchrun's own models and `RunWriter` (no model is called), a synthetic archive in a
temporary directory: N small runs (default 1,000, about a fifth of them jobs of two-model sweeps;
several models, benchmarks and statuses) and one run of N samples (default 100,000; two tasks, a 0/1
metric and a float one, 1% request errors, 2% invalid JSON). Then times, best of --repeats:
- `list_runs` over the small runs, and `python -m benchrun.audit list ROOT` (table, and --json);
- `show`'s metrics table (`metric_rows`) and the failed samples (`samples`) on the large run, and
  `python -m benchrun.audit show RUN` and `show RUN --samples --failed`;
- `verify_run` and `audit verify` on the large run, intact and with one edited response line;
- `audit show` on a 20-sample and a 20,000-sample run with the same metrics (`--scaling-only`: just this);
and prints each figure with the peak memory (tracemalloc for the functions, the child's peak RSS for
the command line), against its target where issue 13 sets one: as whole processes, `list` over 1,000 runs
as a table under 1 s; `show` and `show --samples --failed` on a 100,000-sample run under 1 s and 1.5 s,
each under 150 MB peak RSS; `show` on 20,000 samples within SCALING times `show` on 20 (summary.json says
everything the table needs, so nothing is read per sample).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from benchrun.archive.reader import load_run
from benchrun.archive.writer import RunWriter, environment
from benchrun.audit.listing import list_runs
from benchrun.audit.show import metric_rows, samples
from benchrun.audit.verify import Finding, verify_run
from benchrun.core.layout import RESPONSES
from benchrun.core.manifest import FormatSpec, Manifest, RunnerSpec, Sample, ScorerSpec, SourceFile, TaskEntry
from benchrun.core.records import Attempt, Counts, ErrorInfo, ResponseRecord, RunInfo, ScoreRecord

MODELS = ("llama3.2", "gemma3", "qwen2.5", "mistral")
BENCHMARKS = {"arith": ("add", "product"), "symbols": ("symbol", "symbol_dir"), "qa": ("qa",)}
STATUSES = ("completed",) * 7 + ("completed_with_errors", "interrupted", "failed")
SMALL_SAMPLES = 10
MB = 1024 * 1024
TARGET_MB = 150
"""Peak RSS of `show` and `show --samples --failed` (issue 13)."""
SCALING = 1.2
"""`show` on 20,000 samples against `show` on 20: the most it may take (the issue "each fact one owner")."""
START = datetime(2026, 1, 1, tzinfo=timezone.utc)
ENVIRONMENT = environment()
FORMAT = FormatSpec(name="IntAnswer", origin="builtin",
                    json_schema={"properties": {"answer": {"type": "integer"}}, "required": ["answer"],
                                 "title": "IntAnswer", "type": "object"})


def manifest(benchmark: str, tasks: tuple[str, ...], model: str, per_task: int) -> Manifest:
    """A manifest of `per_task` samples per task; task `t` scores exact_match (0/1), the last one also closeness."""
    entries, samples_ = [], []
    for t, name in enumerate(tasks):
        scorers = [ScorerSpec(name="exact_match", origin="builtin", sha256="0" * 64)]
        if t == len(tasks) - 1:
            scorers.append(ScorerSpec(name="closeness", origin="custom_scorer.py", sha256="1" * 64))
        entries.append(TaskEntry(name=name, source="tasks.yml", template="what is {a} + {b}?", reference="list",
                                 value_combinations="tuple", format=FORMAT, scorers=tuple(scorers),
                                 n_samples=per_task))
        samples_ += [Sample(id=f"{name}:a={i},b={i % 97}", task=name, prompt=f"what is {i} + {i % 97}?",
                            values={"a": i, "b": i % 97}, reference=i + i % 97) for i in range(per_task)]
    return Manifest(benchmark=benchmark, config={"task": {"name": benchmark}, "runner": {"model": model}},
                    files=(SourceFile(path="tasks.yml", sha256="2" * 64, size=100),),
                    runner=RunnerSpec(type="ollama", model=model, options={"temperature": 0, "seed": 0}),
                    tasks=tuple(entries), samples=tuple(samples_))


def graded(sample: Sample, scorers: tuple[ScorerSpec, ...], rng: random.Random) -> tuple[ResponseRecord,
                                                                                        list[ScoreRecord]]:
    """A response (1% request errors, 2% invalid JSON) and its score records, as the grader would write them."""
    roll = rng.random()
    if roll < 0.01:
        error = ErrorInfo(type="ResponseError", message="HTTP 503: server busy")
        tries = tuple(Attempt(number=n, error=error, seconds=0.03) for n in (1, 2, 3))
        response = ResponseRecord(id=sample.id, task=sample.task, text=None, seconds=0.1, attempts=3,
                                  failed_attempts=tries, error=error)
        missing = ErrorInfo(type="NoResponse", message="no response: HTTP 503: server busy")
        names = ("format_valid", *(s.name for s in scorers))
        return response, [ScoreRecord(id=sample.id, task=sample.task, scorer=n, metrics=None, error=missing)
                          for n in names]
    answer = sample.reference if roll < 0.7 else sample.reference + 1
    text = f"the answer is {answer}" if roll > 0.98 else json.dumps({"answer": answer})
    response = ResponseRecord(id=sample.id, task=sample.task, text=text, done_reason="stop", prompt_tokens=9,
                              completion_tokens=4, seconds=0.05, attempts=1)
    valid = roll <= 0.98
    records = [ScoreRecord(id=sample.id, task=sample.task, scorer="format_valid",
                           metrics={"format_valid": int(valid)}, detail=None if valid else "invalid JSON")]
    for scorer in scorers:
        value = int(answer == sample.reference) if scorer.name == "exact_match" else round(rng.random(), 6)
        records.append(ScoreRecord(id=sample.id, task=sample.task, scorer=scorer.name,
                                   metrics={scorer.name: value}))
    return response, records


def write_run(run_dir: Path, man: Manifest, started: datetime, status: str, rng: random.Random,
              sweep: Path | None = None) -> None:
    """A finished run of `man` written by RunWriter, as `python -m benchrun` would leave it."""
    info = RunInfo(run_id=f"{rng.getrandbits(48):012x}", status="running", started_at=started.isoformat(),
                   benchmark=man.benchmark, model=man.runner.model, manifest_id=man.id,
                   runner={"type": "ollama", "host": "http://127.0.0.1:11434", "model": man.runner.model},
                   environment=ENVIRONMENT, counts=Counts(samples=len(man.samples)),
                   sweep=str(sweep) if sweep else None)
    writer = RunWriter.create(run_dir, info)
    config = {"task": {"path": f"/benchmarks/{man.benchmark}", "name": man.benchmark},
              "runner": {"model": man.runner.model}}
    writer.start(json.dumps(config))
    writer.compiled(man, wall_s=0.1)  # its longest answer's seconds: a real clock timed at least that
    writer.identified({"name": f"{man.runner.model}:latest", "digest": f"{rng.getrandbits(256):064x}",
                       "server_version": "0.12.6"}, info.runner)
    scorers = {t.name: t.scorers for t in man.tasks}
    samples_ = man.samples if status != "interrupted" else man.samples[: len(man.samples) // 2]
    for sample in samples_ if status != "failed" else ():
        writer.record(*graded(sample, scorers[sample.task], rng))
    writer.finish(status, None if status.startswith("completed") else f"synthetic {status} run")
    writer.release()


def small_runs(root: Path, n: int, rng: random.Random) -> None:
    """n small runs under root/<date>/<time>_<bench>_<model>; every tenth run is a two-job sweep."""
    made = 0
    while made < n:
        started = START + timedelta(minutes=7 * made)
        benchmark = rng.choice(sorted(BENCHMARKS))
        day = root / started.strftime("%Y-%m-%d")
        if made % 10 == 9 and made + 2 <= n:
            sweep = day / f"{started:%H-%M-%S.%f}_{benchmark}_sweep"
            for job, model in enumerate(rng.sample(MODELS, 2)):
                man = manifest(benchmark, BENCHMARKS[benchmark], model, SMALL_SAMPLES)
                write_run(sweep / f"{job}_{model}", man, started + timedelta(seconds=job), "completed", rng, sweep)
            made += 2
            continue
        model = rng.choice(MODELS)
        man = manifest(benchmark, BENCHMARKS[benchmark], model, SMALL_SAMPLES)
        write_run(day / f"{started:%H-%M-%S.%f}_{benchmark}_{model}", man, started, rng.choice(STATUSES), rng)
        made += 1


def large_run(root: Path, n: int, rng: random.Random) -> Path:
    """One completed run of n samples over two tasks (the second with a float metric)."""
    run_dir = root / "2026-06-01" / "12-00-00.000000_large_llama3.2"
    write_run(run_dir, manifest("large", ("add", "product"), "llama3.2", n // 2), START + timedelta(days=151),
              "completed", rng)
    return run_dir


@dataclass(frozen=True)
class Figure:
    label: str
    seconds: float
    memory_mb: float
    memory_kind: str
    target_s: float | None = None
    """Issue 13's target for this figure, if it sets one (then also TARGET_MB for `show`)."""
    target_mb: float | None = None

    def verdict(self) -> str:
        """Whether the figure meets its target: `target 1.0 s: met`, `target 1.0 s: over`; empty without one."""
        if self.target_s is None:
            return ""
        target = f"target {self.target_s:.1f} s" + (f", {self.target_mb:.0f} MB" if self.target_mb else "")
        met = self.seconds < self.target_s and (self.target_mb is None or self.memory_mb < self.target_mb)
        return f"  {target}: {'met' if met else 'over'}"


def timed(label: str, fn: Callable[[], Any], repeats: int) -> Figure:
    """Best wall time of `fn` over `repeats` calls, and the tracemalloc peak of one more call."""
    best = min(_seconds(fn) for _ in range(repeats))
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return Figure(label, best, peak / MB, "traced peak")


def _seconds(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


PEAK_RSS = """
import atexit, runpy, sys
def peak():
    with open("/proc/self/status") as status:
        sys.stderr.write(next(line for line in status if line.startswith("VmHWM")))
atexit.register(peak)
sys.argv[0] = "benchrun-audit"
runpy.run_module("benchrun.audit", run_name="__main__", alter_sys=True)
"""
"""Runs `python -m benchrun.audit` and reports its own peak RSS (VmHWM: ru_maxrss would include the parent's,
which a forked child inherits)."""


def timed_cli(label: str, args: list[str], repeats: int, expect: int = 0, target_s: float | None = None,
              target_mb: float | None = None) -> Figure:
    """Best wall time of `python -m benchrun.audit args` (start-up included), and its peak RSS."""
    best, rss = float("inf"), 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        child = subprocess.run([sys.executable, "-c", PEAK_RSS, *args], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "160"})
        best = min(best, time.perf_counter() - started)
        if child.returncode != expect:
            raise RuntimeError(f"audit {' '.join(args)} exited {child.returncode} (expected {expect}): "
                               f"{child.stderr}")
        rss = max(rss, int(child.stderr.split()[-2]) / 1024)  # "VmHWM:  123456 kB"
    return Figure(label, best, rss, "peak RSS", target_s, target_mb)


def startup(repeats: int) -> float:
    """Best wall time of `python -m benchrun.audit --help`: what every command pays before it reads anything."""
    return min(_seconds(lambda: subprocess.run([sys.executable, "-m", "benchrun.audit", "--help"],
                                               stdout=subprocess.DEVNULL, check=True)) for _ in range(repeats))


def edit_one_response(run_dir: Path) -> int:
    """Change one character of a line in the middle of responses.jsonl (same length); its line number."""
    path = run_dir / RESPONSES
    data = bytearray(path.read_bytes())
    middle = data.index(b'"seconds":0.05', len(data) // 2)
    data[middle + len('"seconds":0.0')] = ord("6")
    path.write_bytes(bytes(data))
    return data.count(b"\n", 0, middle) + 1


def measure(root: Path, runs: int, n: int, repeats: int) -> list[Figure]:
    rng = random.Random(0)
    archive, big = root / "archive", root / "big"
    started = time.perf_counter()
    small_runs(archive, runs, rng)
    print(f"wrote {runs:,} runs in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    run_dir = large_run(big, n, rng)
    print(f"wrote a {n:,}-sample run in {time.perf_counter() - started:.1f} s "
          f"({sum(f.stat().st_size for f in run_dir.iterdir() if f.is_file()) / MB:.0f} MB)\n")
    found = len(list_runs(archive))
    if found != runs:
        raise SystemExit(f"list found {found} runs, expected {runs}")
    figures = [
        timed(f"list_runs ({runs:,} runs)", lambda: list_runs(archive), repeats),
        timed_cli(f"audit list ({runs:,} runs, table)", ["list", str(archive)], repeats, target_s=1.0),
        timed_cli(f"audit list --json ({runs:,} runs)", ["list", str(archive), "--json"], repeats),
        timed(f"metric_rows ({n:,} samples)", lambda: metric_rows(load_run(run_dir)), repeats),
        timed_cli(f"audit show ({n:,} samples)", ["show", str(run_dir)], repeats, target_s=1.0,
                  target_mb=TARGET_MB),
        timed(f"samples --failed ({n:,} samples)", lambda: sum(1 for _ in samples(load_run(run_dir), failed=True)),
              repeats),
        timed_cli("audit show --samples --failed", ["show", str(run_dir), "--samples", "--failed"], repeats,
                  target_s=1.5, target_mb=TARGET_MB),
        timed(f"verify_run ({n:,} samples, intact)", lambda: verify_run(load_run(run_dir)), repeats),
        timed_cli(f"audit verify ({n:,} samples, intact)", ["verify", str(run_dir)], repeats),
    ]
    line = edit_one_response(run_dir)
    expected = [Finding(False, RESPONSES, f"line {line} is not the line written", line)]
    if verify_run(load_run(run_dir)).problems != expected:
        raise SystemExit(f"verify did not report the edited line {line} of {RESPONSES}")
    figures += [
        timed("verify_run (one line edited)", lambda: verify_run(load_run(run_dir)), repeats),
        timed_cli("audit verify (one line edited)", ["verify", str(run_dir)], repeats, expect=1),
    ]
    return figures


def show_scaling(root: Path, repeats: int) -> list[Figure]:
    """`audit show` on a 20-sample and a 20,000-sample run (the same tasks and metrics), and their ratio."""
    rng, sizes = random.Random(1), (20, 20_000)
    dirs = [root / "scaling" / f"{n}_samples" for n in sizes]
    for n, run_dir in zip(sizes, dirs):
        write_run(run_dir, manifest("large", ("add", "product"), "llama3.2", n // 2), START, "completed", rng)
    rows = [timed(f"metric_rows ({n:,} samples)", lambda d=run_dir: metric_rows(load_run(d)), repeats)
            for n, run_dir in zip(sizes, dirs)]
    tries: list[list[Figure]] = [[] for _ in sizes]
    for _ in range(repeats):  # alternately, so that both sizes meet the same load on the machine
        for n, run_dir, found in zip(sizes, dirs, tries):
            found.append(timed_cli(f"audit show ({n:,} samples)", ["show", str(run_dir)], 1))
    shows = [min(found, key=lambda f: f.seconds) for found in tries]
    ratio = shows[1].seconds / shows[0].seconds
    print(f"show on {sizes[1]:,} samples takes {ratio:.2f}x show on {sizes[0]} "
          f"(target {SCALING}x: {'met' if ratio <= SCALING else 'over'}); metric_rows "
          f"{rows[1].seconds / rows[0].seconds:.2f}x")
    return rows + shows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scaling-only", action="store_true", help="only show on 20 against 20,000 samples")
    parser.add_argument("--keep", type=Path, help="write the archive into this new or empty directory and keep it "
                                                  "(default: a temporary directory)")
    args = parser.parse_args()
    print(f"start-up: python -m benchrun.audit --help {startup(args.repeats):.3f} s")

    def everything(root: Path) -> list[Figure]:
        scaling = show_scaling(root, args.repeats)
        return scaling if args.scaling_only else measure(root, args.runs, args.samples, args.repeats) + scaling

    if args.keep:
        if args.keep.exists() and any(args.keep.iterdir()):
            raise SystemExit(f"--keep {args.keep}: not empty (the archive is written afresh)")
        args.keep.mkdir(parents=True, exist_ok=True)
        figures = everything(args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="benchrun-audit-bench-") as tmp:
            figures = everything(Path(tmp))
    print(f"{'measurement':<44}{'best s':>8}{'memory MB':>11}  ")
    for f in figures:
        print(f"{f.label:<44}{f.seconds:>8.3f}{f.memory_mb:>11.1f}  {f.memory_kind}{f.verdict()}")


if __name__ == "__main__":
    main()
