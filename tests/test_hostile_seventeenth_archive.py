"""Hostile input, seventeenth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- names at the file system's limit: `export --output NAME` and `report --output NAME`, NAME of 230 to 255 bytes (a
  name `touch` makes), were refused `file name too long writing NAME`, and `merge --into DIR`, DIR's name of 234 to
  255 bytes, `file name too long: .DIR.merging-<id>`, a name the user never gave: their temporary files' names were
  the name and a suffix. Now a temporary file's (or folder's) name begins with the name's first 223 bytes
  (`archive.atomic.stem`)
- lines planted after a killed run's last digest (30 MB of newlines) were each held, digested and parsed as JSON by
  every reader (verify, show, resume: 4 minutes and 1 GB each, growing with the file). Now they are held only up to
  256 MiB, the rest counted (`archive.ledger.check_file`), and a tail not held whole is none a killed writer left
  (`archive.repair.left_by_a_writer`); a records.sha256 of millions of lines that are no digests was a problem each
  (1.1 GB held, verify printed them all): the first ten are listed, the rest counted in one (`ledger.Digests.fault`)
- `rescore --rejudge judge.model=[1,2` (or a `!!python/...` tag): a yaml traceback; `judge.model=&a [*a]` (a list
  holding itself): a RecursionError traceback from the secrets check; `judge.x=1 judge.x.y=2`: a TypeError traceback,
  all exit 1. Now each value is read as a benchmark file's values are (`core.yamlfile.parse_yaml`) and a key below a
  value that is no mapping is refused: one line, exit 2 (`audit.rejudge._override`, `_set`)
- a filter given empty (`show --wrong "$METRIC"`, `show --task "$T"`, `list --model "$M"`, `list --task "$T"`, the
  variable unset) was dropped: the run shown whole, every run listed. Now it names no metric, task or model, as
  `compare --metric ""` already did (`audit.show.main`, `audit.listing.list_runs`)
- a run killed after writing score lines and before their digests: `show`, `compare`, `export` counted those lines,
  which a resume drops and grades again (README: "A run that did not end is read only as far as its records.sha256
  covers it"). Now every reader reads only the lines records.sha256 covers (`archive.reader.Run._records`); and a
  run that ended, checked and then appended to (a resume begun after the check, a merge reading a shard being
  resumed), only as far as run.json's digests count its lines (`archive.trust.covered`)
- `show ID --root MISTYPED` (or `show ID` where there is no `outputs`): `no run directory or run id 'ID' under
  MISTYPED`, as if it had been looked in; now `(no archive directory 'MISTYPED' to look it up in)`
  (`archive.lookup.resolve_run`)
- a run directory renamed with latin-1 bytes by another tool: `merge` of it as a shard (and `retry` of it as a parent)
  ended in a PydanticSerializationError traceback writing run.json, which records that path as text; `compare --json`
  and `rescore --json` of it too (the rescore written, then not said). Now the derived run is refused in one line,
  nothing made (`core.lineage.recorded`), and their JSON escapes the name as every other `--json` does
  (`audit.compare.main`, `audit.rescore.main`)
- `show A B --wrong METRIC`, B a copy of A (one run id) resumed or graded apart since: one column, B's values under
  the id they share, exit 0 (runs were made one by id). Now refused in one line; a directory named twice is one
  column (`audit.show.show_wrong`); `report A B` of such two showed both columns headed `m · <id>` with B's numbers
  in both (keyed by label): now a label repeated after the id gets the directory (`audit.report.distinct_labels`);
  `export A B` of such two gave rows of both under one run id, and `export A A/.` every row twice: now refused, or
  each row once (`audit.named.one_each`, once `audit.show.one_each`)

What held is in the pass's note.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchrun.archive import ledger
from benchrun.archive.reader import load_run
from benchrun.audit import resume_run
from benchrun.core.errors import EXIT, ArchiveError
from benchrun.core.layout import NAME_MAX
from benchrun.core.shards import Shard
from benchrun.testing.inprocess import cli
from tests.helpers.archives import synthetic_run


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


# -- names at the file system's limit --------------------------------------------------------------------------------

def test_an_output_named_as_long_as_a_file_system_takes_is_written(tmp_path):
    """`export --output` and `report --output` of a 255-byte name (in UTF-8: 127 two-byte letters and one more):
    `file name too long writing ...`, exit 4, as their temporary file's name was 26 bytes longer."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    for name, *command in (("é" * 127 + "x", "export", "--format", "jsonl"), ("r" * (NAME_MAX - 5) + ".html", "report")):
        assert len(name.encode()) == NAME_MAX
        done = audit(tmp_path, *command, str(run_dir), "--output", name)
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        assert (tmp_path / name).stat().st_size > 0
    rows = [json.loads(line) for line in (tmp_path / ("é" * 127 + "x")).read_text().splitlines()]
    assert len(rows) == 4
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_merge_into_a_directory_named_as_long_as_a_file_system_takes_is_made(tmp_path):
    """`merge --into DIR`, DIR's name 255 bytes: `file name too long: .DIR.merging-<id>` (exit 4), naming a folder the
    user never gave; the merged run is made, and verifies."""
    synthetic_run(tmp_path / "shard", [1.0, 0.0], run_id="c" * 12, shard=Shard.parse("1/1"))
    into = tmp_path / ("m" * NAME_MAX)
    done = audit(tmp_path, "merge", str(tmp_path / "shard"), "--into", str(into))
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert audit(tmp_path, "verify", str(into)).stdout.splitlines()[-1] == "intact"
    assert sorted(p.name for p in tmp_path.iterdir()) == [into.name, "shard"]


