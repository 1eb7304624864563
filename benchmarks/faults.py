"""What each fault costs the archive: benchrun broken the ways the world breaks it, then recovered as a user would.

    python benchmarks/faults.py [--kills K] [--seed S]

Every scenario of `benchrun.testing.faults` runs real `python -m benchrun` / `benchrun-audit` processes against the
fake Ollama server in a scratch directory. For each it prints how many processes ran (the broken one and the ones
that recovered), how many samples ended without exactly one response, how many with more than one, and what
`verify` says of the archive left at the end. The disk-full scenario needs root (it mounts a small tmpfs).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from benchrun.testing import faults
from benchrun.testing.lab import Lab, Outcome
from benchrun.testing.pause import HOOKS
from benchrun.testing.small_disk import can_mount


def scenarios(kills: int, seed: int) -> list[tuple[Callable[[Lab], Outcome], dict]]:
    """(scenario, Lab options) in the order of the table."""
    found = [
        (faults.reused_directory, {}), (faults.resume_while_running, {}), (faults.second_writer, {}),
        (faults.signal_then_resume, {}), (lambda lab: faults.signal_then_resume(lab, signal.SIGINT), {}),
        (faults.killed_resume, {}),
        (lambda lab: faults.tampered_then_resume(lab, "edited"), {}),
        (lambda lab: faults.tampered_then_resume(lab, "duplicated"), {}),
        (lambda lab: faults.tampered_then_resume(lab, "foreign"), {}),
        (faults.lost_server, {}), (faults.exiting_scorer, {"scorer": faults.EXITING_SCORER}),
        (faults.hanging_preflight, {}),
        *[((lambda h: lambda lab: faults.signal_in_hydra(lab, h))(hook), {}) for hook in HOOKS],
        (faults.signal_while_compiling, {}), (lambda lab: faults.signal_then_resume(lab, answered=0), {}),
        (lambda lab: faults.random_kills(lab, kills=kills, seed=seed), {"n": 50}),
    ]
    if can_mount():
        found.insert(10, (faults.disk_full, {}))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs in the random-kill scenario")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="benchrun-faults-") as scratch:
        for number, (scenario, options) in enumerate(scenarios(args.kills, args.seed)):
            started = time.perf_counter()
            with Lab(Path(scratch) / str(number), **options) as lab:
                outcome = scenario(lab)
            rows.append((outcome, time.perf_counter() - started))
            print(f"  {outcome.fault}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    print("| fault | runs | samples lost | samples duplicated | verify |")
    print("|---|---|---|---|---|")
    for outcome, _ in rows:
        verdict = "intact" if outcome.verified else ("nothing to verify" if outcome.run_dir is None else "NOT intact")
        print(f"| {outcome.fault} | {outcome.runs} | {outcome.lost} | {outcome.duplicated} | {verdict} |")


if __name__ == "__main__":
    main()
