"""Hostile input, tenth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it found
bad, each with the rule it now obeys.

- `retry --into RUN/x` (or `RUN/rescores/y`, `RUN/.hydra/z`), `merge --into SHARD/x`, a run with
  `hydra.run.dir=RUN/x`: the new run was written inside another run's directory, among its files (copying or
  deleting that run took the other with it; one under `.hydra` was not even listed). Now a run is never made inside
  another run's directory at any depth, its links followed (`archive.claims.refusal`): refused in one line naming
  that run, nothing written
- a run copied with `cp -al` (its files hard links of the copy's) and then resumed or rescored: the resume appended
  its answers to the copy's files too and emptied the copy's run.lock, so the copy (never touched by name) then
  verified as `run.json was edited`; a record file with another name had its uncommitted tail cut under both names.
  Now the writer writes in place only into a file of one name (`archive.dirlock.own_file`, which the repair before a
  resume asks of every record file before it cuts any): refused in one line naming the file, nothing changed
- an empty run name (`show "$RUN"` with RUN unset): `show`, `export`, `compare` and `report` took it for the working
  directory (a sweep of whatever runs were under it), `resume` and `retry` for a run id prefix every run has; now
  refused in one line by the reader that resolves every run name (`archive.lookup.named`)
- `compare` of two runs whose scores (of a metric not 0/1) differ in exactly one sample: a ValueError traceback
  (scipy's permutation test refuses one value); now that test's exact p, 1 (both signs of one difference give
  one |sum|), in `audit.significance.permutation_p`
- scores as large as a scorer may give (to 1e100): `show` and `compare` printed a mean of 3.3e99 as its hundred
  digits, cut short to fit (`33333333333333332244…`, its magnitude lost); now every number of a table is printed by
  `console.output.number`: three decimals, or four significant digits from 1e6 on (`3.333e+99`)
- a retry or merge given its parent or shards by a relative path (`retry outputs/x`, a run id prefix under
  `--root outputs`): run.json recorded that path as given, relative to a directory it names nowhere, so read from
  anywhere else it named another folder or none; and `show` printed a recorded path as where the run is when it had
  been moved or deleted. Now a derived run records its parent's and shards' directories absolute
  (`core.lineage.recorded`), and `show` says of a recorded path that no longer holds that run `(not there now: no run
  in it)` (or the run that is there)
- a retry of a retry: the answers it carried over were marked `carried_from` the retry between (which asked none of
  them), so with that retry deleted nothing told which run asked them; now `carried_from` names the run that asked
  the answer however many retries carried it (`audit.retry._carry`), as `cached_from` names the run that asked a
  cached one; run.json's `parent` still names the run it was retried from
- a run committed to git and checked out with `core.autocrlf=true` (each `\\n` of its files made `\\r\\n`):
  `verify` said every file changed, its records with `4 lines after line 0 not written by the run` (lines added,
  which none were), and the readers that run.json changed; now a file whose line ends alone changed is said to be
  that, in verify and in every reader's one line (`archive.trust.converted`): `changed since the run was sealed: its
  line ends were made CRLF since it was written (...); with LF ones it is as written: check the run out again with
  core.autocrlf=false`. The run is still not intact: its bytes are not the ones sealed
- `export --output -` and `report --output -`: a file named `-` written in the working directory (the report
  replacing the export's), where `-` means standard output to every tool that reads it; now export writes standard
  output, as without --output, and every other `--output -` is refused in one line, nothing written, by the one
  writer of files a user names (`archive.writer.atomic_file`)
- a run that did not end (killed, or a resume killed) whose records.sha256 was emptied, deleted, or checked out with
  CRLF line ends (no line of it a digest): every record line was an uncommitted tail, which no reader checks, so
  `show`, `export` and the API read edited scores as the run's (a mean of 1.000 where it wrote 0); now such a run's
  records.sha256 must be there, every line of it a digest, and what lies beyond its last digest no more than a writer
  killed mid-write leaves (one commit's lines, in one file; one line of responses.jsonl), else the readers refuse in
  one line (`archive.trust._unfinished`), as `verify` already said

`tests/test_hostile_archive.py` made a run inside another's with the writer; it now moves one there, as an older
benchrun could have left it (the readers still list and show both).

What held, tried and found as the rules say: a run copied with `cp -r` (times lost) verifies intact; a run moved or
renamed after it ended verifies and shows from its new place (run.json's `cwd` is only where its sources are looked
for, `not found: not checked` elsewhere); hard-linked copies that were edited fail `verify` each by its own digests;
two `resume`s of one run, `resume` or `rescore` of a run being written, and `retry` of a run being resumed are
refused (`another process is writing this run`, `it has not finished`); `verify` while a run is written says `not
sealed yet: the run is being written` and checks the committed lines only, and `show`, `export`, `list` and `compare`
read its committed lines; `cache --clear` deletes entries in one SQLite transaction, which a run's writes wait out;
statistics of scores all equal (stderr 0, interval `0.500–0.500`), of n=1 (no interval), of one repeated sample
(one cluster: no interval), McNemar with no discordant pairs (p=1), compare of runs sharing some or no samples; sums of 1e100 (no overflow: the scorer boundary bounds values at 1e100); a run-id
prefix two runs share (`ambiguous`, both named), `.` and `..` (read as the sweep of the runs under them), a path to
run.json itself (`no run directory or run id`), a path through a symbolic link to a run; `list --since` of year 0,
10**20, `+25:00`, an empty value (each refused by argparse in one line) and of `9999-12-31T23:59:59-23:59` (no
overflow); `list --model` and `--task` with regex metacharacters (compared as text); `export --output` onto an
existing file (replaced whole, atomically), into a folder that does not exist (one line); the HTML report of a model
and label `</script><script>alert(1)</script>]]>` (escaped) and of 10,000 samples (118 KB).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import FakeOllama, Reply
from tests.helpers.archives import read_jsonl, synthetic_run
from tests.helpers.commands import run_in_process
from tests.helpers.killed import killed_run, write_bench

pytestmark = pytest.mark.slow


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- a run inside another run's directory ------------------------------------------------------------------------

def _inside(run_dir: Path, into: Path, chosen_by: str) -> str:
    return (f"benchrun: error: {into} is inside the run directory {run_dir}: a run is never made among another run's "
            f"files; nothing was changed; pick a new directory ({chosen_by})\n")


class _FailsThree:
    """A server that cannot answer sample a=3 (the run ends completed_with_errors, which retry asks again)."""

    def __call__(self, req):
        return Reply(status=400, error="cannot") if req.prompt.split()[4] == "3" else half_right(req)


@pytest.fixture(scope="module")
def failed_three(tmp_path_factory):
    """A lab whose server cannot answer sample a=3 (still up, for retries) and its run of 5 samples, ended
    completed_with_errors; tests copy the run (`failed_copy`)."""
    with Lab(tmp_path_factory.mktemp("failed"), n=5, responder=_FailsThree()) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
        yield lab, run_dir


def failed_copy(failed_three, tmp_path: Path) -> Path:
    """A copy of the lab's run that failed sample a=3 (and its benchmark) in tmp_path: its run directory."""
    lab, run_dir = failed_three
    shutil.copytree(lab.root, tmp_path, dirs_exist_ok=True)
    return tmp_path / run_dir.relative_to(lab.root)


