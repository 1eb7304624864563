"""One run over one server against the same run over two (issue 22), both measured as whole processes.

    python benchmarks/hosts_bench.py [--n N] [--latency S] [--concurrency C] [--pairs P]

N structured prompts (run_bench.py's benchmark: "find the product of {a} and 7", IntAnswer, a custom scorer) asked
by `python -m benchrun cache=false runner.concurrency=C` of fake Ollama servers (`python -m benchrun.testing.
ollama_server`, fresh processes for every measurement) that take S seconds per request and serve C at once, in P
pairs: A, `runner.host=URL`; B, `runner.host=[URL1,URL2]` (C in flight at each). Prints each pair's walls and
ratio, the medians, the median of the pair ratios, and how B's answers were shared between its servers.

Target (issue 22): N = 2,000 at 50 ms, C = 8: two servers take close to half the time of one (ideal 12.5 s and
6.25 s: N x S / C, and / 2C); met when the median ratio is at most 0.6.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from run_bench import benchmark, benchrun_args, completed_run, fake_server, run_child, verdict

TARGET = 0.6


def time_run(bench: Path, scratch: Path, name: str, servers: int, args: argparse.Namespace) -> tuple[float, Path]:
    """One benchrun process over `servers` fresh fake servers; its wall seconds and run directory."""
    outputs = scratch / name
    with ExitStack() as stack:
        urls = [stack.enter_context(fake_server(args.latency, args.concurrency)) for _ in range(servers)]
        host = urls[0] if servers == 1 else f"[{','.join(urls)}]"
        timing = run_child(benchrun_args(bench, host, args.concurrency, outputs, "cache=false"), scratch)
    run_dir, _ = completed_run(outputs)
    return timing.seconds, run_dir


def shares(run_dir: Path) -> dict[str, int]:
    """How many answers each server gave."""
    with (run_dir / "responses.jsonl").open(encoding="utf-8") as lines:
        return dict(Counter(json.loads(line).get("host") for line in lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    ideal = args.n * args.latency / args.concurrency
    print(f"{args.n} prompts at {args.latency * 1000:g} ms, concurrency {args.concurrency} per server "
          f"(ideal: one server {ideal:.2f} s, two {ideal / 2:.2f} s)")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        bench = benchmark(scratch, args.n)
        pairs = []
        for number in range(1, args.pairs + 1):
            one, _ = time_run(bench, scratch, f"one{number}", 1, args)
            two, run_dir = time_run(bench, scratch, f"two{number}", 2, args)
            pairs.append((one, two))
            print(f"pair {number}: one server {one:.2f} s, two {two:.2f} s, ratio {two / one:.3f}; answers per "
                  f"server {sorted(shares(run_dir).values())}", flush=True)
    ratio = statistics.median(two / one for one, two in pairs)
    print(f"median: one server {statistics.median(p[0] for p in pairs):.2f} s, two "
          f"{statistics.median(p[1] for p in pairs):.2f} s; median pair ratio {ratio:.3f}")
    verdict(ratio <= TARGET, f"two servers take at most {TARGET} of one server's time ({ratio:.3f})")


if __name__ == "__main__":
    sys.exit(main())
