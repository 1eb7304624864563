"""Hostile input, eighteenth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- a folder of 255 digits planted under a run's rescores/: every later `rescore` of the run failed `file name too
  long: .../rescores/1000...0` (exit 4), numbering on from it. Now a rescore numbers on from the largest number
  below 10**9 there (`audit.rescore.claim_dir`)
- `retry` of a run whose directory's name is 249 bytes or more (`hydra.run.dir=` so chosen): the server asked, then
  `file name too long: .../<name>.retry1` (exit 4), no word of `--into`. Now refused before the server is asked, with
  that advice (`audit.retry._beside`)
- `verify`, `rescore`, `resume` or `retry` of a sweep's directory (`resume SWEEP` after a sweep was stopped) said
  only `not a run directory (no run.json)`; of an archive root too, where show, compare, export and report say where
  its runs are. Now each says it is a sweep's directory and names a job, or that runs lie deeper
  (`archive.lookup.resolve_run`, `_runs_in`)
- a sealed run holding a record line that no reader reads as a record (an older benchrun's: a metric of 1e200, which
  this one bounds at 1e100; a run rewritten and sealed again), or a summary.json or manifest.json no reader reads:
  `verify` said `intact` (exit 0), while show, compare, export and rescore stop at `line 4: not a valid record: ...`.
  Now verify names that file (and line) too, NOT intact (`archive.trust.unreadable`, from `audit.verify.belonging`)
- `list` showed a run's headline means from a summary.json edited since the run ended (`t/closeness=0.990` where the
  run found 0.667), the one command that reads a number without checking it first. Now the run is listed as
  unreadable with the line every other reader gives (`archive.headline.headline_unverified`,
  `audit.listing.listed`), and `list --status unreadable` lists it (a run.json read whole passed only its own status)
- `show A B --wrong M` and `report A B` of two runs whose benchmark was edited between them (a prompt reworded, the
  references fixed, a system prompt added): one prompt and one reference shown for the sample, the first run's, with
  the second run's answer and score beside them, as if it had been asked that; the report's "sent before each
  prompt" showed the one run's system prompt as every run's. Now each run asked otherwise says how it was asked
  (`audit.show.wrong_samples`, `asked_otherwise`; `audit.report_samples._answer_cell`, `_chat_view`)
- `compare` of a run of `repeats=3` with one of a single answer per sample said `inputs that differ:` and listed
  nothing: repeats are kept in the manifest beside its config, which alone was compared. Now `config repeats: 1 ->
  3` and `config repeats.seeds: only in the compared run ("vary")` (`audit.provenance.settings`)
- `verify` of a run while a `rescore` of it runs said of the rescore's folder `unfinished (no rescore.json: it was
  stopped)`. Now `being written now (pid … on host … since …); verify it once it has ended`
  (`audit.rescorecheck.check_rescores`: the newest folder, while a live writer holds the run's lock)
- the response cache's database a symbolic link to a run's own file (`responses.sqlite3 -> RUN/run.lock`, empty
  once the run ended, or to a `judgements.jsonl` a run without judges does not have): `benchrun-audit cache --clear`
  (and a run with that cache) wrote SQLite's tables into it, a 20 KB database in the run's run.lock, through the
  link; and listed it as an empty cache; a cache_dir in a run's own folder (`RUN/.hydra`) the same. Now refused in
  one line naming the run's file, nothing written (`execute.cacheplace.misplaced_store`, with
  `archive.claims.archive_file`)

What held is in the pass's note.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchrun.archive.ledger import digest_lines
from benchrun.archive.reader import load_run
from benchrun.archive.sweep import write_sweep_summary
from benchrun.core.errors import EXIT
from benchrun.core.layout import NAME_MAX
from benchrun.testing.inprocess import child_env, cli
from tests.helpers.answers import BROKEN, broken_answer
from tests.helpers.archives import another_run, replace_manifest, reseal, synthetic_run
from tests.helpers.commands import run_in_process


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


# -- rescores/ ---------------------------------------------------------------------------------------------------------

def test_a_rescore_numbers_on_past_a_planted_folder_of_too_many_digits(tmp_path):
    """A folder named with 255 nines under rescores/ (anyone's, in a shared archive): the next rescore's number was
    one more, 256 digits, and every rescore of the run failed `file name too long`. Now it is passed over."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    (run_dir / "rescores" / ("9" * NAME_MAX)).mkdir(parents=True)
    (run_dir / "rescores" / "999999999").mkdir()
    (tmp_path / "mine.py").write_text("def closeness(response, sample):\n    return 1.0\n")
    for expected in ("1000000000", "1000000001"):
        done = audit(tmp_path, "rescore", str(run_dir), "--scorers", "mine.py", "--only")
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        assert done.stdout.splitlines()[-1] == f"rescore {expected} written to {run_dir / 'rescores' / expected}"
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"


# -- retry ---------------------------------------------------------------------------------------------------------

def test_a_retry_whose_default_directory_name_is_too_long_says_into_before_asking(tmp_path):
    """A parent named with 250 bytes: `<name>.retry1` is 257. The server was asked, then `file name too long` (exit
    4), with no way out said. Now refused first (the server here is none), naming --into; nothing is made."""
    parent = run_in_process(tmp_path, "b" * 250, *BROKEN, responder=broken_answer)
    before = sorted(p.name for p in parent.parent.iterdir())
    done = audit(tmp_path, "retry", str(parent), "--host", "http://127.0.0.1:9")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: the retry's directory beside run {load_run(parent).id} would be named "
        f"{'b' * 24}….retry1, 257 bytes, more than a file system takes ({NAME_MAX}); nothing was written; name its "
        "directory with --into DIR\n"))
    assert sorted(p.name for p in parent.parent.iterdir()) == before


