"""What the audit commands cost on one very large run: wall time and peak RSS of `verify`, `show`, `export`,
`compare` and `report` on a run of N samples (default 1,000,000), as whole processes.

    python benchmarks/million_bench.py [--samples N] [--keep DIR]

Writes the run with `audit_bench.large_run` (benchrun's own writer, no model called; two tasks, a 0/1 metric and a
float one) and another such run to compare it with, in a temporary directory (or DIR, kept), then
runs each command once and prints its figures: what grows with the run's size shows there.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from audit_bench import large_run, timed_cli


def commands(run: Path, other: Path, out: Path) -> list[tuple[str, list[str]]]:
    return [("verify", ["verify", str(run)]), ("show", ["show", str(run)]),
            ("show --samples --failed", ["show", str(run), "--samples", "--failed"]),
            ("export (csv)", ["export", str(run), "--output", str(out / "e.csv")]),
            ("compare", ["compare", str(run), str(other)]),
            ("report", ["report", str(run), "--output", str(out / "r.html")])]


def measure(root: Path, samples: int) -> None:
    started = time.perf_counter()
    run, other = large_run(root / "a", samples, random.Random(0)), large_run(root / "b", samples, random.Random(1))
    print(f"wrote {samples:,} samples in {time.perf_counter() - started:.1f} s")
    for label, args in commands(run, other, root):
        figure = timed_cli(label, args, 1)
        print(f"{label:<26}{figure.seconds:>9.2f} s{figure.memory_mb:>10.1f} MB peak RSS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="write the runs under this directory and keep them")
    args = parser.parse_args()
    if args.keep:
        measure(args.keep, args.samples)
        return
    with tempfile.TemporaryDirectory(prefix="benchrun-million-bench-") as tmp:
        measure(Path(tmp), args.samples)


if __name__ == "__main__":
    main()
