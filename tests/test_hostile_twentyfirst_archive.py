"""Hostile input, twenty-first pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases
it found bad, each with the rule it now obeys.

- a run with repeats (k=3) some of whose answers have no value (a scorer error, a failed request): pass@k and
  majority@k are over the samples with k valued answers only, and `show` and the report gave them beside the
  metric's n with nothing saying so (`pass@k 1.000, majority@k 1.000` of a task where one sample of four was counted;
  a sample with two valued answers, both 0, was not). Now summary.json records the samples they are over
  (`at_k_samples`, `archive.tally`), and show and the report say it where it is fewer than the samples with a value
  (`audit.lines.at_k_basis`)
- `show` of a run with repeats: `counts  12/12 samples, …` of a run of 4 samples asked 3 times each (the counts are
  of answers; the run's own last line says `12/12 answers`), `12 samples shown` by `--samples`/`--failed`, and a
  retry of two answers of one sample `2 samples asked again`. Now `answers` where the run has repeats
  (`archive.answerunit.answer_unit`, once `audit.heading.answer_unit`)
- a `merge --partial` finished by `resume` (as its reason says to): `show` and the report still said `merge of 1/2
  …; missing 2/2 (--partial)` of a run holding all its answers, nothing saying the resume asked them. Now `missing
  2/2 (--partial; its 9 answers asked since by resume)`, or while a resume has not finished (killed, failed) `a
  resume has not finished asking its 9 answers` (`audit.heading._missing`)
- `show` and the report of a run that did not end (SIGKILLed after 10 answers, or being written): `counts  0/60
  samples, 0 request errors, …`, run.json's as its writer started, beside metrics tallied from its 10 answers. Now
  what its records add up to (`archive.books.counts_of`), as its metrics and speed are
- a killed run resumed with `--force` on the model pulled again (another digest), that resume killed after 3
  answers: show named the new digest as the model with no `answered by` row (the resumed session's answers were
  counted from run.json's counts, as the resume started: none), and `list` the same, with `10/60`. Now the lines its
  records.sha256 covers (`archive.reader.Run.response_lines`), in `archive.sessions` and `list`
- a run that failed before it compiled (a benchmark file refused: verify intact): `show` and `rescore`
  `in '…/manifest.json': missing` (exit 4). Now show shows it (`metrics: none`, `audit.lines._k`), and rescore says
  it asked nothing (`archive.trust.uncompiled`, shared with resume and retry)
- a run whose writer was killed before it compiled (run.json `running`, no manifest): verify said `finish it with:
  benchrun-audit resume RUN`, and resume refused `ended before it compiled (None)`; retry advised resume too. Now each
  says it asked nothing and to start a new run (`archive.trust.not_finished`, `uncompiled`; `audit.verify`)

What held is in the pass's note.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.archive.writer import RunWriter, now
from benchrun.core.errors import EXIT
from benchrun.core.records import Counts, RunInfo
from benchrun.testing.chat import ChatRequest, fake_digest
from benchrun.testing.holding import holding_answers
from benchrun.testing.inprocess import child_env, cli
from benchrun.testing.lab import line_count, wait_for
from benchrun.testing.ollama_server import FakeOllama, Reply
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import DEAD_WRITER, left_by_dead_writer
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import run_in_process
from tests.helpers.killed import KILLED_AT, killed_run
from tests.helpers.killed import write_bench as write_killed_bench


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def row(cwd: Path, run_dir: Path, name: str) -> str | None:
    """`show`'s row `name` (folded over lines, joined), spaces squeezed; None when it has none."""
    shown = audit(cwd, "show", str(run_dir))
    assert shown.returncode == EXIT["ok"], shown.stderr
    lines = shown.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(name + " ")), None)
    if start is None:
        return None
    found = [lines[start][len(name):]]
    for line in lines[start + 1:]:
        if not line.startswith(" ") or not line.strip():
            break
        found.append(line)
    return " ".join(" ".join(found).split())


# -- pass@k over the samples with k valued answers ------------------------------------------------------------------

