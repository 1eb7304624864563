"""What `benchrun-audit list` costs over a large archive: its wall time and peak RSS, as a table and as --json.

    python benchmarks/list_bench.py [--runs N] [--archive DIR] [--repeats N]

Writes N small runs (default 10,000; `audit_bench.small_runs`, about 80 s per 1,000 here) in a temporary directory,
or reads those under --archive DIR (an archive `audit_bench.py --keep DIR` left: DIR/archive). `list` keeps each run's
row, not the run, once it is read (`audit.listing.ordered`); at 10,000 runs on this machine (2 cores, shared) its
peak RSS went from 292 MB to 80 MB as a table, 371 MB to 166 MB as --json, the same output.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from audit_bench import small_runs, timed_cli


def measure(archive: Path, repeats: int) -> None:
    for label, args in (("list (table)", ["list", str(archive)]), ("list --json", ["list", str(archive), "--json"])):
        figure = timed_cli(label, args, repeats)
        print(f"{label:<16}{figure.seconds:>8.2f} s{figure.memory_mb:>9.1f} MB peak RSS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--archive", type=Path, help="read the runs under this archive instead of writing them")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    if args.archive:
        measure(args.archive, args.repeats)
        return
    with tempfile.TemporaryDirectory(prefix="benchrun-list-bench-") as tmp:
        small_runs(Path(tmp), args.runs, random.Random(0))
        measure(Path(tmp), args.repeats)


if __name__ == "__main__":
    main()
