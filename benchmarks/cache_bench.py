"""What a run costs when every answer comes from the response cache: about as much as a dry run.

    python benchmarks/cache_bench.py [--n N] [--concurrency C]

Three whole `python -m benchrun` processes on the same N-sample benchmark (benchmarks/run_bench.py's, one task,
a custom scorer) with a fresh cache directory: a first run that asks the loopback server (`python -m
benchrun.testing.ollama_server`, in its own process) and fills the cache, the same run again with every answer from
the cache (checked: no answer asked, `counts.cached` = N), and a dry run (compile and print the plan). It prints the
three wall times and the ratio all-cached / dry run (target: within 2x).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from run_bench import NO_SERVER, benchrun_args, completed_run, fake_server, run_child, write_benchmark

TARGET = 2.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="samples (default 10,000)")
    parser.add_argument("--concurrency", type=int, default=8, help="runner.concurrency (default 8)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="benchrun-cache-bench-") as tmp:
        scratch = Path(tmp)
        bench, cache = write_benchmark(scratch, args.n), f"cache_dir={scratch / 'cache'}"
        walls, cached = {}, {}
        with fake_server() as url:
            for name in ("asked", "all cached"):
                outputs = scratch / name.replace(" ", "-")
                walls[name] = run_child(benchrun_args(bench, url, args.concurrency, outputs, cache), scratch).seconds
                cached[name] = completed_run(outputs)[1]["counts"]["cached"]
        dry = benchrun_args(bench, NO_SERVER, args.concurrency, scratch / "dry", cache, "dry_run=true")
        walls["dry run"] = run_child(dry, scratch).seconds
    if cached != {"asked": 0, "all cached": args.n}:
        raise RuntimeError(f"expected 0 then {args.n} cached answers, got {cached}")
    print(f"{args.n:,} samples, concurrency {args.concurrency}")
    for name, seconds in walls.items():
        print(f"{name:<12}{seconds:>8.2f} s")
    ratio = walls["all cached"] / walls["dry run"]
    print(f"[{'met' if ratio <= TARGET else 'NOT met'}] all cached {ratio:.2f}x the dry run (target <= {TARGET:g})")


if __name__ == "__main__":
    main()
