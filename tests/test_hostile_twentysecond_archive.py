"""Hostile input, twenty-second pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases
it found bad, each with the rule it now obeys.

- `report` of a run with long answers held every shown answer whole to show TEXT_CAP characters of each: 280 MB of
  memory for 60 answers of 4 MB (a page of 634 KB), 4 GB for a task's 500 answers of 8 MB; under a 200 MB limit a
  pyo3 panic and a traceback. Now it keeps the characters it shows and the answer's length
  (`audit.report_samples.Records.keep`): 58 MB, the page byte for byte the same; a score's detail alike (a format
  check's quotes the refused answer whole: 342 KB of page for 3 answers of 100 KB), `Records.keep_score`
- merge of every shard that asks a sample, of more shards than samples (`shard=i/3` of 2): refused, `no run of shard
  3/3; merge with --partial`, which recorded a complete run as missing it. Now a shard asking no sample is not
  missing (`audit.merge._missing`)
- show and the report of a run whose writer was killed: `status running` (run.json's as it began). Now what run.lock
  tells (`archive.writerless.stopped`, once `archive.trust.stopped`): no live process holds it, and to resume it
- `report RUN` with RUN/report.html planted as a link (-> ~/.bashrc): written through; as a FIFO: a hang that
  SIGTERM could not end. Now the default file is replaced as the archive's own are (`audit.report.write_report`)
- `report --output FIFO` whose reader waits: Ctrl-C and SIGTERM held while it waited, only SIGKILL ended it. Now a pipe
  or device is written with no signals held (`archive.atomic.write_atomic`): exit 130, one line
- `rescore --rejudge judge.repeats=2`: rescore.json kept no record of the judge's repeats. Now `judge.repeats`, and
  the printout says it (`audit.rejudge`, `audit.judged.judge_identity`)

What held is in the pass's note.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from html import escape
from pathlib import Path

import pytest

from benchrun.archive.locknote import describe, parsed
from benchrun.archive.reader import load_run
from benchrun.audit import report, report_samples
from benchrun.audit.report_page import Job
from benchrun.audit.report_samples import read_records, shown_samples
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.auditcli import audit, squeezed
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import run_in_process
from tests.helpers.judges import JUDGES, RESPONSE
from tests.helpers.judges import TASKS as JUDGED_TASKS
from tests.helpers.judges import answer as judged_answer
from tests.helpers.killed import killed_run
from tests.helpers.killed import write_bench as write_killed_bench


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
    assert records.lengths == {(sample, 0, ""): len(text) for sample, text in texts.items()}
    page = report.write_report([str(listbench_run)], tmp_path / "report.html").read_text()
    assert ('<code>product:a=3,b=4</code><pre>find </pre><span class="note">… 22 more characters</span></td>'
            '<td><pre>{&quot;ans</pre><span class="note">… 9 more characters</span><ul class="scores">') in page


@pytest.mark.slow
def test_the_report_keeps_of_each_scores_detail_what_it_shows(tmp_path, monkeypatch):
    """A format check's detail quotes the answer it refused (`'yyy…' is not of type 'object'`): the report printed it
    whole beside the answer cut to TEXT_CAP (342 KB for 3 answers of 100 KB; 72 KB now), and held it whole. Now as an answer is: its first TEXT_CAP
    characters and how many more."""
    monkeypatch.setattr(report_samples, "TEXT_CAP", 5)
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorer="contains"))})
    run_dir = run_in_process(tmp_path, "r", "task.path=bench", responder=lambda req: json.dumps("y" * 20))
    details = {json.loads(line)["id"]: json.loads(line)["detail"]
               for line in (run_dir / "scores.jsonl").read_text().splitlines() if json.loads(line)["detail"]}
    assert details["t:a=1"] == "\"yyyyyyyyyyyyyyyyyyyy\" is not of type 'object'"
    run = load_run(run_dir)
    records = read_records(run, shown_samples([Job(run.path, run)]))
    assert {score.detail for scores in records.scores.values() for score in scores} == {None, '"yyyy'}
    assert {key: n for key, n in records.lengths.items() if key[2]} == {
        (sample, 0, "format_valid"): len(detail) for sample, detail in details.items()}
    page = report.write_report([str(run_dir)], tmp_path / "report.html").read_text()
    more = len(details["t:a=1"]) - 5
    assert (f'<li>format_valid <span class="v0">0</span> <span class="sub">(&quot;yyyy … {more} more '
            'characters)</span>') in page


# -- a shard that asks no sample is not missing from a merge ----------------------------------------------------------

@pytest.mark.slow
def test_a_merge_needs_no_run_of_a_shard_that_asks_no_sample(tmp_path):
    """Two samples split in three (`shard=i/3`): shard 3/3 asks none, and merge of 1/3 and 2/3 was refused (`no run
    of shard 3/3; merge with --partial`), and with --partial made a complete run saying `missing 3/3`."""
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task(scorer="exact_match"))})
    shards = [run_in_process(tmp_path, f"s{i}", "task.path=bench", f"shard={i}/3", responder=lambda req: req.prompt[-1])
              for i in (1, 2)]
    merged = audit(tmp_path, "merge", *map(str, shards), "--into", str(tmp_path / "merged"))
    assert merged.returncode == EXIT["ok"], merged.stderr
    ids = [json.loads((shard / "run.json").read_text())["run_id"] for shard in shards]
    assert merged.stdout.splitlines()[-1] == f"merge of 2 shards: 1/3 ({ids[0]}), 2/3 ({ids[1]})"
    info = json.loads((tmp_path / "merged" / "run.json").read_text())
    assert (info["status"], info["merged"]["partial"], info["merged"]["missing"]) == ("completed", False, [])


# -- a run whose writer was killed is not shown as running -----------------------------------------------------------

@pytest.mark.slow
def test_show_and_the_report_say_a_killed_runs_writer_stopped(tmp_path):
    """A run SIGKILLed after 10 answers: `show` said `status running` (run.json's, as it began) and the report
    `running` with no reason, where verify says no process writes it and to resume it."""
    write_killed_bench(tmp_path / "bench")
    with FakeOllama() as server:
        run_dir = killed_run(tmp_path, server)
    note = describe(parsed((run_dir / "run.lock").read_bytes()))
    said = (f"running: no live process holds run.lock: its writer ({note}) stopped before the run ended (killed, or "
            f"its disk failed); finish it with: benchrun-audit resume {run_dir}")
    assert f" status {said} started " in squeezed(tmp_path, "show", str(run_dir))
    page = audit(tmp_path, "report", str(run_dir), "--output", str(tmp_path / "report.html"))
    assert page.returncode == EXIT["ok"], page.stderr
    html = (tmp_path / "report.html").read_text()
    assert f"<td>status</td><td><pre>{escape(said)}</pre>" in html
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert f'<td><span class="bad">running</span></td><td>{run_id}</td><td>{escape(said[9:])}</td>' in html


# -- the report's default file in a run's directory is the archive's to write ----------------------------------------

@pytest.mark.slow
def test_a_report_html_planted_as_a_link_in_a_run_is_replaced_not_written_through(tmp_path, listbench_run):
    """`report RUN` writes RUN/report.html; one planted there as a link to another file (a shared archive's run,
    `report.html -> ~/.bashrc`) had that file overwritten with the page."""
    victim = tmp_path / "bashrc"
    victim.write_text("export PATH=...\n")
    (listbench_run / "report.html").symlink_to(victim)
    page = audit(tmp_path, "report", str(listbench_run))
    assert (page.returncode, page.stdout) == (EXIT["ok"], f"{listbench_run / 'report.html'}\n")
    assert victim.read_text() == "export PATH=...\n"
    written = listbench_run / "report.html"
    assert not written.is_symlink() and written.read_text().startswith("<!DOCTYPE html>")


PIPE_PAGE = 4096
"""The smallest buffer a pipe takes (F_SETPIPE_SZ rounds up to a page): less than a report's page."""


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_report_waiting_for_a_fifos_reader_is_stopped_by_a_signal(tmp_path, listbench_run, signum):
    """`report RUN --output FIFO` whose reader reads nothing (its pipe full) waits, as writing into a pipe does; but it
    held Ctrl-C and SIGTERM while it waited (the archive's writes hold signals until done): only SIGKILL stopped it.
    (A FIFO with no reader at all is refused before anything is written: the twenty-eighth pass.)"""
    fifo = tmp_path / "page"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    fcntl.fcntl(reader, fcntl.F_SETPIPE_SZ, PIPE_PAGE)
    proc = subprocess.Popen([sys.executable, "-m", "benchrun.audit", "report", str(listbench_run), "--output", str(fifo)],
                            cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: Path(f"/proc/{proc.pid}/wchan").read_text().endswith("pipe_write"))  # anon_pipe_write
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        os.close(reader)
    assert (proc.returncode, out, err) == (EXIT["interrupted"], "",
                                           f"benchrun: error: interrupted by {signal.Signals(signum).name}\n")


# -- a rejudging rescore records how many times its judge judged each answer -----------------------------------------

@pytest.mark.slow
def test_a_rejudging_rescore_records_its_judges_repeats(tmp_path):
    """`rescore --rejudge judge.repeats=2`: the judge's metric is the mean of two grades an answer, and rescore.json
    kept the judge's identity and runner but not how many times it was asked (the run's own repeats are in its
    manifest; a rescore's were nowhere but in the count of its judgements.jsonl lines)."""
    write_bench(tmp_path, {"tasks.yml": JUDGED_TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=judged_answer) as server:
        run_dir = run_in_process(tmp_path, "r", "task.path=bench", "judge.model=qwen2.5", responder=judged_answer,
                                 models=("llama3.2", "qwen2.5"))
        rescored = audit(tmp_path, "rescore", str(run_dir), "--rejudge", f"judge.host={server.url}", "judge.repeats=2")
    assert rescored.returncode == EXIT["ok"], rescored.stderr
    assert json.loads((run_dir / "rescores" / "001" / "rescore.json").read_text())["judge"]["repeats"] == 2
    assert " server 0.12.6 asked 2 times an answer (judge.repeats) (old mean: the run's judge, as show names it) " in (
        " ".join(rescored.stdout.split()))
