"""How fast `benchrun.compile` is, and how much memory it takes, on large generated benchmarks.

    python benchmarks/compile_bench.py [--repeats N]

Builds list-style benchmarks in a temporary directory, compiles each several times and prints,
per benchmark: samples, best and median seconds, samples/s, the time to compute the manifest id,
the tracemalloc peak during a compile, the memory the finished manifest keeps (bytes per sample),
and the peak RSS growth of a fresh process that compiles it once. Also prints the start-up time
of `python -c "import benchrun"`.

Targets (issue 2): a 100x100 `combinations` grid (10,000 samples) well under a second beyond
start-up; 100,000 samples in a few seconds, memory proportional to the samples. Issue 21: a 10,000-line
JSONL values file, asked with a system prompt and two few-shot turns, within the 10,000-sample budget.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

import benchrun

MB = 1024 * 1024
SMALL_TARGET_S = 0.5
"""'Well under a second' for the 10,000-sample grid."""
LARGE_TARGET_S = 3.0
"""'A few seconds' for the 100,000-sample grid."""
SCORER = "def times(response, values):\n    return int(response.strip() == str(values['a'] * values['b']))\n"
RSS_PROBE = """
import json, resource, sys
from pathlib import Path

def peak_rss():  # bytes; VmHWM is this process's own peak, ru_maxrss also counts a parent's before exec
    status = Path("/proc/self/status")
    if status.is_file():
        return next(int(line.split()[1]) * 1024 for line in status.read_text().splitlines()
                    if line.startswith("VmHWM:"))
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)

import benchrun
before = peak_rss()
benchrun.compile(json.loads(sys.argv[1]))
print(peak_rss() - before)
"""


@dataclass(frozen=True)
class Case:
    """One generated benchmark: columns a and b of `a` and `b` integers, every combination or zipped
    (then a == b), with a reference list or `reference: calculated`."""

    label: str
    a: int
    b: int
    combinations: bool = True
    references: bool = False
    jsonl: bool = False
    """The values (a, b, reference) as the lines of a JSONL file, asked with a system prompt and two turns."""

    @property
    def samples(self) -> int:
        return self.a * self.b if self.combinations else self.a

    def write(self, root: Path) -> Path:
        bench = root / self.label.replace(" ", "_")
        bench.mkdir()
        task: dict[str, Any] = {
            "name": "grid", "template": "what is {a} times {b}?",
            "values": {"a": list(range(self.a)), "b": list(range(self.b))},
            "reference": [str(n) for n in range(self.samples)] if self.references else "calculated",
            "value_combinations": "combinations" if self.combinations else "tuple",
            "scorer": "exact_match" if self.references else "times", "format": "IntAnswer",
        }
        if self.jsonl:
            lines = (json.dumps({"a": n, "b": n, "reference": str(2 * n)}) for n in range(self.samples))
            (bench / "rows.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
            del task["values"], task["reference"], task["value_combinations"]
            task.update(values_file="rows.jsonl", scorer="exact_match", system="Answer with the number only.",
                        fewshot=[{"user": "what is 2 times 5?", "assistant": '{"answer": 10}'},
                                 {"values": {"a": 2, "b": 3}, "assistant": '{"answer": 6}'}])
        (bench / "tasks.yml").write_text(yaml.safe_dump([task], sort_keys=False), encoding="utf-8")
        (bench / "custom_scorer.py").write_text(SCORER, encoding="utf-8")
        return bench


CASES = (
    Case("100x100 grid", 100, 100),
    Case("1000x100 grid", 1000, 100),
    Case("100x100 grid + refs", 100, 100, references=True),
    Case("10k rows + refs", 10_000, 10_000, combinations=False, references=True),
    Case("10k JSONL lines + chat", 10_000, 10_000, combinations=False, jsonl=True),
)


@dataclass(frozen=True)
class Figures:
    samples: int
    best_s: float
    median_s: float
    id_s: float
    """Best time of `manifest.id` (canonical JSON + sha256), which a dry run also prints."""
    peak_mb: float
    kept_bytes_per_sample: float
    rss_growth_mb: float


def config(bench: Path) -> dict[str, Any]:
    return {"task": {"path": str(bench), "name": bench.name, "only": None},
            "runner": {"type": "ollama", "model": "m", "options": {"temperature": 0, "seed": 0}}}


def timings(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def traced_memory(cfg: dict[str, Any]) -> tuple[int, int]:
    """(peak bytes allocated during one compile, bytes the finished manifest keeps)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    manifest = benchrun.compile(cfg)
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del manifest
    return peak - base, kept - base