REPEATED_TASKS = """
- name: t
  template: "say {a}"
  values: {a: [1, 2, 3, 4]}
  reference: calculated
  scorer: ok
"""
REPEATED_SCORER = """
def ok(response, values):
    if response == "boom":
        raise ValueError("boom")
    return int(response == "right")
"""
ANSWERS = {"say 1": ["boom", "wrong", "right"], "say 2": ["wrong", "right", "boom"],
           "say 3": ["right", "wrong", "right"], "say 4": ["wrong", "boom", "wrong"]}
"""Each sample's three answers (by repeat): t:a=3 alone has three valued answers; t:a=4 two, both 0."""


def repeated_answer(request: ChatRequest) -> str:
    return ANSWERS[request.messages[-1]["content"]][request.options["seed"]]


@pytest.fixture
def repeated_run(tmp_path) -> Path:
    write_bench(tmp_path, {"tasks.yml": REPEATED_TASKS, "custom_scorer.py": REPEATED_SCORER})
    return run_in_process(tmp_path, "r", "task.path=bench", "repeats=3", "runner.options.seed=0",
                          responder=repeated_answer)


@pytest.mark.slow
def test_pass_at_k_over_fewer_samples_than_have_a_value_says_so(tmp_path, repeated_run):
    """pass@k and majority@k 1.000 (t:a=3's alone) beside n 9 of 4 samples, nothing saying three were left out."""
    line = json.loads((repeated_run / "summary.json").read_text())["metrics"][1]
    assert (line["metric"], line["n"], line["samples"], line["at_k_samples"], line["pass_at_k"],
            line["majority_at_k"]) == ("ok", 9, 4, 1, 1.0, 1.0)
    shown = audit(tmp_path, "show", str(repeated_run))
    assert shown.returncode == EXIT["ok"], shown.stderr
    said = shown.stdout.splitlines()
    note = "pass@k and majority@k: over the samples whose every answer has a value only (a failed request or scorer " \
           "error leaves a sample out):"
    at = said.index(note)
    assert (said[at - 1][0], said[at + 1:at + 3]) == ("└", ["  t/ok over 1 of 4 samples", ""])
    as_json = json.loads(audit(tmp_path, "show", str(repeated_run), "--json").stdout)
    assert [row.get("at_k_samples") for row in as_json["metrics"]] == [None, 1]
    page = audit(tmp_path, "report", str(repeated_run), "--output", str(tmp_path / "report.html"))
    assert page.returncode == EXIT["ok"], page.stderr
    assert '<div class="sub">pass@k 1.000, majority@k 1.000 (over 1 of 4 samples)</div>' in (
        tmp_path / "report.html").read_text()


@pytest.mark.slow
def test_show_counts_a_repeated_runs_answers_as_answers(tmp_path, repeated_run):
    """`12/12 samples` of a run of 4 samples asked 3 times each (the run's own last line said `12/12 answers`), and
    `show --failed` `12 samples shown`."""
    shown = audit(tmp_path, "show", str(repeated_run))
    assert [line.split(None, 1)[1].rstrip() for line in shown.stdout.splitlines() if line.startswith("counts")] == [
        "12/12 answers, 0 request errors, 3 scorer errors, 12 invalid formats"]
    failed = audit(tmp_path, "show", str(repeated_run), "--failed")
    assert "\n12 answers shown (failed only)\n" in failed.stdout


@pytest.mark.slow
def test_a_retry_of_a_repeated_run_counts_the_answers_it_asked_again(tmp_path):
    """Two answers of one sample failed (repeats=2): the retry said `2 samples asked again` (show, its printout)."""
    write_bench(tmp_path, {"tasks.yml": REPEATED_TASKS, "custom_scorer.py": REPEATED_SCORER})
    parent = run_in_process(tmp_path, "r", "task.path=bench", "repeats=2", "runner.options.seed=0", "runner.retries=0",
                            responder=lambda request: Reply(status=500) if request.messages[-1]["content"] == "say 2"
                            else "right")
    with FakeOllama(models=["llama3.2"], responder=lambda _: "right") as server:
        retried = audit(tmp_path, "retry", str(parent), "--host", server.url)
    assert retried.returncode == EXIT["ok"], retried.stderr
    parent_id = json.loads((parent / "run.json").read_text())["run_id"]
    assert retried.stdout.splitlines()[-1] == f"retry of run {parent_id}: 6 answers carried over, 2 answers asked again"
    assert row(tmp_path, parent.with_name("r.retry1"), "retry of") == (
        f"{parent_id} {parent} (6 answers carried over, 2 answers asked again)")