@pytest.mark.parametrize("inside", ["x", "rescores/y", ".hydra/z", "x/y"])
def test_a_retry_is_never_made_inside_another_runs_directory(tmp_path, failed_three, inside):
    parent = failed_copy(failed_three, tmp_path)
    before = snapshot(parent)
    result = audit(tmp_path, "retry", str(parent), "--into", str(parent / inside))
    assert (result.returncode, result.stderr) == (EXIT["usage"], _inside(parent, parent / inside, "--into DIR"))
    assert snapshot(parent) == before


def test_a_retry_into_a_link_to_a_folder_of_a_run_is_refused(tmp_path, failed_three):
    run_dir = synthetic_run(tmp_path / "run", [1])
    (tmp_path / "link").symlink_to(run_dir)
    parent = failed_copy(failed_three, tmp_path)
    result = audit(tmp_path, "retry", str(parent), "--into", str(tmp_path / "link" / "x"))
    assert (result.returncode, result.stderr) == (EXIT["usage"],
                                                  _inside(run_dir, tmp_path / "link" / "x", "--into DIR"))
    assert not (run_dir / "x").exists()


def test_a_merge_is_never_made_inside_a_shards_directory(tmp_path):
    one, two = (run_in_process(tmp_path, f"part{i}", f"shard={i}/2") for i in (1, 2))
    before = snapshot(one)
    result = audit(tmp_path, "merge", str(one), str(two), "--into", str(one / "merged"))
    assert (result.returncode, result.stderr) == (EXIT["usage"], _inside(one, one / "merged", "--into DIR"))
    assert snapshot(one) == before


