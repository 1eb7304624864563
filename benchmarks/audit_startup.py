"""How fast an audit command starts: `python -m benchrun.audit list` on a small archive, and importing each command.

    python benchmarks/audit_startup.py [--runs N] [--repeats N]

Writes N small runs (default 10) with benchrun's own `RunWriter` into a temporary directory (as
benchmarks/audit_bench.py does), then times, as whole processes, the interpreter alone, `--help`, `list ROOT`,
and `import benchrun.audit.<command>` for each command that only reads the archive: with hyperfine when it is on
PATH, else a loop of --repeats runs. Prints the best and the median wall time of each, then where the start-up of
`list` goes (`python -X importtime`, self time summed by top-level package). Goal (issue 13): `list` under 0.25 s
as a whole process on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from audit_bench import small_runs

GOAL_S = 0.25
READERS = ("listing", "show", "export", "compare", "report", "verify")


def commands(archive: Path) -> dict[str, list[str]]:
    """What is timed: label -> the command line."""
    python = [sys.executable]
    found = {"python -c pass (the interpreter alone)": [*python, "-c", "pass"],
             "python -m benchrun.audit --help": [*python, "-m", "benchrun.audit", "--help"],
             "python -m benchrun.audit list ROOT": [*python, "-m", "benchrun.audit", "list", str(archive)]}
    found.update({f"import benchrun.audit.{name}": [*python, "-c", f"import benchrun.audit.{name}"]
                  for name in READERS})
    return found


def times(command: list[str], repeats: int) -> list[float]:
    """Wall times of `command` (its output discarded): hyperfine's when it is installed, else a loop's."""
    if shutil.which("hyperfine"):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run(["hyperfine", "--warmup", "2", "--runs", str(repeats), "--export-json", out.name,
                            "--output", "null", "-N", subprocess.list2cmdline(command)], check=True,
                           stdout=subprocess.DEVNULL)
            return json.loads(Path(out.name).read_text())["results"][0]["times"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)  # warm the file cache and the bytecode
    found = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        found.append(time.perf_counter() - started)
    return found


def import_self_times(command: list[str], top: int = 8) -> list[tuple[str, float]]:
    """The `top` top-level packages by the self time `-X importtime` gives their modules, in seconds."""
    result = subprocess.run([command[0], "-X", "importtime", *command[1:]], capture_output=True, text=True,
                            check=True)
    by_package: Counter[str] = Counter()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and not line.rstrip().endswith("imported package"):
            own, _, name = (part.strip() for part in line[len("import time:"):].split("|"))
            if own.isdigit():
                name = name.split(".")[0] if not name.startswith("benchrun.") else ".".join(name.split(".")[:2])
                by_package[name] += int(own) / 1e6
    return by_package.most_common(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    tool = "hyperfine" if shutil.which("hyperfine") else f"a loop of {args.repeats} runs"
    print(f"{os.cpu_count()} cores; timed with {tool}")
    with tempfile.TemporaryDirectory(prefix="benchrun-audit-startup-") as tmp:
        archive = Path(tmp) / "outputs"
        small_runs(archive, args.runs, random.Random(0))
        print(f"{'command':<48}{'best s':>8}{'median s':>10}")
        for label, command in commands(archive).items():
            found = times(command, args.repeats)
            goal = ""
            if label.startswith("python -m benchrun.audit list"):
                goal = "  within the goal" if min(found) < GOAL_S else f"  over the {GOAL_S} s goal"
            print(f"{label:<48}{min(found):>8.3f}{statistics.median(found):>10.3f}{goal}")
        print("\nwhere `list` start-up goes (import self time, s):")
        for name, seconds in import_self_times(commands(archive)["python -m benchrun.audit list ROOT"]):
            print(f"  {name:<30}{seconds:>7.3f}")


if __name__ == "__main__":
    main()
