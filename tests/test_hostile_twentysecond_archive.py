"""Hostile input, twenty-second pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases
it found bad, each with the rule it now obeys.

- `report` of a run with long answers held every shown answer whole to show TEXT_CAP characters of each: 280 MB of
  memory for 60 answers of 4 MB (a page of 634 KB), 4 GB for a task's 500 answers of 8 MB; under a 200 MB limit a
  pyo3 panic and a traceback. Now it keeps the characters it shows and the answer's length
  (`audit.report_samples.Records.keep`): 58 MB, the page byte for byte the same

What held is in the pass's note.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.audit import report, report_samples
from benchrun.audit.report_page import Job
from benchrun.audit.report_samples import read_records, shown_samples
from tests.helpers.commands import run_in_process


@pytest.fixture
def listbench_run(tmp_path) -> Path:
    return run_in_process(tmp_path, "r")


# -- the report keeps what it shows of an answer ---------------------------------------------------------------------

@pytest.mark.slow
def test_the_report_keeps_of_each_answer_what_it_shows(tmp_path, listbench_run, monkeypatch):
    """Every shown answer was held whole (its record as read) to print its first TEXT_CAP characters."""
    monkeypatch.setattr(report_samples, "TEXT_CAP", 5)
    run = load_run(listbench_run)
    records = read_records(run, shown_samples([Job(run.path, run)]))
    texts = {json.loads(line)["id"]: json.loads(line)["text"]
             for line in (listbench_run / "responses.jsonl").read_text().splitlines()}
    assert {len(kept.text) for answers in records.responses.values() for kept in answers} == {5}
    assert records.lengths == {(sample, 0): len(text) for sample, text in texts.items()}
    page = report.write_report([str(listbench_run)], tmp_path / "report.html").read_text()
    assert ('<code>product:a=3,b=4</code><pre>find </pre><span class="note">… 22 more characters</span></td>'
            '<td><pre>{&quot;ans</pre><span class="note">… 9 more characters</span><ul class="scores">') in page
