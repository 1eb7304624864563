"""One reader of the archive: a run that cannot be read is reported the same way everywhere, never skipped, and a
run whose records are gone is refused by every command that needs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.archive.sweep import write_sweep_summary
from benchrun.audit.__main__ import main as audit_main
from benchrun.audit.listing import Unreadable, list_runs
from benchrun.core.errors import EXIT
from tests.helpers.archives import synthetic_run


@pytest.fixture
def archive(tmp_path) -> Path:
    """outputs/ with two synthetic runs, one with a run.json that is not JSON."""
    root = tmp_path / "outputs"
    synthetic_run(root / "day" / "good", [1, 0, 1])
    bad = synthetic_run(root / "day" / "bad", [1, 1])
    (bad / "run.json").write_text("{not json")
    return root


def test_list_shows_an_unreadable_run_last(archive, capsys):
    entries = list_runs(archive)
    assert [type(e).__name__ for e in entries] == ["ListedRun", "Unreadable"]
    unreadable = entries[-1]
    assert isinstance(unreadable, Unreadable) and unreadable.error.file == str(archive / "day" / "bad" / "run.json")
    assert audit_main(["list", str(archive), "--json"]) == EXIT["ok"]
    rows = json.loads(capsys.readouterr().out)
    assert rows[-1] == {"path": str(archive / "day" / "bad" / "run.json"), "status": "unreadable",
                        "listed_as": "unreadable",
                        "reason": f"in '{archive / 'day' / 'bad' / 'run.json'}': unreadable: Invalid JSON: key must "
                                  "be a string at line 1 column 2"}
    assert [row["status"] for row in rows] == ["completed", "unreadable"]
    assert list_runs(archive, status=["completed"])[0].run.info.status == "completed"
    assert len(list_runs(archive, status=["completed"])) == 1


def test_the_sweep_summary_reports_an_unreadable_job(archive):
    summary = write_sweep_summary(archive / "day")
    assert [(job.dir, job.status) for job in summary.jobs] == [("bad", "unreadable"), ("good", "completed")]
    assert summary.jobs[0].reason == (f"in '{archive / 'day' / 'bad' / 'run.json'}': unreadable: Invalid JSON: key "
                                      "must be a string at line 1 column 2")
    assert [job.dir for job in summary.failed] == ["bad"]


@pytest.mark.parametrize("command", [["rescore"], ["compare", "RUN"], ["export"], ["report"]])
def test_commands_refuse_a_run_whose_records_are_gone(archive, command, capsys):
    good = archive / "day" / "good"
    (good / "responses.jsonl").unlink()
    args = [command[0], str(good), *[str(good) for _ in command[1:]]]
    assert audit_main(args) == EXIT["archive"]
    run_id = json.loads((good / "run.json").read_text())["run_id"]
    assert capsys.readouterr().err == (f"benchrun: error: in '{good}': run {run_id} has no responses.jsonl: its "
                                       "records are gone\n")
    assert not (good / "rescores").exists()
