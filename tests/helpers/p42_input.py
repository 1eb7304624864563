"""A folder task of one values file, for the forty-second pass of what goes in."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun import BenchrunError, compile_plan
from tests.helpers.benchfiles import config, write_bench

TEMPLATE = {"tasks/t/template.txt": "say {a}\n"}
"""A folder task `t`'s template, showing value `a`."""


def refused(root: Path, files: dict[str, str], **runner: str) -> str:
    """The message compiling (in this process, as a dry run does) the benchmark `root/bench` of `files` is refused
    with, `runner` keys replacing the default runner's."""
    with pytest.raises(BenchrunError) as caught:
        compile_plan(config(write_bench(root, files), **runner), root)
    return str(caught.value)


def sample_ids(root: Path, files: dict[str, str]) -> list[str]:
    """The ids of the samples the benchmark `root/bench` of `files` compiles to."""
    return [sample.id for sample in compile_plan(config(write_bench(root, files)), root).manifest.samples]