def test_a_run_is_never_made_inside_another_runs_directory(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1])
    before = snapshot(run_dir)
    result = cli("task.path=nowhere", f"hydra.run.dir={run_dir / 'x'}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], _inside(run_dir, run_dir / "x", "hydra.run.dir=..."))
    assert snapshot(run_dir) == before


def test_a_project_folder_holding_a_config_yaml_is_no_run(tmp_path):
    (tmp_path / "config.yaml").write_text("mine: 1\n")
    run_dir = run_in_process(tmp_path, "inside")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


# -- files with other names --------------------------------------------------------------------------------------

def _two_names(path: Path) -> str:
    return (f"benchrun: error: in '{path}': a file of 2 names (hard links, as `cp -al` makes), which a write here "
            "would change under every name, in another copy too; benchrun writes only into a run's own files: copy "
            "the run with `cp -r` and use the copy\n")


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """A run SIGKILLed mid-way (its benchmark beside it) and the server it asked, still up; tests copy the run."""
    root = tmp_path_factory.mktemp("killed")
    write_bench(root / "bench")
    with FakeOllama(responder=half_right) as server:
        yield root, killed_run(root, server).relative_to(root), server


def killed_copy(killed, tmp_path: Path) -> tuple[Path, FakeOllama]:
    """A copy of the killed run (and its benchmark) in tmp_path: its run directory, and the server."""
    root, run_dir, server = killed
    shutil.copytree(root, tmp_path, dirs_exist_ok=True)
    return tmp_path / run_dir, server


@pytest.mark.parametrize("command", ["resume", "rescore"])
def test_a_run_copied_as_hard_links_is_never_written_through_them(tmp_path, killed, command):
    run_dir, server = killed_copy(killed, tmp_path)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-al", str(run_dir), str(copy)], check=True)
    before = snapshot(copy)
    result = audit(tmp_path, command, str(run_dir), *(["--host", server.url] if command == "resume" else []))
    assert (result.returncode, result.stderr) == (EXIT["archive"], _two_names(run_dir / "run.lock"))
    assert snapshot(copy) == before


def test_a_record_file_of_two_names_is_not_cut_before_a_resume(tmp_path, killed):
    run_dir, server = killed_copy(killed, tmp_path)
    with open(run_dir / "scores.jsonl", "ab") as handle:
        handle.write(b'{"id": "half')  # a tail the repair would cut
    os.link(run_dir / "scores.jsonl", tmp_path / "kept.jsonl")
    before = snapshot(run_dir)
    result = audit(tmp_path, "resume", str(run_dir), "--host", server.url)
    assert (result.returncode, result.stderr) == (EXIT["archive"], _two_names(run_dir / "scores.jsonl"))
    assert snapshot(run_dir) == before
    assert os.path.samefile(run_dir / "scores.jsonl", tmp_path / "kept.jsonl")


# -- names given to commands -------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["show", ""], ["verify", ""], ["export", ""], ["rescore", ""], ["resume", ""],
                                     ["retry", ""], ["compare", "outputs/run", ""], ["merge", "", "--into", "m"],
                                     ["report", ""]])
def test_an_empty_run_name_names_no_run(tmp_path, command):
    synthetic_run(tmp_path / "outputs" / "run", [1, 0])
    before = snapshot(tmp_path)
    result = audit(tmp_path, *command)
    assert (result.returncode, result.stdout, result.stderr) == (
        EXIT["archive"], "", "benchrun: error: an empty run directory or run id names no run; give a run directory or "
                             "a run id prefix\n")
    assert snapshot(tmp_path) == before


# -- statistics of odd data --------------------------------------------------------------------------------------

def _metric_row(stdout: str, metric: str = "closeness") -> list[str]:
    [row] = [line for line in stdout.splitlines() if f" {metric} " in line and line.startswith("│")]
    return [cell.strip() for cell in row.strip("│").split("│")]


def test_a_compare_whose_runs_differ_in_one_sample_is_a_p_of_one(tmp_path):
    base = synthetic_run(tmp_path / "base", [0.5, 0.5, 0.5], run_id="a" * 12)
    other = synthetic_run(tmp_path / "other", [0.5, 0.7, 0.5], run_id="b" * 12)
    result = audit(tmp_path, "compare", str(base), str(other))
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert _metric_row(result.stdout) == ["t", "closeness", "3", "0.500", "0.567", "+0.067", "[+0.000, +0.200]", "1",
                                          "permutation"]