# -- a partial merge finished by resume ------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_partial_merge_finished_by_resume_says_its_missing_shard_was_asked_since(tmp_path):
    """show and the report said `missing 2/2 (--partial)` of a merged run that resume had finished (18/18 answers):
    nothing said the missing shard's answers were there, asked by the resume (a first resume against a broken server
    failed: then it has not finished)."""
    first = run_in_process(tmp_path, "s1", "shard=1/2")
    merged = tmp_path / "merged"
    assert audit(tmp_path, "merge", str(first), "--partial", "--into", str(merged)).returncode == EXIT["ok"]
    shard = f"1/2 {json.loads((first / 'run.json').read_text())['run_id']} {first}"
    assert row(tmp_path, merged, "merge of") == f"{shard}; missing 2/2 (--partial)"
    with FakeOllama(models=["llama3.2"], responder=lambda _: Reply(status=500)) as server:
        broken = audit(tmp_path, "resume", str(merged), "--host", server.url, "--set", "runner.retries=0")
    assert broken.returncode == EXIT["runner"], broken.stderr
    assert row(tmp_path, merged, "merge of") == (
        f"{shard}; missing 2/2 (--partial; a resume has not finished asking its 9 answers)")
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        resumed = audit(tmp_path, "resume", str(merged), "--host", server.url)
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    assert row(tmp_path, merged, "merge of") == f"{shard}; missing 2/2 (--partial; its 9 answers asked since by resume)"
    page = audit(tmp_path, "report", str(merged), "--output", str(tmp_path / "report.html"))
    assert page.returncode == EXIT["ok"], page.stderr
    assert "missing 2/2 (--partial; its 9 answers asked since by resume)</pre>" in (tmp_path / "report.html").read_text()


# -- the counts of a run that did not end ----------------------------------------------------------------------------

@pytest.mark.slow
def test_show_and_report_count_a_killed_runs_records(tmp_path):
    """A run SIGKILLed after 10 answers: show `counts 0/60 samples, 0 request errors, …` (run.json's, written as it
    started) beside metrics tallied from its 10 answers; the report the same."""
    write_killed_bench(tmp_path / "bench")
    with FakeOllama() as server:
        run_dir = killed_run(tmp_path, server)
    assert json.loads((run_dir / "run.json").read_text())["counts"]["responses"] == 0
    assert row(tmp_path, run_dir, "counts") == f"{KILLED_AT}/60 samples, 0 request errors, 0 scorer errors, 0 invalid formats"
    page = audit(tmp_path, "report", str(run_dir), "--output", str(tmp_path / "report.html"))
    assert page.returncode == EXIT["ok"], page.stderr
    assert (f"counts</td><td><pre>samples=60, responses={KILLED_AT}, request_errors=0, scorer_errors=0, "
            "format_invalid=0, cached=0</pre>") in (tmp_path / "report.html").read_text()


