"""What each of benchrun's promises costs an answer, measured as whole processes, rung by rung (issue 23).

    python benchmarks/answer_cost.py [--n N] [--rounds R]

run_bench's N prompts at concurrency 1, zero latency, against a fresh fake Ollama each time, in R rounds. Each rung is
`python -m benchrun cache=false` with the executor doing a little more per answer than the rung before:
- bare: benchmarks/bare_loop.py, the loop a user would write (not benchrun);
- client: benchrun's process (Hydra, the compile, the preflight, the manifest in memory), the executor replaced by a
  loop around the runner's own `ollama` client: nothing benchrun does per answer;
- asking: each request through benchrun's asking (the dispatch, timeout_s, the first attempt of the retries, the
  answer's boundary: size, text, token counts);
- answered: and each answer made into its response record;
- recorded: and each response committed (its line and digest written, the speed figures and counts kept, the
  progress bar moved): the archive's promise that every answer is on disk before it is graded;
- graded: all of it, a built-in scorer (exact_match) in the run's process: the format check, the scorer, the score
  lines and their digests;
- user scorer: all of it, the scorer a user's custom_scorer.py (calculated_answer), called in the scorer process.
Each rung's CPU per answer is its CPU (the process's own rusage, its scorer process included) at N less at one
prompt, over N - 1; each line gives it, and what the rung adds to the one before. The progress bar is drawn (as on a
terminal) in every rung.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import yaml
from bare_loop import TEMPLATE, B
from run_bench import BARE_LOOP, MODEL, benchmark, benchrun_args, fake_server, run_child

RUNGS = ("bare", "client", "asking", "answered", "recorded", "graded", "user scorer")
PATCHED = ("client", "asking", "answered", "recorded")
"""The rungs whose executor is replaced (by `patch`) with a loop doing part of an answer's work."""


def builtin_benchmark(root: Path, n: int) -> Path:
    """run_bench's n prompts, scored by exact_match against a reference list: no scorer process."""
    bench = root / f"builtin{n}"
    if not bench.exists():
        bench.mkdir()
        task = {"name": "product", "template": TEMPLATE, "values": {"a": list(range(n)), "b": [B] * n},
                "reference": [str(a * B) for a in range(n)], "scorer": "exact_match", "format": "IntAnswer"}
        (bench / "tasks.yml").write_text(yaml.safe_dump([task], sort_keys=False), encoding="utf-8")
    return bench


def patch(rung: str) -> None:
    """Replace the executor's run with a loop that does what `rung` does per answer, and no more."""
    from benchrun.execute import executor

    async def run(self: executor.Executor, queries, regrade=()) -> None:
        with executor.frozen_heap():
            for (sample, repeat), key, hit in self._looked_up(queries):
                if rung == "client":
                    await self.runner.client.chat(model=self.runner.model, messages=self._messages(sample),
                                                  format=self._schemas[sample.task], **self.runner._request)
                elif rung == "asking":
                    await self._ask(sample, self.manifest.seed(repeat))
                else:
                    response, _ = await self._answer(sample, repeat, key, hit)
                    if rung == "recorded":
                        self.recorder.response(response)

    executor.Executor.run = run


def child(rung: str, args: list[str]) -> None:
    """`python -m benchrun ARGS` in this process, its executor patched for `rung`."""
    if rung in PATCHED:
        patch(rung)
    sys.argv = ["benchrun", *args]
    from benchrun.__main__ import main
    main()


def cpu_s(rung: str, n: int, scratch: Path, name: str) -> float:
    """CPU seconds of one whole process of `rung` on n prompts, against a fresh server."""
    with fake_server() as url:
        if rung == "bare":
            args = [sys.executable, str(BARE_LOOP), url, str(n), "1", str(scratch / f"{name}.jsonl")]
        else:
            bench = benchmark(scratch, n) if rung == "user scorer" else builtin_benchmark(scratch, n)
            args = [sys.executable, __file__, "--child", rung,
                    *benchrun_args(bench, url, 1, scratch / name, "cache=false")[3:]]
        return run_child(args, scratch).cpu_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.child:
        return child(args.child, rest)
    os.environ.update({"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"})
    per_answer: dict[str, list[float]] = {rung: [] for rung in RUNGS}
    with tempfile.TemporaryDirectory(prefix="benchrun-answer-cost-") as tmp:
        scratch = Path(tmp)
        for number in range(1, args.rounds + 1):
            for rung in RUNGS:
                whole = cpu_s(rung, args.n, scratch, f"{rung}-{number}".replace(" ", "_"))
                one = cpu_s(rung, 1, scratch, f"{rung}-{number}-one".replace(" ", "_"))
                per_answer[rung].append((whole - one) / (args.n - 1) * 1e6)
                print(f"round {number} {rung}: {per_answer[rung][-1]:,.0f} µs", file=sys.stderr, flush=True)
    print(f"{args.n:,} prompts at concurrency 1 ({MODEL}, zero latency), median of {args.rounds} rounds, CPU µs "
          "per answer beyond a one-prompt run")
    before = None
    for rung in RUNGS:
        figure = statistics.median(per_answer[rung])
        added = "" if before is None else f"{figure - before:+8,.0f}"
        print(f"  {rung:<12}{figure:>8,.0f}{added}")
        before = figure


if __name__ == "__main__":
    main()