def test_scores_as_large_as_a_scorer_may_give_are_printed_to_their_digits(tmp_path):
    base = synthetic_run(tmp_path / "base", [1e100, -1e100, 1e100], run_id="a" * 12)
    other = synthetic_run(tmp_path / "other", [1e100] * 3, run_id="b" * 12)
    shown = audit(tmp_path, "show", str(base))
    assert _metric_row(shown.stdout)[:5] == ["t", "closeness", "3", "3.333e+99", "-2.535e+100–3.202e+100"]
    compared = audit(tmp_path, "compare", str(base), str(other))
    assert _metric_row(compared.stdout) == ["t", "closeness", "3", "3.333e+99", "1e+100", "+6.667e+99",
                                            "[+0.000, +2e+100]", "1", "permutation"]


# -- paths a derived run records ---------------------------------------------------------------------------------

def _row(stdout: str, key: str) -> str:
    """A row of show's heading, its lines (wrapped at spaces) joined."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(key))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" " * 13))
    return " ".join(line.strip() for line in [lines[start][len(key):], *lines[start + 1:end]])


def test_a_retry_records_its_parent_absolute_and_show_says_when_it_is_gone(tmp_path, failed_three):
    parent = failed_copy(failed_three, tmp_path)
    given = parent.relative_to(tmp_path)
    assert audit(tmp_path, "retry", str(given), "--into", "retried").returncode == EXIT["ok"]
    info = json.loads((tmp_path / "retried" / "run.json").read_text())
    assert info["parent"]["path"] == str(parent)
    parent.rename(tmp_path / "elsewhere")
    shown = audit(tmp_path, "show", "retried")
    assert _row(shown.stdout, "retry of") == (f"{info['parent']['run_id']}  {parent} (not there now: no run in it)  "
                                              "(4 answers carried over, 1 sample asked again)")


def test_a_merge_records_its_shards_absolute_and_show_says_when_one_is_gone(tmp_path):
    one, two = (run_in_process(tmp_path, f"part{i}", f"shard={i}/2") for i in (1, 2))
    ids = [json.loads((part / "run.json").read_text())["run_id"] for part in (one, two)]
    assert audit(tmp_path, "merge", "outputs/part1", "outputs/part2", "--into", "merged").returncode == EXIT["ok"]
    info = json.loads((tmp_path / "merged" / "run.json").read_text())
    assert [shard["path"] for shard in info["merged"]["shards"]] == [str(one), str(two)]
    synthetic_run(tmp_path / "other", [1], run_id="9" * 12)
    one.rename(tmp_path / "gone")
    (tmp_path / "other").rename(one)
    shown = audit(tmp_path, "show", "merged")
    assert _row(shown.stdout, "merge of") == (f"1/2 {ids[0]} {one} (not there now: run 999999999999 in it)  "
                                              f"2/2 {ids[1]} {two}")


# -- a run carried between machines ------------------------------------------------------------------------------

CONVERTED = ("its line ends were made CRLF since it was written (as git's core.autocrlf=true does on checkout); with "
             "LF ones it is as written: check the run out again with core.autocrlf=false")


def _checked_out_with_crlf(run_dir: Path) -> None:
    """Every file of the run as git's core.autocrlf=true checks it out: each \\n made \\r\\n."""
    for path in run_dir.iterdir():
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


def test_a_run_whose_line_ends_were_made_crlf_is_said_to_be_that(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    manifest_id = json.loads((run_dir / "run.json").read_text())["manifest_id"]
    _checked_out_with_crlf(run_dir)  # manifest.json is one line, with no line end
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["not_intact"]
    said = dict(line.split(": ", 1) for line in verified.stdout.splitlines()[1:-2])
    assert said == {f"FAIL  {name}": f"changed since the run finished: {CONVERTED}"
                    for name in ("config.yaml", "responses.jsonl", "scores.jsonl", "records.sha256", "summary.json")
                    } | {"FAIL  run.json": f"changed since the run was sealed: {CONVERTED}",
                         "ok    manifest.json": f"hashes to the manifest id {manifest_id[:12]}…"}
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': run 555555555555: run.json: changed since the run was sealed: {CONVERTED}, "
        f"so what it says cannot be trusted; benchrun-audit verify {run_dir} says what changed\n"))


