"""The names of a run directory's files and the statuses of a run (the run-directory contract of DESIGN.md)."""

from __future__ import annotations

CONFIG, MANIFEST, RUN, SUMMARY, SEAL = "config.yaml", "manifest.json", "run.json", "summary.json", "seal.json"
RESPONSES, SCORES = "responses.jsonl", "scores.jsonl"
DIGESTS = "records.sha256"
"""One line per record line, so verify can name the line that changed (the format is benchrun.archive.ledger's)."""
LOG = "benchrun.log"
"""The run's log: Hydra's job log (hydra.job.name is benchrun), where what user code prints goes too."""
RECORD_FILES = (RESPONSES, SCORES)
RUN_FILES = (CONFIG, MANIFEST, RUN, *RECORD_FILES, DIGESTS, SUMMARY, SEAL)
"""The files that make a run; a directory holding any of them holds a run."""
UNFINISHED = ("running", "interrupted", "failed")
"""The statuses `resume` finishes in place."""
