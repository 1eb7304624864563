"""Hostile input, sixteenth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- `report --output FILE/x.html`, FILE a regular file: `file exists writing FILE/x.html` (mkdir's word, as if the report
  were there). Now `not a directory writing FILE/x.html`, as export says (`audit.report._make_folder`)
- a resume that failed after making its reserve (run.json not writable: a disk with room for the reserve and no more)
  left the 32 KiB `.reserve` in the run directory. Now a reopen that fails leaves none of itself
  (`archive.writer.RunWriter.reopen`)
- a sealed run.json whose run id holds a line break, an escape sequence, a path: printed raw by list, verify's heading
  in two. Now unreadable where it is read (`core.recordvalues.RunId`); an id given whole names its run though it
  begins another's (`archive.lookup.resolve_run`)
- the report's chart of a metric below 0 everywhere drew its zero line and values far above the chart
  (`audit.report_svg.scale_for`)
- `~` in an audit command's path (`--output=~/r.html` made a folder named `~`), and a `~user` naming no user (a
  RuntimeError traceback, in runs too): the home directory, or one line (`audit.arguments.path`, `core.home.expanded`)
- a rescore after a module its scorers import changed said the run's code scored it: rescore.json's `modules`
- compare's means summed as floats (1e100, 1, -1e100: both means 0.000, their difference +0.333):
  `archive.tally.exact_mean`
- a run that did not end checked out with CRLF line ends: not said to be that, and resume advised --force, which drops
  every line (`archive.trust.records_converted`)
- `--output reports/` wrote a file named `reports` (`audit.arguments.output`); `cache --digest` in upper case refused
- a rescore whose scorer overruns `--scorer-timeout-s`: a CancelledError traceback (`execute.scorerprocess._ended`);
  `--scorer-timeout-s 0`, `-1`, `nan` taken

What held is in the pass's note.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.archive.writer import RESERVE_BYTES
from benchrun.audit import resume_run, verify_run
from benchrun.core.errors import EXIT, ArchiveError, WriteFailed
from benchrun.execute.cache import Store
from benchrun.testing.inprocess import child_env, cli
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.small_disk import can_mount, fill, small_disk
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import reseal, synthetic_run
from tests.helpers.cacheentry import entry
from tests.helpers.helperbench import SAME, helper_bench_run
from tests.helpers.sealed import interrupted_run


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def files_of(run_dir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}


# -- where a report goes ---------------------------------------------------------------------------------------------

def test_a_report_into_a_folder_that_is_a_file_says_not_a_directory(tmp_path):
    """`report --output FILE/x.html` with FILE a regular file: `file exists writing FILE/x.html`."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    (tmp_path / "notes").write_text("mine\n")
    done = audit(tmp_path, "report", str(run_dir), "--output", str(tmp_path / "notes" / "x.html"))
    assert (done.returncode, done.stdout) == (EXIT["archive"], "")
    assert done.stderr == f"benchrun: error: not a directory writing {tmp_path / 'notes' / 'x.html'}\n"
    assert (tmp_path / "notes").read_text() == "mine\n"


# -- a resume that could not start -----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(not can_mount(), reason="a small disk is mounted for it (needs root)")
def test_a_resume_that_could_not_write_run_json_leaves_no_reserve(tmp_path):
    """An interrupted run resumed on a disk with room for the writer's reserve and no more: the resume failed writing
    run.json (the run sealed as it was) and left its 32 KiB `.reserve` on the full disk."""
    with small_disk(tmp_path / "disk", 256) as disk:
        with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
            run_dir = interrupted_run(disk / "run", server.url, tmp_path)
            fill(disk / "filler")
            os.truncate(disk / "filler", (disk / "filler").stat().st_size - RESERVE_BYTES - 4096)
            before = files_of(run_dir)
            with pytest.raises(WriteFailed) as refused:
                resume_run(load_run(run_dir), host=server.url)
        assert str(refused.value) == f"disk full writing {run_dir}/run.json"
        assert files_of(run_dir) == before
        assert verify_run(load_run(run_dir)).intact


