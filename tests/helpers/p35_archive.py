"""Runs for the thirty-fifth hostile pass of the archive side."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.p32_archive import sealed_fields, speed_remade


def hosted(run_dir: Path, host: str) -> Path:
    """A finished run whose first answer names server `host`, its summary's speed made again by the writer's own
    tally of its answers, sealed: its run.json untouched."""
    return speed_remade(sealed_fields(run_dir, "responses.jsonl", 1, host=host))