@pytest.mark.slow
def test_a_killed_resume_on_another_model_says_which_model_answered_what(tmp_path):
    """A killed run resumed with --force on the model pulled again (another digest), that resume killed after 3
    answers: show named the new digest as the run's model and said nothing of two models (the session's answers were
    counted from run.json's counts, those of the resume's start): 13 answers given to one model."""
    write_killed_bench(tmp_path / "bench")
    with FakeOllama() as server:
        run_dir = killed_run(tmp_path, server)
    with FakeOllama(digests={"llama3.2": "ab" * 32}) as other, holding_answers(other, after=3) as hold:
        resume = subprocess.Popen([sys.executable, "-m", "benchrun.audit", "resume", str(run_dir), "--force",
                                   "--host", other.url], cwd=tmp_path, env=child_env(None),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: hold.holding and line_count(run_dir / "responses.jsonl") == KILLED_AT + 3)
        resume.kill()
        resume.wait()
    assert row(tmp_path, run_dir, "answered by") == (
        f"answers from 2 models: {KILLED_AT} by {fake_digest('llama3.2')[:12]}, 3 by abababababab")
    listed = json.loads(audit(tmp_path, "list", "--json").stdout)
    assert [(run["responses"], run["answered_by"]) for run in listed] == [
        (KILLED_AT + 3, f"answers from 2 models: {KILLED_AT} by {fake_digest('llama3.2')[:12]}, 3 by abababababab")]


# -- a run that never compiled ---------------------------------------------------------------------------------------

def never_compiled(run_dir: Path, killed: bool) -> str:
    """A run that ended `failed` before it compiled (a benchmark file refused), or whose writer was killed before it
    compiled (`killed`: run.json `running`, its dead writer's note in run.lock); its run id."""
    info = RunInfo(run_id="c" * 12, status="running", started_at=now(), benchmark="b", model="m", manifest_id=None,
                   runner={}, environment={}, counts=Counts(samples=0))
    writer = RunWriter.create(run_dir, info)
    writer.start("task: {path: nowhere}\n")
    if not killed:
        writer.finish("failed", "in 'tasks.yml': bad")
    writer.release()
    if killed:
        left_by_dead_writer(run_dir)
    return info.run_id


@pytest.mark.slow
def test_show_and_rescore_of_a_run_that_failed_before_it_compiled(tmp_path):
    """show: `in '…/manifest.json': missing` (exit 4) of an intact run; rescore the same."""
    run_dir = tmp_path / "run"
    run_id = never_compiled(run_dir, killed=False)
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stderr) == (EXIT["ok"], "")
    assert shown.stdout.splitlines()[-3:] == ["metrics: none (no score records)", "",
                                             "speed: none (no request was asked in this run)"]
    rescored = audit(tmp_path, "rescore", str(run_dir))
    assert (rescored.returncode, rescored.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': run {run_id} ended before it compiled (in 'tasks.yml': bad) and asked "
        "nothing; start a new run\n"))


@pytest.mark.slow
def test_a_run_killed_before_it_compiled_is_advised_a_new_run(tmp_path):
    """verify said `finish it with: benchrun-audit resume RUN`, which said `ended before it compiled (None)`; retry
    advised resume too; show and rescore: `manifest.json: missing`."""
    run_dir = tmp_path / "run"
    run_id = never_compiled(run_dir, killed=True)
    verified = audit(tmp_path, "verify", str(run_dir))
    writer = f"pid {DEAD_WRITER['pid']} on host {DEAD_WRITER['host']} since {DEAD_WRITER['since']}"
    assert verified.stdout.splitlines()[1] == (
        f"FAIL  run.json: says 'running', but no live process holds run.lock: its writer ({writer}) stopped before the "
        "run ended (killed, or its disk failed); it asked nothing, for it stopped before it compiled: start a new run "
        "(record lines checked against records.sha256 only)")
    stopped = "was stopped before it compiled (its writer killed, or its disk failed) and asked nothing; start a new run"
    for command in ("resume", "rescore"):
        refused = audit(tmp_path, command, str(run_dir))
        assert (refused.returncode, refused.stderr) == (
            EXIT["archive"], f"benchrun: error: in '{run_dir}': run {run_id} {stopped}\n")
    retried = audit(tmp_path, "retry", str(run_dir))
    assert (retried.returncode, retried.stderr) == (
        EXIT["archive"], f"benchrun: error: in '{run_dir}': run {run_id} is running: it {stopped}\n")
    assert audit(tmp_path, "show", str(run_dir)).returncode == EXIT["ok"]
