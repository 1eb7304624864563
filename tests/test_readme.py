"""The README is executable: every shell block runs as written against the loopback Ollama (which answers as
`python -m benchrun.testing.ollama_server` does and serves the models the README names), in a fresh directory, in README order; every
`$ command` of a console block prints what the README shows, up to times (the speed figures the wall clock measures
among them), ids and paths.

A block preceded by `<!-- not run by the README test: WHY -->` is left out (one needing a real Ollama, say)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.fake_cli import DEMO_MODELS, model_names
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.oracle import demo

README = Path(__file__).resolve().parent.parent / "README.md"
SKIP = re.compile(r"<!-- not run by the README test: (.+?) -->")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)
VARYING = [  # what differs from run to run, and what stands for it
    (re.compile(r"\d{4}-\d{2}-\d{2}[ T/]\d{2}[:-]\d{2}[:-]\d{2}(\.\d{6})?"), "<time>"),
    (re.compile(r"\b[0-9a-f]{12,64}\b"), "<hex>"),
    (re.compile(r"(?<=\s)/\S+/outputs/"), "outputs/"),
    (re.compile(r"(?<=\s)/\S+/(?=benchrun/demos/)"), ""),
    (re.compile(r"^(│ (?:latency p\d+ \(s\)|latency max \(s\)|wall \(s\)|samples/s)) .*"), r"\1 <measured>"),
    (re.compile(r"[━─ ]+"), " "),
]


@dataclass(frozen=True)
class Block:
    line: int
    kind: str
    text: str
    skip: str | None


def blocks() -> list[Block]:
    """The README's bash and console blocks, in order, with why a block is left out (if it is)."""
    text = README.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        if match[1] not in ("bash", "console"):
            continue
        before = text[:match.start()].rstrip().rsplit("\n", 1)[-1]
        skip = SKIP.fullmatch(before.strip())
        found.append(Block(text.count("\n", 0, match.start()) + 1, match[1], match[2], skip and skip[1]))
    return found


def commands(block: Block) -> list[tuple[str, str | None]]:
    """(command, the output the README shows or None): a bash block is one script; a console block a command per
    `$ ` line, each followed by its output."""
    if block.kind == "bash":
        return [(block.text, None)]
    pairs: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        else:
            pairs[-1][1].append(line)
    return [(command, "\n".join(out)) for command, out in pairs]


def normal(text: str) -> list[str]:
    """Output lines with times, ids, digests and the outputs/ root replaced, and table rules and padding folded."""
    lines = []
    for line in text.splitlines():
        for pattern, stand_in in VARYING:
            line = pattern.sub(stand_in, line)
        lines.append(line.strip())
    return [line for line in lines if line]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A new user's directory and home, and the loopback Ollama as $OLLAMA_HOST."""
    root = tmp_path_factory.mktemp("readme")
    (root / "home").mkdir()
    with FakeOllama(models=model_names(DEMO_MODELS), responder=demo) as server:
        env = {**{k: v for k, v in os.environ.items() if k not in ("HYDRA_FULL_ERROR", "BENCHRUN_VERBOSE")},
               "OLLAMA_HOST": server.url, "HOME": str(root / "home"), "COLUMNS": "200",
               "XDG_CACHE_HOME": str(root / "home" / ".cache"),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        yield root, env


def test_the_readme_marks_what_it_does_not_run():
    left_out = {b.line: b.skip for b in blocks() if b.skip}
    assert set(left_out.values()) <= {"it installs benchrun, as .ci/run does", "it needs a real Ollama",
                                      "it needs a Slurm cluster with GPUs and Ollama",
                                      "it starts the loopback server, which the test already runs",
                                      "it runs the tests and the benchmarks themselves"}
    assert sum(1 for b in blocks() if not b.skip) >= 8


@pytest.mark.slow
def test_every_readme_block_runs_as_written(workdir):
    """In README order, in one directory: a later block may read what an earlier one made. A console block's
    command may fail only where the README shows its error."""
    if shutil.which("jq") is None:
        pytest.skip("the README's examples use jq (apt-get install jq)")
    root, env = workdir
    for block in (b for b in blocks() if not b.skip):
        for command, shown in commands(block):
            result = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=root, env=env,
                                    capture_output=True, text=True, timeout=300)
            where = f"README line {block.line}: {command}\n{result.stdout}\n{result.stderr}"
            assert result.returncode == EXIT["ok"] or (shown is not None and "error:" in shown), where
            if shown is not None:
                assert normal(result.stdout + result.stderr) == normal(shown), where