# -- a command of one run given many ---------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["verify", "rescore", "resume", "retry"])
def test_a_command_of_one_run_given_a_sweep_or_an_archive_says_where_its_runs_are(tmp_path, command):
    """A sweep's directory (or an archive root) given to a command of one run: `not a run directory (no run.json)`,
    where the commands of many runs say which runs it holds."""
    synthetic_run(tmp_path / "sweep" / "0_a", [1, 0], run_id="a" * 12, label="a")
    synthetic_run(tmp_path / "sweep" / "1_b", [1, 1], run_id="b" * 12, label="b")
    write_sweep_summary(tmp_path / "sweep")
    synthetic_run(tmp_path / "outputs" / "2026-12-05" / "run", [1])
    said = {"sweep": "it is a sweep's directory: name one of its jobs (sweep/0_a, sweep/1_b)",
            "outputs": "runs lie deeper in it (outputs/2026-12-05/run): name them (benchrun-audit list outputs)"}
    for folder, where in said.items():
        done = audit(tmp_path, command, folder)
        assert (done.returncode, done.stdout, done.stderr) == (EXIT["archive"], "", (
            f"benchrun: error: in '{folder}': not a run directory (no run.json); {where}\n"))


# -- what verify passes ----------------------------------------------------------------------------------------------

def _a_metric_of_1e200(run_dir: Path) -> str:
    scores = run_dir / "scores.jsonl"
    scores.write_bytes(scores.read_bytes().replace(b'"closeness":0}', b'"closeness":1e200}'))
    (run_dir / "records.sha256").write_bytes(b"".join(
        digest_lines(name, (run_dir / name).read_bytes().splitlines(keepends=True))
        for name in ("responses.jsonl", "scores.jsonl")))
    reseal(run_dir, "scores.jsonl", "records.sha256")
    return ("scores.jsonl", "line 4: not a valid record: metrics.closeness: a metric's value is a finite "
            "number of magnitude at most 1e+100, not 1e+200")


def _a_count_below_0(run_dir: Path) -> str:
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["metrics"][0]["n"] = -2
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    reseal(run_dir, "summary.json")
    return "summary.json", "unreadable: metrics.0.n: -2 is no number of answers (0 or more)"


def _values_no_mapping(run_dir: Path) -> str:
    replace_manifest(run_dir, lambda manifest: manifest["samples"][0].update(values=7))
    return "manifest.json", "not a valid manifest: samples.0.values: Input should be an object"


@pytest.mark.parametrize("plant", [_a_metric_of_1e200, _a_count_below_0, _values_no_mapping])
def test_verify_says_a_sealed_file_no_reader_reads_as_what_it_is(tmp_path, plant):
    """A sealed run whose scores.jsonl line 4 holds a metric of 1e200 (what an older benchrun let a scorer give),
    whose summary.json counts -2 answers, or whose manifest's sample holds values 7, every digest and the seal made
    again to match: verify said `intact`, exit 0, while the other commands refuse the file in one line."""
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    name, why = plant(run_dir)
    copy = another_run(run_dir, tmp_path / "copy")  # a run is compared with another run
    verified, compared = audit(tmp_path, "verify", str(run_dir)), audit(tmp_path, "compare", str(run_dir), str(copy))
    assert (verified.returncode, verified.stderr) == (EXIT["not_intact"], "")
    assert [line for line in verified.stdout.splitlines() if not line.startswith("ok")][1:] == [
        f"FAIL  {name}: {why}", "NOT intact: 1 problem"]
    assert (compared.returncode, compared.stderr) == (EXIT["archive"], f"benchrun: error: in '{run_dir / name}': {why}\n")