# -- what follows a killed run's last digest -------------------------------------------------------------------------

def test_millions_of_lines_after_a_killed_runs_last_digest_are_counted_not_held(tmp_path, monkeypatch):
    """A killed run's scores.jsonl with lines planted after its last digest: every one was held in memory, digested
    and parsed as JSON by verify, show and resume (30 MB of newlines: 4 minutes and 1 GB each). Now what follows the
    last digest is held only up to `ledger.MAX_HELD_TAIL` (here made 1 KiB), the rest counted, and the count said."""
    monkeypatch.setattr(ledger, "MAX_HELD_TAIL", 1024, raising=False)
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0], finish=False)
    with open(run_dir / "scores.jsonl", "ab") as records:
        records.write(b'{"id": "t:a=0"}\n' * 9_999 + b'{"id": "t:a=0", "cut sh')
    found = ledger.check_file(run_dir, "scores.jsonl", ledger.read_digests(run_dir).lines["scores.jsonl"])
    assert (found.written, found.tail_lines, found.tail_whole) == (4, 10_000, 9_999)
    assert len(found.tail) <= 1024 // ledger.LINE_COST
    said = "scores.jsonl: 9999 lines after line 4 not written by the run"  # whole lines; verify counts the last too
    assert "FAIL  scores.jsonl: 10000 lines after line 4 not written by the run" in audit(
        tmp_path, "verify", str(run_dir)).stdout.splitlines()
    done = audit(tmp_path, "show", str(run_dir))
    assert (done.returncode, done.stderr) == (EXIT["archive"], f"benchrun: error: in '{run_dir}': run {'5' * 12}: "
                                                               f"{said}, so what it says cannot be trusted; "
                                                               f"benchrun-audit verify {run_dir} says what changed\n")
    with pytest.raises(ArchiveError, match="9999 lines after line 4 not written by the run: the records are not"):
        resume_run(load_run(run_dir))


