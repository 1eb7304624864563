"""What a run's answers are called, `answers` where each sample was asked more than once, else `samples`: in its
counts (show, list) and in its request rate (`samples/s`, `answers/s`). Loads no manifest model (list reads it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchrun.archive.speed import FIGURES

if TYPE_CHECKING:
    from benchrun.archive.reader import Run

RATE = "samples_per_s"
"""The speed figure that counts what was asked: samples/s, or answers/s of a run of repeats."""


def answer_unit(run: Run) -> str:
    """`answers` where each sample was asked more than once (summary.json says so, else the manifest of a run that
    did not end), else `samples`."""
    if run.summary is not None:
        repeated = run.summary.repeats is not None
    else:
        repeated = run.info.manifest_id is not None and "repeats" in run.manifest_data()
    return "answers" if repeated else "samples"


def figure_label(key: str, unit: str) -> str:
    """A speed figure's label, its rate in `unit`s per second: a run of 4 samples asked 3 times asks 12 answers."""
    return f"{unit}/s" if key == RATE else FIGURES[key]