# -- list ------------------------------------------------------------------------------------------------------------

def test_list_shows_no_headline_from_a_summary_edited_since_the_run_ended(tmp_path):
    """summary.json's mean edited from 0.6666… to 0.99: `list` showed `t/closeness=0.990`, exit 0. Now the run is
    listed as unreadable, saying why as show does; a run.json edited under its seal the same."""
    edited, renamed = synthetic_run(tmp_path / "outputs" / "a", [1, 0, 1]), synthetic_run(
        tmp_path / "outputs" / "b", [1, 0, 1], run_id="6" * 12)
    summary = edited / "summary.json"
    summary.write_text(summary.read_text().replace('"mean": 0.6666666666666666', '"mean": 0.99'))
    (renamed / "run.json").write_text((renamed / "run.json").read_text().replace('"model": "m"', '"model": "n"'))
    listed = audit(tmp_path, "list", "--json")
    assert (listed.returncode, listed.stderr) == (EXIT["ok"], "")
    said = "so what it says cannot be trusted; benchrun-audit verify {} says what changed"
    assert json.loads(listed.stdout) == [
        {"path": "outputs/a", "status": "unreadable", "listed_as": "unreadable",
         "reason": f"in 'outputs/a': run 555555555555: summary.json: changed since the run ended, "
                   f"{said.format('outputs/a')}"},
        {"path": "outputs/b", "status": "unreadable", "listed_as": "unreadable",
         "reason": f"in 'outputs/b': run 666666666666: run.json: changed since the run was sealed, "
                   f"{said.format('outputs/b')}"}]
    assert [run["path"] for run in json.loads(audit(tmp_path, "list", "--status", "unreadable", "--json").stdout)] == [
        "outputs/a", "outputs/b"]
    assert json.loads(audit(tmp_path, "list", "--status", "running", "--json").stdout) == []
    shown = audit(tmp_path, "show", "outputs/a")
    assert shown.stderr == f"benchrun: error: in 'outputs/a': run 555555555555: summary.json: changed since the run ended, {said.format('outputs/a')}\n"


# -- runs that asked a sample otherwise ------------------------------------------------------------------------------

def _asked_otherwise(tmp_path: Path) -> tuple[Path, Path]:
    """Two runs of one benchmark edited between them: the second's prompts reworded, references fixed (3 -> 1), a
    system prompt added."""
    first = synthetic_run(tmp_path / "a", [1, 0], reference=3)
    second = synthetic_run(tmp_path / "b", [1, 1], run_id="6" * 12, reference=3)

    def edited(manifest: dict) -> None:
        manifest["tasks"][0]["system"] = "Always answer 1."
        for sample in manifest["samples"]:
            sample.update(prompt="what is " + sample["prompt"], reference=1)
    replace_manifest(second, edited)
    return first, second


def test_show_wrong_says_how_each_run_asked_a_sample_it_asked_otherwise(tmp_path):
    """The prompt and reference columns held the first run's alone, the second run's value beside them."""
    first, second = _asked_otherwise(tmp_path)
    table = audit(tmp_path, "show", str(first), str(second), "--wrong", "closeness")
    assert (table.returncode, table.stderr) == (EXIT["ok"], "")
    assert [[cell.strip() for cell in line.split("│")[3:5]] for line in table.stdout.splitlines()
            if line.startswith("│")] == [["a is 1", "3"], ["(run 666666666666: what is a is 1)", "(run 666666666666: 1)"]]
    shown = json.loads(audit(tmp_path, "show", str(first), str(second), "--wrong", "closeness", "--json").stdout)
    assert shown["samples"] == [{"id": "t:a=1", "task": "t", "prompt": "a is 1", "reference": 3,
                                 "values": {"555555555555": 0, "666666666666": 1},
                                 "asked_otherwise": {"666666666666": {"prompt": "what is a is 1", "reference": 1}}}]


