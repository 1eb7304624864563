"""Hostile input, twenty-second pass, the archive and audit side's second wave (issue 19's fresh pass of the same
kinds): the cases it found bad, each with the rule it now obeys.

- `list` of a run whose writer was killed said `running` (run.json's, as it began), as show did before the first
  wave. Now what run.lock tells (`archive.writerless.stopped`, which loads no manifest model, as list must not)
- a run of repeats: its request rate said `samples/s` counting answers (compare put it 3x "faster" than the same
  benchmark asked once), list's `54/54` read as samples. Now `answers/s` and `54/54 answers`
  (`archive.answerunit`)
- `show --wrong` of 10,000 samples: every row laid out by rich (5 s). Now set as list's long tables are
  (`console.long_tables.print_table`)
- a killed run's run.json with its model edited: verify said nothing of it, show gave the edited model, a resume
  would have recorded the answers as its. Now checked against config.yaml's runner.model (`trust.model_edited`)
- `rescore --scorer-timeout-s inf`: taken (no limit), where a run refuses `scorer_timeout_s=inf`. Now refused
  (`audit.rescore._time_limit`)

What held is in the pass's note.
"""
from __future__ import annotations

import json

import pytest
from rich.table import Table

from benchrun.archive.locknote import describe, parsed
from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.auditcli import audit, squeezed
from tests.helpers.commands import make_run, run_in_process
from tests.helpers.killed import killed_run
from tests.helpers.killed import write_bench as write_killed_bench

# -- list of a run whose writer was killed -----------------------------------------------------------------------------

@pytest.mark.slow
def test_list_says_a_killed_runs_writer_stopped(tmp_path):
    """A run SIGKILLed after 10 answers: `list` said `running` of it, and `--json` a reason of null."""
    write_killed_bench(tmp_path / "bench")
    with FakeOllama() as server:
        run_dir = killed_run(tmp_path, server)
    note = describe(parsed((run_dir / "run.lock").read_bytes()))
    done = audit(tmp_path, "list", str(tmp_path / "outputs"), "--json")
    assert done.returncode == EXIT["ok"], done.stderr
    [listed] = json.loads(done.stdout)
    assert (listed["status"], listed["reason"]) == ("running", (
        f"no live process holds run.lock: its writer ({note}) stopped before the run ended (killed, or its disk "
        f"failed); finish it with: benchrun-audit resume {run_dir}"))
    table = audit(tmp_path, "list", str(tmp_path / "outputs"))
    assert "running (writer stopped)" in table.stdout


# -- a run of repeats counts answers, and says so ----------------------------------------------------------------------

@pytest.mark.slow
def test_a_repeated_runs_rate_and_list_count_say_answers(tmp_path):
    """listbench (18 samples) asked 3 times: its speed figure `samples/s` counted answers (54 per run), so compare put
    it 3x "faster" than the same benchmark asked once, and list's `54/54` read as 54 samples."""
    once = run_in_process(tmp_path / "once", "r")
    thrice = run_in_process(tmp_path / "thrice", "r", "repeats=3")
    assert "answers/s" not in squeezed(tmp_path, "show", str(once))
    assert " samples/s " in squeezed(tmp_path, "show", str(once))
    assert " answers/s " in squeezed(tmp_path, "show", str(thrice))
    assert " answers/s " in squeezed(tmp_path, "compare", str(once), str(thrice))
    compared = json.loads(audit(tmp_path, "compare", str(once), str(thrice), "--json").stdout)
    [rate] = [line for line in compared["comparisons"][0]["speed"] if line["figure"] == "samples_per_s"]
    assert rate["label"] == "answers/s"
    listed = squeezed(tmp_path, "list", str(tmp_path / "thrice" / "outputs"))
    assert " completed │ 54/54 answers │ " in listed
    assert " completed │ 18/18 │ " in squeezed(tmp_path, "list", str(tmp_path / "once" / "outputs"))


# -- show --wrong of many samples is set as list's long tables are -----------------------------------------------------

@pytest.mark.slow
def test_show_wrong_of_many_samples_is_not_laid_out_row_by_row(tmp_path, monkeypatch):
    """`show RUN --wrong METRIC` of 10,000 wrong samples took 5 s (12 s under load): rich laid out every row, where
    list's long tables are set in the widths rich chose for the rows that decide them. 60 samples here."""
    write_killed_bench(tmp_path / "bench")
    run_dir = make_run(tmp_path, "task.path=bench", responder=lambda req: json.dumps({"answer": 1}))
    laid_out = []
    add_row = Table.add_row
    monkeypatch.setattr(Table, "add_row", lambda table, *cells, **kw: laid_out.append(cells) or add_row(table, *cells, **kw))
    done = audit(tmp_path, "show", str(run_dir), "--wrong", "calculated_answer")
    assert done.returncode == EXIT["ok"], done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("│ times7:")]
    assert len(rows) == 60 and [cell.strip() for cell in rows[0].split("│")[1:-1]] == [
        "times7:a=0,b=7", "times7", "find the product of 0 and 7", "calculated", "0"]
    assert len(laid_out) < 60


# -- run.json of a run that did not end, its model edited -------------------------------------------------------------

@pytest.mark.slow
def test_a_killed_runs_model_edited_in_run_json_is_caught(tmp_path):
    """A killed run's run.json (which no seal covers yet) with its model edited to another's: verify said only that
    its writer stopped, show gave the edited model as the one that answered, and a resume (asking config.yaml's
    model) would have recorded the first session's answers as the edited model's."""
    write_killed_bench(tmp_path / "bench")
    with FakeOllama() as server:
        run_dir = killed_run(tmp_path, server)
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "model": "gemma3"}))
    why = ("says model 'gemma3', but config.yaml, as the run started (its digest in run.json checked), says "
           "runner.model 'llama3.2', which the run was asked with and a resume goes on asking with: run.json was "
           "edited")
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["not_intact"]
    assert f"FAIL  run.json: {why}\n" in verified.stdout
    resumed = audit(tmp_path, "resume", str(run_dir))
    assert (resumed.returncode, resumed.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir / 'run.json'}': {why}; a run asks one model: put run.json's back, or start a "
        "new run\n"))
    assert json.loads((run_dir / "run.json").read_text())["model"] == "gemma3"


# -- rescore's scorer time limit is one a run takes --------------------------------------------------------------------

@pytest.mark.parametrize("limit", ["inf", "1e309"])
def test_rescore_refuses_an_infinite_scorer_time_limit_as_a_run_does(tmp_path, limit):
    """`--scorer-timeout-s inf` was taken (no limit: a scorer that hangs hung the rescore), where a run refuses
    `scorer_timeout_s=inf` (JSON has no number for it) and the option says it takes what scorer_timeout_s takes."""
    run_dir = run_in_process(tmp_path, "r")
    done = audit(tmp_path, "rescore", str(run_dir), "--scorer-timeout-s", limit)
    assert (done.returncode, done.stderr.splitlines()[-1]) == (EXIT["usage"], (
        f"benchrun-audit rescore: error: argument --scorer-timeout-s: '{limit}' is no time limit: give seconds over "
        "0, as scorer_timeout_s takes"))
    assert not (run_dir / "rescores").exists()