# -- a run's id ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("run_id", ["ab\n\x1b[31mcd\u202eef", "../../etc", "a" * 65, ""])
def test_a_run_id_that_is_no_run_id_makes_run_json_unreadable(tmp_path, run_id):
    """A sealed run.json whose run id holds a line break, an escape sequence or a right-to-left override: `list`
    printed the escape sequence raw (the terminal's colours changed) and the id over two lines, `verify` and `compare`
    printed their heading in two; a path or a page of text passed as an id as well."""
    run_dir = synthetic_run(tmp_path / "o" / "2026-12-01" / "r1", [1.0])
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "run_id": run_id}, indent=2))
    reseal(run_dir)
    unreadable = (f"in '{run_dir / 'run.json'}': unreadable: run_id: not a run id (letters, digits, '-' "
                  f"and '_', at most 64): {run_id[:40]!r}")
    for command in ("show", "verify", "export", "report"):
        done = audit(tmp_path, command, str(run_dir))
        assert (done.returncode, done.stdout, done.stderr) == (EXIT["archive"], "", f"benchrun: error: {unreadable}\n")
    listed = audit(tmp_path, "list", str(tmp_path / "o"), "--json")
    assert listed.returncode == EXIT["ok"]
    assert json.loads(listed.stdout)[0]["status"] == "unreadable"


# -- the report's charts ---------------------------------------------------------------------------------------------

def test_a_metric_below_zero_everywhere_is_charted_from_zero(tmp_path):
    """A metric every run scored below 0 (a log-likelihood, a signed error): the axis ran from the lowest whisker to
    the highest (-5.577 to -4.423), so the zero line each bar stands on, and the bar's value, were drawn 700 pixels
    above the chart: the bar filled the plot whatever its value, and no value was shown."""
    run_dir = synthetic_run(tmp_path / "run", [-5.0, -4.0, -6.0])
    html = audit(tmp_path, "report", str(run_dir), "--output", str(tmp_path / "r.html"))
    assert html.returncode == EXIT["ok"], html.stderr
    chart = (tmp_path / "r.html").read_text().split('data-metric="closeness">')[1].split("</svg>")[0]
    assert '<text class="tick" x="40" y="22.0">0.000</text><line class="zero" x1="44" x2="102" y1="18.0" ' in chart
    assert ('<rect class="bar" data-value="-5.0" x="57.0" y="18.0" width="28" height="161.4" fill="#0072b2"/>'
            '<line class="err" x1="71.0" x2="71.0" y1="160.7" y2="198.0"/>'
            '<text class="value" x="71.0" y="157.7">-5.000</text>') in chart


# -- `~` in an audit command's paths ---------------------------------------------------------------------------------

def test_a_tilde_in_an_audit_commands_path_is_the_home_directory(tmp_path):
    """`report --output=~/r.html` (a `~` no shell expands, after `=` or quoted in a script) made a folder named `~`
    in the working directory and said `~/r.html`, as if the report were in the home directory; `export '~/run'`
    looked for a run id `~/run`. Every other path benchrun is given (an override, cache_dir, `cache --cache-dir`)
    reads `~` as the home directory."""
    home = tmp_path / "home"
    synthetic_run(home / "run", [1.0])
    (tmp_path / "work").mkdir()
    env = {"HOME": str(home)}
    reported = cli("report", "~/run", "--output=~/r.html", cwd=tmp_path / "work", env=env, module="benchrun.audit")
    assert (reported.returncode, reported.stdout) == (EXIT["ok"], f"{home / 'r.html'}\n"), reported.stderr
    exported = cli("export", "~/run", "--output=~/x.csv", cwd=tmp_path / "work", env=env, module="benchrun.audit")
    assert exported.returncode == EXIT["ok"], exported.stderr
    assert (home / "x.csv").read_text().startswith("run_id,label,model,manifest_id,task,sample_id,")
    assert list((tmp_path / "work").iterdir()) == []
    refused = cli("report", "~/run", "--output=~/r.html", cwd=tmp_path / "work", env={"HOME": ""},
                  module="benchrun.audit")
    assert refused.returncode == EXIT["usage"]
    assert refused.stderr.splitlines()[-1] == (
        "benchrun-audit report: error: argument --output: '~/r.html': ~ is the home directory, and $HOME is empty (~ "
        "would be the file system's root); set HOME, or give the path itself")


