"""runner=local against a bare loop of llama-cpp-python calls: what benchrun costs on top of the embedded model.

    python benchmarks/local_bench.py [--repeats K] [--grid N]

Two workloads: the seed's listbench (18 prompts) and a product grid of N prompts (default 200, IntAnswer). For each,
in turn and K times (median reported):
- benchrun: a whole `python -m benchrun runner=local task.path=...` process;
- bare: a whole process of this script (`--bare`) that loads the same GGUF with the same arguments and, for the same
  prompts (taken from the run's own manifest), calls `Llama.create_chat_completion` with the same grammar (the
  library's JSON-schema grammar of the same bounded schema, and the same `Guard` against raw control characters in
  strings, without which the library lets this model write invalid JSON and the two would not generate the same
  tokens), the same options and a fresh context each time.
Printed: wall time of the whole process, completion tokens, tokens per second of generation, and the ratio of
benchrun's wall to the bare loop's (target: within 1.15x).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRID_SCORER = "import json\n\ndef right(response, values):\n    return int(json.loads(response)['answer'] == values['a'] * values['b'])\n"


def grid_bench(root: Path, n: int) -> Path:
    """A benchmark of n products, a in 1..n/10, b in 1..10."""
    bench = root / "grid"
    bench.mkdir(parents=True, exist_ok=True)
    (bench / "custom_scorer.py").write_text(GRID_SCORER)
    (bench / "tasks.yml").write_text(
        "- name: product\n  template: 'find the product of {a} and {b}'\n"
        f"  values:\n    a: {list(range(1, n // 10 + 1))}\n    b: {list(range(1, 11))}\n"
        "  value_combinations: combinations\n  reference: calculated\n  scorer: right\n  format: IntAnswer\n")
    return bench


def benchrun_once(root: Path, bench: str) -> tuple[float, int, float, Path]:
    """(wall s, completion tokens, generation s, run directory) of one `python -m benchrun runner=local` process."""
    outputs = Path(tempfile.mkdtemp(dir=root, prefix="outputs-"))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "benchrun", "runner=local", f"task.path={bench}", f"outputs={outputs}",
                    "cache=false"], check=True, capture_output=True, cwd=root)  # every prompt asked of the model
    wall = time.perf_counter() - started
    [run_dir] = [p.parent for p in outputs.glob("*/*/run.json")]
    responses = [json.loads(line) for line in (run_dir / "responses.jsonl").read_text().splitlines()]
    return (wall, sum(r["completion_tokens"] for r in responses),
            sum(r["durations_ns"]["total"] for r in responses) / 1e9, run_dir)


def bare_once(root: Path, run_dir: Path) -> tuple[float, int, float]:
    """(wall s, completion tokens, generation s) of one bare-loop process on the prompts of `run_dir`."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--bare", str(run_dir)], check=True, capture_output=True,
                         text=True, cwd=root)
    wall = time.perf_counter() - started
    tokens, generation = json.loads(out.stdout.splitlines()[-1])
    return wall, tokens, generation


def bare_loop(run_dir: Path) -> None:
    """The bare loop itself: the run's model, prompts, schemas and options, straight into llama-cpp-python."""
    import llama_cpp

    from benchrun.execute.runners.local import bounded_strings, model_file
    from benchrun.execute.runners.local_engine import LOADING, SAMPLING, Guard

    manifest = json.loads((run_dir / "manifest.json").read_text())
    runner = json.loads((run_dir / "run.json").read_text())["runner"]
    options = runner["options"]
    loading = {LOADING[k]: v for k, v in options.items() if k in LOADING and v is not None}
    loading.setdefault("n_threads", __import__("os").cpu_count())
    llm = llama_cpp.Llama(model_path=str(model_file(runner["model_path"])), verbose=False,
                          n_threads_batch=loading["n_threads"], **loading)
    sampling = {SAMPLING[k]: v for k, v in options.items() if k in SAMPLING and v is not None}
    grammars = {t["name"]: llama_cpp.LlamaGrammar.from_json_schema(
        json.dumps(bounded_strings(t["format"]["json_schema"], runner["max_string_length"])), verbose=False)
        for t in manifest["tasks"]}
    guard = Guard(llm)
    tokens, generation = 0, 0.0
    for sample in manifest["samples"]:
        started = time.perf_counter()
        llm.reset()
        guard.begin()
        out = llm.create_chat_completion(messages=[{"role": "user", "content": sample["prompt"]}],
                                         grammar=grammars[sample["task"]],
                                         logits_processor=llama_cpp.LogitsProcessorList([guard]), **sampling)
        generation += time.perf_counter() - started
        tokens += out["usage"]["completion_tokens"]
    print(json.dumps([tokens, generation]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--grid", type=int, default=200, help="prompts in the product grid (a multiple of 10)")
    parser.add_argument("--bare", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare:
        bare_loop(args.bare)
        return
    with tempfile.TemporaryDirectory(prefix="benchrun-local-bench-") as scratch:
        root = Path(scratch)
        print("| workload | bare wall | benchrun wall | ratio | bare tok/s | benchrun tok/s | tokens |")
        print("|---|---|---|---|---|---|---|")
        for name, bench in (("listbench (18)", "demo:listbench"), (f"product grid ({args.grid})",
                                                                     str(grid_bench(root, args.grid)))):
            ours, bare = [], []
            for _ in range(args.repeats):
                wall, tokens, generation, run_dir = benchrun_once(root, bench)
                ours.append((wall, tokens / generation))
                bare_wall, bare_tokens, bare_generation = bare_once(root, run_dir)
                bare.append((bare_wall, bare_tokens / bare_generation))
            wall, rate = (statistics.median(x) for x in zip(*ours))
            bare_wall, bare_rate = (statistics.median(x) for x in zip(*bare))
            print(f"| {name} | {bare_wall:.1f} s | {wall:.1f} s | {wall / bare_wall:.2f}x | {bare_rate:.0f} | "
                  f"{rate:.0f} | {tokens} |", flush=True)


if __name__ == "__main__":
    main()