def test_a_report_says_how_each_run_asked_a_sample_it_asked_otherwise(tmp_path):
    """The samples view showed the first run's prompt and reference for every run's answer, and the second run's
    system prompt as sent before every run's prompts."""
    first, second = _asked_otherwise(tmp_path)
    done = audit(tmp_path, "report", str(first), str(second), "--output", "r.html")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    page = (tmp_path / "r.html").read_text()
    assert '<div class="sub">sent before each prompt (m · 666666666666):</div>' in page
    assert page.count('<div class="sub">asked in this run as:</div><pre>what is a is ') == 2
    assert page.count('<div class="sub">reference in this run: <code>1</code></div>') == 2


# -- compare's inputs ------------------------------------------------------------------------------------------------

def test_compare_says_that_two_runs_differ_in_their_repeats(tmp_path):
    """`repeats=3` against one answer a sample: `inputs that differ:` and nothing under it."""
    once = run_in_process(tmp_path, "once", "task.only=[product]")
    thrice = run_in_process(tmp_path, "thrice", "task.only=[product]", "repeats=3")
    done = audit(tmp_path, "compare", str(once), str(thrice))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    lines = done.stdout.splitlines()
    start = lines.index("inputs that differ:")
    assert lines[start:start + 4] == ["inputs that differ:", "  config repeats: 1 -> 3",
                                      '  config repeats.seeds: only in the compared run ("vary")',
                                      f"llama3.2 {load_run(thrice).id} vs baseline llama3.2 {load_run(once).id}"]


# -- a rescore being written -----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_verify_says_a_rescore_being_written_is_being_written(tmp_path):
    """A rescore whose scorer waits for a file: verify, meanwhile, said its folder's rescore `was stopped`."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    (tmp_path / "slow.py").write_text("import os, time\n\ndef closeness(response, sample):\n"
                                      f"    while not os.path.exists({str(tmp_path / 'go')!r}):\n"
                                      "        time.sleep(0.05)\n    return 1.0\n")
    rescore = subprocess.Popen([sys.executable, "-m", "benchrun.audit", "rescore", str(run_dir), "--scorers",
                                "slow.py", "--only"], cwd=tmp_path, env=child_env(), stdout=subprocess.DEVNULL)
    try:
        while not (run_dir / "rescores" / "001" / "rescore.log").exists() and rescore.poll() is None:
            time.sleep(0.01)  # the rescore's folder made: it holds the run's lock
        during = audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()
    finally:
        (tmp_path / "go").touch()
        assert rescore.wait(timeout=120) == EXIT["ok"]
    [said] = [line for line in during if line.startswith("ok    rescores/001")]
    assert said.startswith(f"ok    rescores/001: unfinished (no rescore.json: being written now (pid {rescore.pid} on host ")
    assert said.endswith("); verify it once it has ended): claims nothing, not checked")
    assert "ok    rescores/001/scores.jsonl: 4 lines as written" in audit(tmp_path, "verify", str(run_dir)).stdout


# -- the response cache ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["run.lock", "judgements.jsonl"])
def test_a_cache_database_linked_to_a_runs_file_is_never_written_into_it(tmp_path, target):
    """`responses.sqlite3 -> ../run/run.lock` (empty: SQLite takes it for a new database) or to the judgements.jsonl
    a run without judges lacks (SQLite would make it): `cache --clear` wrote the cache's tables there."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "responses.sqlite3").symlink_to(f"../run/{target}")
    said = (f"benchrun: error: --cache-dir: {tmp_path / 'cache' / 'responses.sqlite3'} is a symbolic link to the "
            f"{target} of the run in {run_dir}, which only benchrun writes\n")
    (run_dir / ".hydra").mkdir()
    in_hydra = (f"benchrun: error: --cache-dir: {run_dir / '.hydra' / 'responses.sqlite3'} is a file in the .hydra "
                f"of the run in {run_dir}, which only benchrun writes\n")
    for clear in ((), ("--clear",)):
        done = audit(tmp_path, "cache", "--cache-dir", "cache", *clear)
        assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", said)
        done = audit(tmp_path, "cache", "--cache-dir", "run/.hydra", *clear)
        assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", in_hydra)
    (run_dir / ".hydra").rmdir()
    assert sorted(p.name for p in run_dir.iterdir()) == ["config.yaml", "manifest.json", "records.sha256",
                                                         "responses.jsonl", "run.json", "run.lock", "scores.jsonl",
                                                         "seal.json", "summary.json"]
    assert (run_dir / "run.lock").read_bytes() == b""
