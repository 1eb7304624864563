"""What a benchmark of one large values file, or of many tasks, costs to compile: seconds and peak memory.

    python benchmarks/values_file_bench.py [--rows N] [--tasks N]

Each figure is of a fresh process (benchrun imported first, so start-up is not counted): a list-style task of a CSV
values file of N rows (`what is {a} plus {b}?`, a reference column), then N list-style tasks and N folder tasks of two
samples each. Printed: seconds, peak RSS growth and bytes of it per sample. The thirty-fifth pass of issue 19 (200,000
rows, 2 shared cores, one measure): 12.3 s and 387 MB before, 3.7 s and 243 MB after the collector was held off
while compiling (compiler.collector) and the samples of a task shared one set of their fields. The thirty-sixth
(5,000 folder tasks of one custom scorer, 2 shared cores, a compile in a fresh process, three alternate measures):
8.65-9.86 s before, 6.51-7.89 s after each file of a task folder was no longer resolved once its folder was
(compiler.sources.benchmark_files), nor the scorer's source read, hashed and checked once per task
(compiler.plan._scorer).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = """
import json, sys, time
from pathlib import Path
import benchrun

def peak():
    return next(int(line.split()[1]) * 1024 for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("VmHWM:"))

bench = Path(sys.argv[1])
cfg = {"task": {"path": str(bench), "name": bench.name, "only": None},
       "runner": {"type": "ollama", "model": "m", "options": {"temperature": 0, "seed": 0}}}
before, start = peak(), time.perf_counter()
samples = len(benchrun.compile(cfg).samples)
print(json.dumps([samples, time.perf_counter() - start, peak() - before]))
"""


def values_file(root: Path, rows: int) -> Path:
    bench = root / "rows"
    bench.mkdir()
    (bench / "tasks.yml").write_text("- name: t\n  template: 'what is {a} plus {b}?'\n  values_file: rows.csv\n"
                                     "  scorer: exact_match\n", encoding="utf-8")
    lines = "".join(f"{n},{n + 1},{2 * n + 1}\n" for n in range(rows))
    (bench / "rows.csv").write_text("a,b,reference\n" + lines, encoding="utf-8")
    return bench


def list_tasks(root: Path, tasks: int) -> Path:
    bench = root / "listed"
    bench.mkdir()
    task = "- name: t{}\n  template: 'what is {{a}}?'\n  values: {{a: [1, 2]}}\n  reference: ['1', '2']\n"
    (bench / "tasks.yml").write_text("".join(task.format(n) for n in range(tasks)), encoding="utf-8")
    return bench


def folder_tasks(root: Path, tasks: int) -> Path:
    bench = root / "folders"
    for n in range(tasks):
        folder = bench / "tasks" / f"t{n}"
        folder.mkdir(parents=True)
        (folder / "template.txt").write_text("what is {a}?\n", encoding="utf-8")
        (folder / "values.csv").write_text("a,reference\n1,1\n2,2\n", encoding="utf-8")
    return bench


def scored_folder_tasks(root: Path, tasks: int) -> Path:
    """`folder_tasks`, each scored by one scorer of the benchmark's custom_scorer.py (its info.yml naming it)."""
    bench = folder_tasks(root / "scored", tasks)
    (bench / "custom_scorer.py").write_text("def s(response, reference):\n    return 1\n", encoding="utf-8")
    for n in range(tasks):
        (bench / "tasks" / f"t{n}" / "info.yml").write_text("scorer: s\n", encoding="utf-8")
    return bench


def measured(bench: Path) -> tuple[int, float, int]:
    """(samples, seconds, peak RSS growth in bytes) of one compile of `bench` in a fresh process."""
    done = subprocess.run([sys.executable, "-c", PROBE, str(bench)], capture_output=True, text=True, check=True)
    samples, seconds, grown = json.loads(done.stdout)
    return samples, seconds, grown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--tasks", type=int, default=5_000)
    args = parser.parse_args()
    print(f"{'benchmark':<28}{'samples':>10}{'seconds':>9}{'RSS +MB':>9}{'B/sample':>10}")
    with tempfile.TemporaryDirectory(prefix="benchrun-values-bench-") as tmp:
        root = Path(tmp)
        for label, bench in ((f"{args.rows:,} rows of one file", values_file(root, args.rows)),
                             (f"{args.tasks:,} list tasks", list_tasks(root, args.tasks)),
                             (f"{args.tasks:,} folder tasks", folder_tasks(root, args.tasks)),
                             (f"{args.tasks:,} scored folder tasks", scored_folder_tasks(root, args.tasks))):
            samples, seconds, grown = measured(bench)
            print(f"{label:<28}{samples:>10,}{seconds:>9.2f}{grown / 2**20:>9.0f}{grown / samples:>10,.0f}")


if __name__ == "__main__":
    main()
