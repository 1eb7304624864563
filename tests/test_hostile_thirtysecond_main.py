"""The thirty-second hostile pass, the command line beside the sides. Fixed:
1. `resume --set runner.timeout_s=nan` (and `-inf`) was said `Input should be greater than 0`, and `rescore --rejudge
   judge.timeout_s=nan` `in 'config': judge.timeout_s: Input should be greater than 0`, where a run's command line
   says `nan is not a finite number`: a value given to benchrun-audit reads `nan`/`inf` as floats, as Hydra reads
   them (`core.yamlfile.parse_given`), and a rejudge's is refused naming `--rejudge` (the resume's case is in
   `test_hostile_twentythird_archive.py`).
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit

NOT_FINITE = " is not a finite number, and JSON (config.yaml, run.json, the manifest) has none for it: give a number\n"


@pytest.mark.parametrize(("given", "said"), [("judge.timeout_s=nan", "judge.timeout_s: nan"),
                                             ("judge.timeout_s=NaN", "judge.timeout_s: nan"),
                                             ("judge.options.temperature=-Inf", "judge.options.temperature: -inf")])
def test_a_rejudge_of_a_number_json_has_none_for_is_refused_as_a_run_refuses_it(tmp_path, given, said):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    done = audit(tmp_path, "rescore", str(run_dir), "--rejudge", given)
    assert (done.returncode, done.stderr) == (EXIT["usage"], f"benchrun: error: --rejudge {said}{NOT_FINITE}")
    assert not (run_dir / "rescores").exists()
