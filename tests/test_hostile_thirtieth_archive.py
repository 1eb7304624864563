"""Hostile input, thirtieth pass, the archive and audit side (what the twenty-ninth left, then a fresh pass): the cases
it found bad, each with the rule it now obeys.

- a run (runner.structured=auto) whose server answered the preflight's probe as `qwen2.5-7b` and every sample as
  `qwen2.5-14b`: run.json's `answers_as` names a model no answer of the run came from, and verify said intact; the
  names its answers gave are kept in verify's one pass, and run.json's contradicting all is said
  (`audit.summarycheck.RunPass`, `audit.verify.belonging`)
- `compare RUN RUN` (or the run by path and by id, or by another spelling of its path): it printed a table of zeros
  (delta +0.000, p 1, speed 1.00x); a run is named once, in one line naming it (`audit.compare._named_once`)
"""
from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p29_archive import failed
from tests.helpers.p30_archive import switched_run

# -- what the twenty-ninth pass left -----------------------------------------------------------------------------------


def test_answers_as_that_no_answer_of_the_run_gives_is_said_by_verify(tmp_path):
    run_dir = switched_run(tmp_path, "qwen2.5-7b", "qwen2.5-14b")
    identity = json.loads((run_dir / "run.json").read_text())["identity"]
    models = {json.loads(line)["extra"]["model"] for line in (run_dir / "responses.jsonl").read_text().splitlines()}
    assert (identity["answers_as"], models) == ("qwen2.5-7b", {"qwen2.5-14b"})
    assert failed(tmp_path, run_dir) == [
        "FAIL  run.json: answers_as is 'qwen2.5-7b', but every answer of the run names its model 'qwen2.5-14b': the "
        "model that answered is not the one run.json names"]


def test_answers_as_that_the_answers_give_is_intact(tmp_path):
    run_dir = switched_run(tmp_path, "qwen2.5-7b", "qwen2.5-7b")
    done = audit(tmp_path, "verify", str(run_dir))
    assert (done.returncode, done.stderr, done.stdout.splitlines()[-1]) == (0, "", "intact")


@pytest.mark.parametrize("again", ["outputs/r1", "555555", "outputs/../outputs/r1/"])
def test_a_run_compared_with_itself_is_refused_in_one_line(tmp_path, again):
    synthetic_run(tmp_path / "outputs" / "r1", [0.5, 1.0])
    synthetic_run(tmp_path / "outputs" / "r2", [0.5, 0.0], run_id="6" * 12)
    done = audit(tmp_path, "compare", "outputs/r2", "outputs/r1", again, "--root", "outputs")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: run 555555555555 ({tmp_path / 'outputs' / 'r1'}) is named twice: a run compared with "
        "itself differs in nothing; name each run once\n"))