def rss_growth(cfg: dict[str, Any]) -> int:
    """Growth of peak RSS (bytes) while a fresh process, benchrun imported, compiles once."""
    probe = subprocess.run([sys.executable, "-c", RSS_PROBE, json.dumps(cfg)], capture_output=True, text=True,
                           check=True)
    return int(probe.stdout)


def measure(case: Case, root: Path, repeats: int) -> Figures:
    cfg = config(case.write(root))
    manifest = benchrun.compile(cfg)  # also warms up: schemas, custom_scorer.py import
    if len(manifest.samples) != case.samples:
        raise SystemExit(f"{case.label}: compiled {len(manifest.samples)} samples, expected {case.samples}")
    id_s = min(timings(lambda m=manifest: m.id, repeats))
    del manifest
    seconds = timings(lambda: benchrun.compile(cfg), repeats)
    peak, kept = traced_memory(cfg)
    return Figures(case.samples, min(seconds), statistics.median(seconds), id_s, peak / MB, kept / case.samples,
                   rss_growth(cfg) / MB)


def startup(repeats: int) -> tuple[float, float]:
    """Best wall time of `python -c pass` and of `python -c "import benchrun"`."""
    def run(code: str) -> float:
        return min(timings(lambda: subprocess.run([sys.executable, "-c", code], check=True), repeats))
    return run("pass"), run("import benchrun")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bare, imported = startup(args.repeats)
    print(f"start-up: python -c pass {bare:.3f} s; python -c 'import benchrun' {imported:.3f} s "
          f"(import alone {imported - bare:.3f} s)\n")
    header = ("benchmark", "samples", "best s", "median s", "samples/s", "id s", "peak MB", "kept B/sample",
              "RSS +MB")
    print("{:<22}{:>9}{:>9}{:>10}{:>11}{:>8}{:>9}{:>15}{:>9}".format(*header))
    figures: dict[Case, Figures] = {}
    with tempfile.TemporaryDirectory(prefix="benchrun-compile-bench-") as tmp:
        for case in CASES:
            f = figures[case] = measure(case, Path(tmp), args.repeats)
            print(f"{case.label:<22}{f.samples:>9,}{f.best_s:>9.3f}{f.median_s:>10.3f}{f.samples / f.best_s:>11,.0f}"
                  f"{f.id_s:>8.3f}{f.peak_mb:>9.1f}{f.kept_bytes_per_sample:>15,.0f}{f.rss_growth_mb:>9.1f}")
    small, large, jsonl = figures[CASES[0]], figures[CASES[1]], figures[CASES[4]]
    print(f"\ntarget 10k grid < {SMALL_TARGET_S} s beyond start-up: {_verdict(small.median_s <= SMALL_TARGET_S)}; "
          f"10k JSONL lines + chat < {SMALL_TARGET_S} s: {_verdict(jsonl.median_s <= SMALL_TARGET_S)}; "
          f"100k < {LARGE_TARGET_S} s: {_verdict(large.median_s <= LARGE_TARGET_S)}; memory per sample "
          f"100k/10k = {large.kept_bytes_per_sample / small.kept_bytes_per_sample:.2f} (1.00 = proportional)")


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


if __name__ == "__main__":
    main()
