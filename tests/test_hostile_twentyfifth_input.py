"""The twenty-fifth hostile pass of issue 19, the side of what goes in and runs as processes: a review of what the
twenty-fourth pass added (counts as whole numbers, credentials, strict CSV, taking back, load failures), then a fresh
pass. /work/notes/p25/result-input.md has the whole list, what held and what was left.

Fixed:
1. Text for a number (`repeats='2'`) and text or a number for true/false (`dry_run=no`) were taken by pydantic's lax
   reading; `dry_run=no` ran a real run in a dry run's scratch folder, removed as it ended (core.settingsbase).
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.commands import call_benchrun

HOST = "runner.host=http://127.0.0.1:9"


@pytest.mark.parametrize(("given", "said"), [
    ("repeats='2'", "repeats: Input should be a valid integer, not '2'"),
    ("runner.timeout_s='2.5'", "runner.timeout_s: Input should be a valid number, not '2.5'"),
    ("dry_run=1", "dry_run: Input should be a valid boolean, not 1")])
def test_text_for_a_number_or_a_number_for_true_or_false_is_refused(tmp_path, given, said):
    """Before: taken as 2, 2.5 and true, config.yaml keeping the '2', '2.5' and 1 given."""
    done = call_benchrun("task=listbench", HOST, "dry_run=true", given, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'config': {said}\n")


def test_dry_run_no_is_refused_before_a_model_is_asked(tmp_path):
    """Before: pydantic read 'no' as false and ran the benchmark, Hydra's reading ('no' is true) put the run in a dry
    run's scratch folder, which was removed as the process ended: the model asked, the run lost, exit 0."""
    with FakeOpenAI(models=["m"], responder=listbench_answer) as server:
        done = call_benchrun("task=listbench", "runner=openai", f"runner.base_url={server.url}", "runner.model=m",
                             "cache=false", "dry_run=no", f"outputs={tmp_path / 'out'}", cwd=tmp_path)
        asked = [r for r in server.requests if r["path"].endswith("/chat/completions")]
    assert (done.returncode, done.stdout, done.stderr, asked, (tmp_path / "out").exists()) == (
        EXIT["usage"], "", "benchrun: error: in 'config': dry_run: Input should be a valid boolean, not 'no'\n", [],
        False)


def test_a_number_setting_still_takes_a_whole_number_and_text_where_text_is_one(tmp_path):
    done = call_benchrun("task=listbench", HOST, "dry_run=true", "runner.timeout_s=2", "runner.keep_alive='5m'",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
