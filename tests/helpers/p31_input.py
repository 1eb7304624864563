"""A benchmark holding a file of bytes (a text saved in another encoding), for the thirty-first pass of what goes in."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.p29_input import HOST
from tests.helpers.p30_input import TASK

CUSTOM_FORMAT = ("from pydantic import BaseModel\n\n\nclass F(BaseModel):\n    answer: str\n\n    @classmethod\n"
                 "    def model_json_schema(cls, *args, **kwargs):\n        return {schema!r}\n")
"""A custom_response.py whose format F has the JSON schema given (`.format(schema=...)`), not pydantic's."""


def dry_run_bytes(root: Path, files: dict[str, str], raw: dict[str, bytes], *args: str):
    """A dry run (in this process) of the benchmark `root/bench` made of the texts `files` and the bytes `raw`."""
    bench = write_bench(root, files)
    for rel, data in raw.items():
        (bench / rel).parent.mkdir(parents=True, exist_ok=True)
        (bench / rel).write_bytes(data)
    return call_benchrun("task.path=bench", HOST, "dry_run=true", *args, cwd=root)


def preset_run(root: Path, preset: bytes):
    """A dry run (in this process) of a one-task benchmark with the runner preset `root/conf/runner/mine.yaml` of
    the bytes `preset` (--config-dir conf runner=mine)."""
    write_bench(root, {"tasks.yml": TASK})
    (root / "conf" / "runner").mkdir(parents=True)
    (root / "conf" / "runner" / "mine.yaml").write_bytes(preset)
    return call_benchrun("--config-dir", "conf", "runner=mine", "task.path=bench", HOST, "dry_run=true", cwd=root)
