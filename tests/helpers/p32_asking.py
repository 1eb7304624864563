"""Helpers for the thirty-second hostile pass of the asking side."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.auditcli import squeezed
from tests.helpers.commands import call_benchrun, run_dir_of


def pooled_warned(tmp_path: Path, *lengths: int | None) -> tuple[list[str], str, str]:
    """A run of the product task against a list of fake Ollama servers, each saying the model is loaded with one of
    `lengths`: the servers' URLs, what it said on stderr, and what `show` says of it (white space squeezed)."""
    with ExitStack() as stack:
        fakes = [stack.enter_context(FakeOllama(responder=listbench_answer, context_length=n)) for n in lengths]
        done = call_benchrun(f"runner.host=[{','.join(fake.url for fake in fakes)}]", "cache=false",
                             "task.only=[product]", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [fake.url for fake in fakes], done.stderr, squeezed(tmp_path, "show", str(run_dir_of(done.stdout)))