def test_a_records_sha256_of_millions_of_lines_that_are_no_digests_is_one_problem_past_the_first_ten(tmp_path):
    """records.sha256 of a killed run with lines that are no digests appended: a problem each, all held and all printed
    by verify (3,000,000 such lines: 1.1 GB, 4 minutes, 3 million lines printed). Now the first ten are listed and the
    rest counted in one."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0], finish=False)
    with open(run_dir / "records.sha256", "ab") as digests:
        digests.write(b"zz\n" * 100_000)
    problems = ledger.read_digests(run_dir).problems
    assert [problem.message for problem in problems] == [
        *(f"line {n} is not a digest line" for n in range(7, 17)), "99,990 more lines from line 17 on are at fault too"]
    shown = audit(tmp_path, "verify", str(run_dir))
    assert shown.returncode == EXIT["not_intact"]
    assert [line for line in shown.stdout.splitlines() if line.startswith("FAIL  records.sha256")][-2:] == [
        "FAIL  records.sha256: line 16 is not a digest line",
        "FAIL  records.sha256: 99,990 more lines from line 17 on are at fault too"]


# -- rescore --rejudge's overrides -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("overrides", "refused"), [
    (["judge.model=[1,2"], "in '--rejudge judge.model': line 1, column 5: YAML syntax error: expected ',' or ']', but got "
                         "'<stream end>' (while parsing a flow sequence at line 1, column 1)"),
    (["judge.model=!!python/name:os.system"], "in '--rejudge judge.model': line 1, column 1: YAML syntax error: could "
                                            "not determine a constructor for the tag "
                                            "'tag:yaml.org,2002:python/name:os.system'"),
    (["judge.model=&a [*a]"], "in '--rejudge judge.model': line 1, column 5: YAML aliases (*a) are not allowed in "
                            "benchmark files; write the values out"),
    (["judge.options.seed=1", "judge.options.seed.x=2"], "--rejudge judge.options.seed.x: judge.options.seed is 1, not a "
                                                    "mapping to set x in"),
])
def test_a_rejudge_override_that_is_no_value_is_one_line(tmp_path, overrides, refused):
    """`rescore --rejudge` overrides whose value YAML cannot read (a syntax error, a tag), an alias of itself (a list
    holding itself) and a key below a value that is no mapping: a yaml traceback, a RecursionError traceback (in the
    secrets check) and a TypeError traceback, exit 1. Now one line, exit 2, before anything is made."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    done = audit(tmp_path, "rescore", str(run_dir), "--rejudge", *overrides)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: {refused}\n")
    assert not (run_dir / "rescores").exists()


# -- a filter given empty --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("option", "refused"), [("--wrong", "no metric '' in run 555555555555 (metrics: closeness, "
                                                             "format_valid)"),
                                                 ("--task", "no task '' in run 555555555555 (tasks: t)")])
def test_show_of_a_metric_or_task_given_empty_names_none(tmp_path, option, refused):
    """`show RUN --wrong "$METRIC"` and `--task "$T"` with the variable unset: the run shown whole, all its tasks, exit
    0, as if no filter were given (compare --metric "" was refused). Now it names no metric or task: one line, exit 2."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    done = audit(tmp_path, "show", str(run_dir), option, "")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: {refused}\n")


@pytest.mark.parametrize("option", ["--model", "--task"])
def test_list_of_a_model_or_task_given_empty_lists_no_run(tmp_path, option):
    """`list --model "$M"` (or `--task`) with the variable unset listed every run, as if no filter were given. Now no
    run has that model or task."""
    synthetic_run(tmp_path / "outputs" / "run", [1.0, 0.0])
    done = audit(tmp_path, "list", "--json", option, "")
    assert (done.returncode, json.loads(done.stdout), done.stderr) == (EXIT["ok"], [], "")


# -- a killed run read as far as records.sha256 covers it ------------------------------------------------------------

def test_a_killed_run_is_read_only_as_far_as_its_digests_cover_it(tmp_path):
    """A run killed after writing its last answer's score lines and before their digests: `show`, `compare` and
    `export` counted those score lines (n 3), which a resume drops and grades again. Now every reader reads the lines
    records.sha256 covers (n 2), as verify checks them."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0, 0.0], finish=False)
    digests = (run_dir / "records.sha256").read_bytes().splitlines(keepends=True)
    (run_dir / "records.sha256").write_bytes(b"".join(digests[:-2]))  # the last answer's two score lines uncommitted
    run = load_run(run_dir).require_records()
    assert [(r.id, r.scorer) for r in run.scores()] == [("t:a=0", "format_valid"), ("t:a=0", "closeness"),
                                                        ("t:a=1", "format_valid"), ("t:a=1", "closeness")]
    rows = [json.loads(line) for line in audit(tmp_path, "export", str(run_dir), "--format", "jsonl").stdout.splitlines()]
    assert sorted({row["sample_id"] for row in rows}) == ["t:a=0", "t:a=1"]
    assert run.metric_values()[("t", "closeness")] == {"t:a=0": 1.0, "t:a=1": 0.0}


