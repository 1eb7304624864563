"""What the archive says is what is true, and what it prints and exports is inert: `verify` passes only a run whose
run.json its seal covers (a run without a seal is explained, never passed); a forced resume onto another model keeps
which model answered which answers, and `show` and `compare` say so; CSV exports hold no cell a spreadsheet would
run; text from outside reaches the terminal with its control characters made visible."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import socket
from pathlib import Path

import pytest

from benchrun.archive.dirlock import DirLock
from benchrun.core.errors import EXIT, ArchiveBusy
from benchrun.testing import ollama_server
from benchrun.testing.chat import fake_digest
from benchrun.testing.lab import Lab
from tests.helpers.archives import DEAD_WRITER, synthetic_run
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import audit, call_benchrun, make_run

CHECKED = "(record lines checked against records.sha256 only)"


def in_process(cwd: Path, *args: str):
    return call_benchrun(*args, cwd=cwd, module="benchrun.audit")


def failures(run_dir: Path) -> tuple[int, list[str]]:
    """`verify RUN`'s exit code and its FAIL lines."""
    result = in_process(run_dir.parent, "verify", str(run_dir))
    assert result.stderr == ""
    return result.returncode, [line for line in result.stdout.splitlines() if line.startswith("FAIL")]


def edit_run_json(run_dir: Path, **changes) -> None:
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, **changes}, indent=2))


# -- verify: only what the seal covers is intact --------------------------------------------------------------------


@pytest.mark.slow
def test_a_removed_seal_and_a_run_json_set_back_to_running_are_caught(tmp_path):
    """The hostile pass's case: seal.json deleted, run.json back to `running` and claiming another model."""
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1], model="llama3.2")
    (run_dir / "seal.json").unlink()
    edit_run_json(run_dir, status="running", ended_at=None, model="gpt-9")
    result = audit(tmp_path, "verify", str(run_dir))
    assert (result.returncode, result.stderr) == (EXIT["not_intact"], "")
    assert [line for line in result.stdout.splitlines() if line.startswith("FAIL")] == [
        "FAIL  seal.json: missing: run.json says 'running' but holds the final digests of a run that ended: its seal "
        "was removed and run.json edited"]
    assert result.stdout.endswith("NOT intact: 1 problem\n")


def test_a_run_json_set_back_to_running_without_its_digests(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    (run_dir / "seal.json").unlink()
    edit_run_json(run_dir, status="running", ended_at=None, files={})
    assert failures(run_dir) == (EXIT["not_intact"], [
        "FAIL  run.json: says 'running', but no live process holds run.lock: its last writer let go of it cleanly, "
        f"which a writer does once the run has ended: run.json was edited {CHECKED}"])


def test_a_killed_run_is_said_to_be_one(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1], finish=False)
    writer = f"pid {DEAD_WRITER['pid']} on host {DEAD_WRITER['host']} since {DEAD_WRITER['since']}"
    assert failures(run_dir) == (EXIT["not_intact"], [
        f"FAIL  run.json: says 'running', but no live process holds run.lock: its writer ({writer}) stopped before "
        f"the run ended (killed, or its disk failed); finish it with: benchrun-audit resume {run_dir} {CHECKED}"])
    (run_dir / "run.lock").unlink()
    assert failures(run_dir) == (EXIT["not_intact"], [
        "FAIL  run.json: says 'running', but no live process holds run.lock: there is none, so the directory was "
        f"copied without it or run.json edited {CHECKED}"])


def test_a_run_being_written_is_not_intact_yet_and_verify_leaves_its_writer_alone(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1], finish=False)
    lock = DirLock(run_dir).acquire()
    try:
        since = json.loads((run_dir / "run.lock").read_text())["since"]
        assert failures(run_dir) == (EXIT["not_intact"], [
            f"FAIL  run.json: not sealed yet: the run is being written (pid {os.getpid()} on host "
            f"{socket.gethostname()} since {since}, which took the run over from pid {DEAD_WRITER['pid']} on host "
            f"{DEAD_WRITER['host']} since {DEAD_WRITER['since']}); verify it once it has ended {CHECKED}"])
        with pytest.raises(ArchiveBusy):
            DirLock(run_dir).acquire()
    finally:
        lock.release(ended=True)  # as a writer lets go, once it has ended the run
    assert failures(run_dir)[1][0].endswith(f"its last writer let go of it cleanly, which a writer does once the run "
                                            f"has ended: run.json was edited {CHECKED}")
    DirLock(run_dir).acquire().release()


# -- a forced resume onto another model -----------------------------------------------------------------------------


def re_pulled(name: str) -> str:
    """The digest the server lists once the model has been pulled again."""
    return hashlib.sha256(f"re-pulled {name}".encode()).hexdigest()