# -- what a rescore scored with --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_rescore_says_which_modules_its_scorers_imported(tmp_path):
    """A benchmark whose custom_scorer.py imports helpers.py, rescored after helpers.py changed: 12 values changed,
    and rescore.json gave every scorer the sha256 of the run's (the scorer's own source, and custom_scorer.py, were
    the run's): it said the run's code scored them, and nothing said which helpers.py did."""
    bench, run_dir = helper_bench_run(tmp_path)
    helpers = (bench / "helpers.py").resolve()
    sha = {text: hashlib.sha256(text.encode()).hexdigest() for text in (SAME, "def same(a, b):\n    return 1\n")}

    def rescored(number: str) -> tuple[list[str], list[dict]]:
        # a real process each: in one process, helpers.py stays imported as the first rescore read it (usercode.LOADED)
        done = subprocess.run([sys.executable, "-m", "benchrun.audit", "rescore", str(run_dir)], cwd=bench,
                              env=child_env(), capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        info = json.loads((run_dir / "rescores" / number / "rescore.json").read_text())
        return done.stdout.splitlines()[-3:], info["modules"]

    said, modules = rescored("001")
    assert said[0:2] == ["0 sample values changed", "0 scorer errors"]
    assert modules == [{"path": str(helpers), "sha256": sha[SAME], "run_sha256": sha[SAME]}]
    (bench / "helpers.py").write_text("def same(a, b):\n    return 1\n")
    said, modules = rescored("002")
    assert said[-2] == f"modules the scorers import that are not the run's: {helpers}"
    assert modules == [{"path": str(helpers), "sha256": sha["def same(a, b):\n    return 1\n"],
                        "run_sha256": sha[SAME]}]


# -- compare's means -------------------------------------------------------------------------------------------------

def test_compare_gives_each_runs_mean_exactly_as_its_summary_does(tmp_path):
    """Scores of 1e100, 1 and -1e100 (a scorer may give up to 1e100) against 1e100, 2 and -1e100: compare summed them
    as floats and said both means were 0.000 while their difference was +0.333; `show` said 0.333 and 0.667."""
    base = synthetic_run(tmp_path / "a", [1e100, 1, -1e100])
    other = synthetic_run(tmp_path / "b", [1e100, 2, -1e100], run_id="6" * 12)
    done = audit(tmp_path, "compare", str(base), str(other), "--metric", "closeness", "--json")
    assert done.returncode == EXIT["ok"], done.stderr
    line = json.loads(done.stdout)["comparisons"][0]["metrics"][0]
    assert (line["baseline_mean"], line["mean"], line["delta"]) == (1 / 3, 2 / 3, 1 / 3)
    summary = json.loads((base / "summary.json").read_text())["metrics"]
    assert [m["mean"] for m in summary if m["metric"] == "closeness"] == [1 / 3]


# -- a run that did not end, checked out with CRLF line ends ---------------------------------------------------------

@pytest.mark.parametrize(("made_crlf", "named"), [
    (("responses.jsonl", "scores.jsonl", "records.sha256", "run.json", "config.yaml"), "records.sha256"),
    (("responses.jsonl", "scores.jsonl"), "responses.jsonl")])
def test_a_killed_run_checked_out_with_crlf_line_ends_is_said_to_be_that(tmp_path, made_crlf, named):
    """A killed run committed to git and checked out with core.autocrlf=true (every LF of its text files made CRLF,
    or of its .jsonl files alone, as `*.jsonl text` in .gitattributes does): readers said `records.sha256: line 1 is
    not a digest line` (or `responses.jsonl: line 1 is not the line written`), verify `responses.jsonl: 3 lines after
    line 0 not written by the run`, and resume `resume with --force to drop what does not belong`: a forced resume
    would have dropped every answer the run had, none of them edited."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0, 1.0], finish=False)
    for name in made_crlf:
        (run_dir / name).write_bytes((run_dir / name).read_bytes().replace(b"\n", b"\r\n"))
    before = files_of(run_dir)
    converted = ("its line ends were made CRLF since it was written (as git's core.autocrlf=true does on checkout); "
                 "with LF ones it is as written: check the run out again with core.autocrlf=false")
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': run 555555555555: {named}: {converted}, so what it says cannot be "
        f"trusted; benchrun-audit verify {run_dir} says what changed\n"))
    verified = audit(tmp_path, "verify", str(run_dir))
    assert [line for line in verified.stdout.splitlines() if line.startswith("FAIL")][1:] == [
        f"FAIL  {named}: {converted}",  # and config.yaml, which run.json digests from the start (the twentieth pass)
        *[f"FAIL  config.yaml: changed since the run started: {converted}"] * ("config.yaml" in made_crlf)]
    for force in (False, True):
        with pytest.raises(ArchiveError) as refused:
            resume_run(load_run(run_dir), force=force)
        assert str(refused.value) == f"in '{run_dir / named}': {converted}"
    after = files_of(run_dir)
    assert {name: after[name] for name in before if name != "run.lock"} == {
        name: data for name, data in before.items() if name != "run.lock"}
    for name in ("responses.jsonl", "scores.jsonl", "records.sha256", "config.yaml"):
        (run_dir / name).write_bytes((run_dir / name).read_bytes().replace(b"\r\n", b"\n"))
    assert audit(tmp_path, "show", str(run_dir)).returncode == EXIT["ok"]


def test_an_interrupted_run_checked_out_with_crlf_line_ends_is_not_resumed_by_force(tmp_path):
    """A sealed interrupted run checked out with core.autocrlf=true: resume said `run.json: changed since the run was
    sealed; resume with --force to continue anyway`, and a forced resume went on to drop every record line."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0], status="interrupted", reason="interrupted by SIGTERM")
    for name in ("responses.jsonl", "scores.jsonl", "records.sha256", "run.json", "config.yaml", "summary.json"):
        (run_dir / name).write_bytes((run_dir / name).read_bytes().replace(b"\n", b"\r\n"))
    converted = ("its line ends were made CRLF since it was written (as git's core.autocrlf=true does on checkout); "
                 "with LF ones it is as written: check the run out again with core.autocrlf=false")
    refusals = []
    for force in (False, True):
        with pytest.raises(ArchiveError) as refused:
            resume_run(load_run(run_dir), force=force)
        refusals.append(str(refused.value))
    assert refusals == [f"in '{run_dir / 'run.json'}': changed since the run was sealed: {converted}",
                        f"in '{run_dir / 'records.sha256'}': {converted}"]


def test_a_tilde_naming_no_user_is_one_line(tmp_path):
    """`~nosuchuser/x` (a user this system does not have): Python's expanduser raises RuntimeError, a traceback from
    every path benchrun reads `~` in: `task.path='~nosuchuser/b'` in a run, `cache --cache-dir`, and the audit paths."""
    run_dir = synthetic_run(tmp_path / "run", [1.0])
    nobody = ("~nosuchuser is the home directory of user 'nosuchuser', and this system has no such user; give the path "
              "itself")
    reported = audit(tmp_path, "report", str(run_dir), "--output", "~nosuchuser/r.html")
    assert (reported.returncode, reported.stderr.splitlines()[-1]) == (
        EXIT["usage"], f"benchrun-audit report: error: argument --output: '~nosuchuser/r.html': {nobody}")
    shown = audit(tmp_path, "show", "~nosuchuser/run")
    assert (shown.returncode, shown.stderr) == (EXIT["usage"], f"benchrun: error: '~nosuchuser/run': {nobody}\n")
    planned = cli("task.path='~nosuchuser/b'", "dry_run=true", cwd=tmp_path)
    assert (planned.returncode, planned.stderr) == (
        EXIT["usage"], f"benchrun: error: task.path: '~nosuchuser/b': {nobody}\n")


@pytest.mark.parametrize("command", ["export", "report"])
def test_an_output_ending_in_a_slash_is_no_file_of_that_name(tmp_path, command):
    """`--output reports/` (a folder, to hold the file): pathlib drops the slash, so a file named `reports` was
    written, and the folder the user meant could not be made there later."""
    run_dir = synthetic_run(tmp_path / "run", [1.0])
    done = audit(tmp_path, command, str(run_dir), "--output", "reports/")
    assert (done.returncode, done.stdout) == (EXIT["usage"], "")
    assert done.stderr.splitlines()[-1] == (f"benchrun-audit {command}: error: argument --output: 'reports/' ends "
                                            "with '/', so it names a folder, and there is none: name the file to write")
    assert not os.path.lexists(tmp_path / "reports")


def test_a_run_id_given_whole_names_its_run_though_it_begins_another(tmp_path):
    """Runs of ids `abc` and `abcdef` (ids of different lengths: another tool's, or renamed by hand) under one root:
    `show abc` was ambiguous, and no id could name run `abc` alone."""
    for run_id in ("abc", "abcdef"):
        synthetic_run(tmp_path / "outputs" / "day" / run_id, [1.0], run_id=run_id)
    shown = audit(tmp_path, "show", "abc", "--json")
    assert (shown.returncode, json.loads(shown.stdout)["run"]["run_id"]) == (EXIT["ok"], "abc")
    ambiguous = audit(tmp_path, "show", "ab")
    assert ambiguous.stderr == ("benchrun: error: run id prefix 'ab' is ambiguous: abc (outputs/day/abc), abcdef "
                                "(outputs/day/abcdef)\n")


# -- the response cache ----------------------------------------------------------------------------------------------

def test_cache_takes_a_digest_in_upper_case_as_every_reader_does(tmp_path):
    """`cache --digest AB12` (a digest copied as a server or a tool writes it, in upper case): `'AB12' is not the start
    of a digest (hex digits, sha256: allowed)`, though upper-case hex is hex and every reader compares digests in
    either case (`model_digest`)."""
    with Store(tmp_path / "cache") as store:
        store.put("k1", entry(digest="sha256:" + "ab" * 32))
        store.put("k2", entry(model="gemma3", digest="sha256:" + "cd" * 32))
    listed = audit(tmp_path, "cache", "--cache-dir", str(tmp_path / "cache"), "--digest", "SHA256:ABAB", "--json")
    assert listed.returncode == EXIT["ok"], listed.stderr
    assert [(m["model"], m["entries"]) for m in json.loads(listed.stdout)["models"]] == [("llama3.2", 1)]
    cleared = audit(tmp_path, "cache", "--cache-dir", str(tmp_path / "cache"), "--clear", "--digest", "AB", "--json")
    assert (cleared.returncode, json.loads(cleared.stdout)["cleared"]) == (EXIT["ok"], 1)


# -- a rescore's time limit ------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_rescore_whose_scorer_overruns_its_time_limit_records_the_timeouts(tmp_path):
    """`rescore --scorer-timeout-s 0.1` of a scorer taking 0.5 s (the time limit used as meant): an
    `asyncio.CancelledError` then `RuntimeError: Event loop is closed` traceback (exit 1), no rescore: the last call's
    replacement process, cancelled as it waited for the overrun one to die, cancelled that wait for the close after
    it too (execute.scorerprocess._ended)."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    (tmp_path / "slow.py").write_text("import time\n\ndef closeness(response, reference):\n    time.sleep(0.5)\n"
                                      "    return 1\n")
    done = audit(tmp_path, "rescore", str(run_dir), "--scorers", str(tmp_path / "slow.py"), "--only",
                 "--scorer-timeout-s", "0.1")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert done.stdout.splitlines()[-5:] == ["2 scorer errors", "  t:a=0 closeness: TimeoutError: timed out after 0.1 s",
                                             "  t:a=1 closeness: TimeoutError: timed out after 0.1 s",
                                             "scorers whose code is not the run's: closeness",
                                             f"rescore 001 written to {run_dir / 'rescores' / '001'}"]


@pytest.mark.parametrize("limit", ["0", "-1", "nan"])
def test_a_rescore_time_limit_is_seconds_over_zero(tmp_path, limit):
    """`--scorer-timeout-s 0` (or -1, nan), which a run's scorer_timeout_s refuses: taken, and the rescore ended in
    the traceback above."""
    run_dir = synthetic_run(tmp_path / "run", [1.0])
    done = audit(tmp_path, "rescore", str(run_dir), "--scorer-timeout-s", limit)
    assert done.returncode == EXIT["usage"]
    assert done.stderr.splitlines()[-1] == (f"benchrun-audit rescore: error: argument --scorer-timeout-s: '{limit}' is "
                                            "no time limit: give seconds over 0, as scorer_timeout_s takes")
