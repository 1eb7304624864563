"""Runs for the thirty-fifth hostile pass of the archive side."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.p25_archive import sealed_over
from tests.helpers.p32_archive import sealed_fields, speed_remade


def hosted(run_dir: Path, host: str) -> Path:
    """A finished run whose first answer names server `host`, its summary's speed made again by the writer's own
    tally of its answers, sealed: its run.json untouched."""
    return speed_remade(sealed_fields(run_dir, "responses.jsonl", 1, host=host))



def judge_listing(run_dir: Path, *hosts: str) -> Path:
    """A finished run whose run.json's judge runner asked the list of servers `hosts`, sealed over."""
    def listed(text: str) -> str:
        info = json.loads(text)
        info["judge"]["runner"]["host"] = list(hosts)
        return json.dumps(info, indent=2)
    return sealed_over(run_dir, listed)
