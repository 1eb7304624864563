"""Hostile input, twenty-first pass, the files-and-processes side's second wave (issue 19's fresh pass of the same
kinds): the cases it found bad, each with the rule it now obeys.

- a sweep a config file writes (`hydra.sweeper.params: {runner.model: llama3.2,gemma3}`) and the command line's
  `++runner.model=mistral`: Hydra's sweeper keeps the two as keys of their own, so each job was given both, the last
  winning: two jobs, both asking mistral, exit 0. Now refused in one line before anything is made, as the command
  line's own repeat is (`compose.sweepsize.swept`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun


@pytest.mark.parametrize("given", ["++runner.model=mistral", "~runner.model"])
def test_a_key_a_config_files_sweep_varies_given_with_a_prefix_on_the_command_line_is_refused(tmp_path, given):
    (tmp_path / "myconf" / "runner").mkdir(parents=True)
    (tmp_path / "myconf" / "runner" / "sw.yaml").write_text(
        "# @package _global_\ndefaults:\n  - ollama@runner\nhydra:\n  sweeper:\n    params:\n"
        "      runner.model: llama3.2,gemma3\n")
    done = call_benchrun("--config-dir", "myconf", "-m", "runner=sw", given, "runner.host=http://127.0.0.1:9",
                         "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: in 'config': runner.model is given by hydra.sweeper.params "
        f"(runner.model=llama3.2,gemma3) and on the command line ({given}), which Hydra's sweeper keeps as two keys, "
        "every job taking the last, so the sweep's values would never run; give it once (a plain runner.model=... on "
        "the command line replaces a config file's sweep)\n")
    assert not (tmp_path / "outputs").exists()
