"""Hostile input, twenty-first pass, the files-and-processes side (issue 19's fresh pass of the same kinds): hostile
command lines, sweeps and process surroundings, the cases it found bad, each with the rule it now obeys.

- a key a sweep's command line both sweeps and gives again (`-m runner.model=llama3.2,gemma3 runner.model=mistral`):
  Hydra's sweeper kept the last alone, so the sweep of two models was one job asking mistral, exit 0, the list said
  nowhere (alike `runner.model=mistral runner.model=llama3.2,gemma3`: mistral's run never made; and with
  `++runner.model=mistral`, a key of its own to Hydra's sweeper, two jobs both asking mistral). Now refused in one
  line before anything is made (`compose.sweepsize.swept`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun

TWICE = ("benchrun: error: in 'config': runner.model is given more than once on the command line ({said}), and a sweep "
         "keeps only the last, so the values of the others would never run; give it once, listing every value the "
         "sweep is to run\n")


@pytest.mark.parametrize("given", [["runner.model=llama3.2,gemma3", "runner.model=mistral"],
                                   ["runner.model=mistral", "runner.model=llama3.2,gemma3"],
                                   ["runner.model=llama3.2,gemma3", "++runner.model=mistral"]])
@pytest.mark.parametrize("dry", [[], ["dry_run=true"]])
def test_a_key_a_sweep_varies_given_again_on_the_command_line_is_refused(tmp_path, given, dry):
    done = call_benchrun("-m", *given, "runner.host=http://127.0.0.1:9", "outputs=outputs", *dry, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", TWICE.format(said=", then ".join(given)))
    assert not (tmp_path / "outputs").exists()


def test_a_sweep_giving_one_list_twice_alike_runs_it_once(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "runner.model=llama3.2,gemma3", "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert done.stdout.count("dry run: no model was called") == 2