def test_a_run_edited_as_well_as_made_crlf_is_changed(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    _checked_out_with_crlf(run_dir)
    config = run_dir / "config.yaml"
    config.write_bytes(config.read_bytes().replace(b"nowhere", b"elsewhere"))
    verified = audit(tmp_path, "verify", str(run_dir))
    [line] = [line for line in verified.stdout.splitlines() if "config.yaml" in line]
    assert line.startswith("FAIL  config.yaml: changed since the run finished: sha256 ") and CONVERTED not in line


def test_a_retry_of_a_retry_names_the_run_that_asked_each_answer(tmp_path, failed_three):
    first = failed_copy(failed_three, tmp_path)
    for into in ("retry1", "retry2"):
        parent = first if into == "retry1" else tmp_path / "retry1"
        assert audit(tmp_path, "retry", str(parent), "--into", into).returncode == EXIT["ok"]
    ids = {path.name: json.loads((path / "run.json").read_text())["run_id"]
           for path in (first, tmp_path / "retry1", tmp_path / "retry2")}
    carried = [record["carried_from"] for record in read_jsonl(tmp_path / "retry2" / "responses.jsonl")]
    assert Counter(carried) == {ids[first.name]: 4, None: 1}  # the failed sample, asked in each
    assert json.loads((tmp_path / "retry2" / "run.json").read_text())["parent"]["run_id"] == ids["retry1"]


# -- outputs ----------------------------------------------------------------------------------------------------

def test_export_to_dash_is_standard_output(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    plain, dashed = audit(tmp_path, "export", str(run_dir)), audit(tmp_path, "export", str(run_dir), "--output", "-")
    assert (dashed.returncode, dashed.stdout, dashed.stderr) == (EXIT["ok"], plain.stdout, "")
    assert not (tmp_path / "-").exists()


def test_a_report_to_dash_is_refused_and_no_file_named_dash_is_written(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    (tmp_path / "-").write_text("mine\n")
    result = audit(tmp_path, "report", str(run_dir), "--output", "-")
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: --output -: '-' names standard output, not a file; nothing was written; name a file "
        "(export writes to standard output without --output)\n"))
    assert (tmp_path / "-").read_text() == "mine\n"


# -- an unfinished run's digests ---------------------------------------------------------------------------------

def _emptied(run_dir: Path) -> None:
    (run_dir / "records.sha256").write_bytes(b"")


def _removed(run_dir: Path) -> None:
    (run_dir / "records.sha256").unlink()


def _crlf(run_dir: Path) -> None:
    _checked_out_with_crlf(run_dir)


@pytest.mark.parametrize("damage, why", [
    (_emptied, "responses.jsonl: 3 lines after line 0 that records.sha256 does not cover, more than a writer killed "
               "mid-write leaves"),
    (_removed, "records.sha256: missing: nothing covers the record lines"),
    (_crlf, "records.sha256: line 1 is not a digest line")])
@pytest.mark.parametrize("command", ["show", "export"])
def test_an_unfinished_runs_records_are_read_only_as_its_digests_cover_them(tmp_path, damage, why, command):
    run_dir = synthetic_run(tmp_path / "run", [0, 0, 0], finish=False)
    scores = run_dir / "scores.jsonl"
    scores.write_text(scores.read_text().replace('"closeness":0', '"closeness":1'))
    damage(run_dir)
    result = audit(tmp_path, command, str(run_dir))
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{run_dir}': run 555555555555: {why}, so what it says cannot be trusted; "
        f"benchrun-audit verify {run_dir} says what changed\n"))


def test_a_killed_writers_one_uncommitted_answer_leaves_the_run_readable_without_it(tmp_path):
    """The run is read, not refused; the answer its writer had not committed is not read as the run's (a resume asks
    that sample again): pass 17 (`archive.reader.Run._records`; this test had it read, `speed (1 answers, ...)`)."""
    run_dir = synthetic_run(tmp_path / "run", [0, 1], finish=False)
    responses = run_dir / "responses.jsonl"  # a writer killed between its first answer and that answer's digest
    responses.write_bytes(responses.read_bytes().split(b"\n", 1)[0] + b"\n")
    (run_dir / "scores.jsonl").write_bytes(b"")
    _emptied(run_dir)
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stderr) == (EXIT["ok"], "")
    assert "speed: none (no request was asked in this run)" in shown.stdout