def test_a_finished_run_is_read_only_as_far_as_run_json_digests_it(tmp_path):
    """A run checked (`require_records`), then a score line appended to it (as by a resume begun after the check, or
    a merge reading a shard being resumed): `scores()` and `metric_values()` read it as the run's (closeness 0 became
    0.5 for sample t:a=1). Now a run that ended is read as far as run.json's digests count its lines."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    run = load_run(run_dir).require_records()
    last = (run_dir / "scores.jsonl").read_bytes().splitlines(keepends=True)[-1]
    with open(run_dir / "scores.jsonl", "ab") as scores:
        scores.write(last.replace(b'"closeness":0', b'"closeness":1'))
    assert len(list(run.scores())) == 4
    assert run.metric_values()[("t", "closeness")] == {"t:a=0": 1.0, "t:a=1": 0.0}


# -- a run id looked up where there is no archive --------------------------------------------------------------------

def test_a_run_id_looked_up_under_no_archive_says_there_is_none(tmp_path):
    """`show ID --root MISTYPED` (or `show ID` where there is no `outputs`): `no run directory or run id 'ID' under
    MISTYPED`, as if it had been looked in. Now the root is said to be no archive directory, as `list` says it."""
    synthetic_run(tmp_path / "outputs" / "run", [1.0])
    done = audit(tmp_path, "show", "555", "--root", "outptus")
    assert (done.returncode, done.stderr) == (EXIT["archive"], "benchrun: error: no run directory or run id '555' (no "
                                                               "archive directory 'outptus' to look it up in)\n")


# -- a run directory whose name is not UTF-8 -------------------------------------------------------------------------

def test_a_shard_in_a_directory_named_not_in_utf8_is_refused_before_a_merge_writes(tmp_path):
    """A shard run's directory renamed with latin-1 bytes by another tool (`sh\\xe9`): merge ended in a
    PydanticSerializationError traceback (exit 1) writing the merged run.json, which records the shard's path as text.
    Now it is refused in one line, as a run's own directory is, and nothing is made."""
    shard = synthetic_run(tmp_path / os.fsdecode(b"sh\xe9"), [1.0], run_id="c" * 12, shard=Shard.parse("1/1"))
    done = audit(tmp_path, "merge", str(shard), "--into", str(tmp_path / "merged"))
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: '{tmp_path}/sh\\xe9' is not UTF-8 text, and a run records the runs it is made from by "
        "their directories' paths as text (run.json): rename that directory; nothing was written\n"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [shard.name]


def test_compare_and_rescore_print_json_of_a_run_named_not_in_utf8(tmp_path):
    """`compare --json` and `rescore --json` of a run whose directory's name holds latin-1 bytes: a
    PydanticSerializationError traceback, exit 1 (the rescore written, then not said). Now their JSON escapes it as
    `list --json`, `show --json` and `verify --json` do."""
    run_dir = synthetic_run(tmp_path / os.fsdecode(b"lat\xe9"), [1.0, 0.0])
    (tmp_path / "mine.py").write_text("def closeness(response, sample):\n    return 1.0\n")
    other = synthetic_run(tmp_path / os.fsdecode(b"lat\xe9 2"), [1.0, 1.0], run_id="6" * 12)
    compared = audit(tmp_path, "compare", str(run_dir), str(other), "--json")  # a run is compared with another
    rescored = audit(tmp_path, "rescore", str(run_dir), "--scorers", "mine.py", "--only", "--json")
    assert (compared.returncode, compared.stderr, rescored.returncode, rescored.stderr) == (EXIT["ok"], "", EXIT["ok"], "")
    assert json.loads(compared.stdout)["baseline"]["path"] == str(run_dir)
    assert json.loads(rescored.stdout)["dir"] == str(run_dir / "rescores" / "001")