@pytest.mark.slow
def test_a_forced_resume_onto_a_re_pulled_model_keeps_who_answered_what(tmp_path, monkeypatch):
    with Lab(tmp_path) as lab:
        with lab.held_after(8, *lab.args()) as (proc, run_dir):
            proc.kill()
            proc.communicate()
        before, after = fake_digest("llama3.2"), re_pulled("llama3.2")
        monkeypatch.setattr(ollama_server, "fake_digest", re_pulled)
        refused = lab.call("resume", str(run_dir), module="benchrun.audit")
        forced = lab.call("resume", str(run_dir), "--force", module="benchrun.audit")
        baseline = lab.call(*lab.args()).stdout.splitlines()[-1].removeprefix("run directory: ")
    assert (refused.returncode, refused.stderr) == (
        EXIT["archive"], f"benchrun: error: model llama3.2 is now {after[:12]}, the run used {before[:12]}; resume "
                         "with --force to continue with it anyway (recorded in run.json)\n")
    assert (forced.returncode, forced.stderr) == (EXIT["ok"], "")
    info = json.loads((run_dir / "run.json").read_text())
    [entry] = info["history"]
    assert (entry["identity"]["digest"], entry["answers"], entry["kept"], info["identity"]["digest"]) == (
        before, 8, 8, after)
    mixed = f"answers from 2 models: 8 by {before[:12]}, 12 by {after[:12]}"
    shown = [line.rstrip() for line in in_process(tmp_path, "show", str(run_dir)).stdout.splitlines()]
    assert f"answered by  {mixed}" in shown
    compared = in_process(tmp_path, "compare", baseline, str(run_dir)).stdout.splitlines()
    base_id = json.loads((Path(baseline) / "run.json").read_text())["run_id"]
    assert compared[0] == f"baseline: llama3.2 {base_id} ({baseline})"
    assert f"vs llama3.2 {info['run_id']} ({run_dir}): {mixed}" in compared


# -- exports and the terminal ---------------------------------------------------------------------------------------

FORMULAS = ["=1+1", "+1", "-1+2", "@SUM(A1)", "\tcmd", "\rcmd", "plain", "- a list item", "x\r=1+1"]
ANSWER = "=HYPERLINK(\"http://evil.example\")"


def neutral(value) -> str:
    """A cell as OWASP would have it written: text a spreadsheet would run gets a leading ', numbers stay numbers."""
    return str(value) if not isinstance(value, str) else "'" + value if value[:1] in "=+-@\t\r" else value


def test_csv_exports_hold_no_cell_a_spreadsheet_would_run(tmp_path):
    values = [*FORMULAS, -3]
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml(task(template="{a}", values={"a": values},
                                                               reference=[f"={n}" for n in range(len(values))]))})
    run_dir = make_run(tmp_path, f"task.path={bench}", responder=lambda req: ANSWER)
    assert in_process(tmp_path, "export", str(run_dir), "--text", "--output", "rows.csv").returncode == EXIT["ok"]
    with open(tmp_path / "rows.csv", newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["scorer"] == "format_valid"]
    assert [(row["value.a"], row["prompt"], row["reference"], row["response"], row["value"]) for row in rows] == [
        (neutral(a), neutral(str(a)), neutral(f"={n}"), neutral(ANSWER), "0") for n, a in enumerate(values)]
    lines = in_process(tmp_path, "export", str(run_dir), "--text", "--format", "jsonl").stdout.splitlines()
    assert [json.loads(line)["prompt"] for line in lines][::2] == [str(a) for a in values]


CONTROL = "\x1b[2J\x1b]0;owned\x07\rover\x9b31m"
"""Clear the screen, set the window title, return to the line's start, CSI (C1): what a hostile answer may hold."""
ASKED = "\x0c\rover\x8531m"
"""The control characters a benchmark's text may hold (a form feed, a carriage return, C1's NEL): ESC, BEL and C1's CSI
are refused in it (core.filebytes.UNASKED)."""


def test_text_from_outside_is_printed_with_its_control_characters_visible(tmp_path):
    """A prompt and an answer (show --samples, a dry run's plan), a model's name and a label read from run.json
    (list, compare)."""
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml(task(template="say {a}", values={"a": [ASKED]},
                                                               reference=["x"]))})
    run_dir = make_run(tmp_path, f"task.path={bench}", responder=lambda req: CONTROL)
    named = synthetic_run(tmp_path / "named" / "run", [1], model=CONTROL, label=CONTROL)
    other = synthetic_run(tmp_path / "other", [1], model=CONTROL, label=CONTROL, run_id="6" * 12)
    printed = {"show": in_process(tmp_path, "show", str(run_dir), "--samples"),
               "dry run": call_benchrun(f"task.path={bench}", "dry_run=true", cwd=tmp_path),
               "list": in_process(tmp_path, "list", str(named.parent)),
               "compare": in_process(tmp_path, "compare", str(named), str(other))}
    assert {name: (r.returncode, r.stderr) for name, r in printed.items()} == dict.fromkeys(printed, (EXIT["ok"], ""))
    assert [name for name, r in printed.items() if any(c in r.stdout for c in "\x1b\x07\x9b")] == []
    shown, asked = "\\x1b[2J\\x1b]0;owned\\x07\\rover\\x9b31m", "\\x0c\\rover\\x8531m"
    assert [f"  prompt    say {asked}", f"  response  {shown}"] == [
        line for line in printed["show"].stdout.splitlines() if line.startswith(("  prompt", "  response"))]
    assert asked in printed["dry run"].stdout
    assert [name for name, r in printed.items() if shown not in r.stdout] == ["dry run"]