# -- two directories of one run id -----------------------------------------------------------------------------------

def test_show_wrong_of_two_directories_of_one_run_id_is_refused_not_shown_as_one(tmp_path):
    """`show A B --wrong closeness`, B a copy of A (`cp -r`) resumed or edited apart since: one column, B's values
    under the id A and B share, exit 0 (runs were made one by their id). Now refused in one line; one directory named
    twice is still one column."""
    first = synthetic_run(tmp_path / "outputs" / "a", [1.0, 0.0])
    copy = synthetic_run(tmp_path / "outputs" / "b", [0.0, 0.0])  # the copy, since graded otherwise: same run id
    done = audit(tmp_path, "show", str(first), str(copy), "--wrong", "closeness")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {first} and {copy} hold one run id, 555555555555 (a copy of a run, edited or "
        "resumed apart since: their records differ): --wrong shows each "
        "run in a column of its id; name one of them\n"))
    twice = audit(tmp_path, "show", str(first), str(first) + "/.", "--wrong", "closeness", "--json")
    assert (twice.returncode, [run["path"] for run in json.loads(twice.stdout)["runs"]]) == (EXIT["ok"], [str(first)])


def test_a_report_of_two_directories_of_one_run_id_keeps_each_ones_numbers(tmp_path):
    """`report A B`, B a copy of A (one run id) graded apart since (closeness 1.0 and 0.0): both columns headed
    `m · 555555555555` and both showing 0.000, A's numbers lost (the report keyed its columns by label). Now a label
    still repeated after the run id gets the directory too, and each column has its own run's numbers."""
    first = synthetic_run(tmp_path / "a", [1.0, 1.0])
    copy = synthetic_run(tmp_path / "b", [0.0, 0.0])
    done = audit(tmp_path, "report", str(first), str(copy), "--output", "r.html")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    page = (tmp_path / "r.html").read_text()
    headline = page[page.index('id="headline"'):page.index("</table>", page.index('id="headline"'))]
    assert [f"m · 555555555555 · {first}", f"m · 555555555555 · {copy}"] == [
        head.split("</th>")[0] for head in headline.split('<th colspan="3">')[1:]]
    cells = '<td class="num">{}</td><td class="num">2</td><td class="num">0</td>'
    assert (f'<td>closeness</td>{cells.format("1.000 ± 0.000")}{cells.format("0.000 ± 0.000")}</tr>') in headline


def test_an_export_of_two_directories_of_one_run_id_is_refused_and_of_one_named_twice_is_its_rows_once(tmp_path):
    """`export A B`, B a copy of A graded apart: rows of both under one run id, which no reader of the export can tell
    apart; `export A A/.`: every row twice. Now the first is refused in one line and the second gives its rows once."""
    first = synthetic_run(tmp_path / "a", [1.0, 1.0])
    copy = synthetic_run(tmp_path / "b", [0.0, 0.0])
    done = audit(tmp_path, "export", str(first), str(copy))
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {first} and {copy} hold one run id, 555555555555 (a copy of a run, edited or "
        "resumed apart since: their records differ): an export tells its "
        "rows' runs apart by run id; name one of them\n"))
    twice = audit(tmp_path, "export", str(first), f"{first}/.", "--format", "jsonl")
    assert (twice.returncode, len(twice.stdout.splitlines())) == (EXIT["ok"], 4)
