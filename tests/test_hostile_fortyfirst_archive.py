"""Hostile input, fortyfirst pass, the archive and audit side (pass 40's rules checked to hold together, then a fresh
pass): the cases it found bad, each with the rule it now obeys.

Pass 40's rules together:

1. a sync tool's conflict copy of a run's file that another tool is still bringing in
   (`responses.sync-conflict-20261207-101010-ABCDEFG.jsonl.Ab12Cd34.partial`, rclone's) or that a compressor
   compressed in place (`run_conflict-20261207-101010.json.gz`, `gzip -r`): verify said the run intact, the other
   version left unsaid. A conflict copy is known in each form a file of the run is (compressed, being copied in, as
   `core.filebytes.kept_elsewhere` knows them), and one whose bytes cannot be read as they are fails verify
   (`core.conflictnames`, `audit.conflictcopies`)
2. a run folder whose run.json the sync tool kept only as a conflict copy (`run (gpu2's conflicted copy
   2026-12-07).json`, no run.json): listed `no run.json, though it holds a run's ...`, the one version of its run.json
   there unnamed, as it is named when renamed (`run.json.orig`). Named, as the tool's conflict copy, and how it
   stands when compressed or still coming (`archive.arriving.part_copied`)

A fresh pass:

3. a run whose model's name or label holds what prints nothing yet changes what is seen (a right-to-left override,
   U+202E, that shows `gpt\u202e5-ledom` as `gptmodel-5`; a zero-width space): `report` wrote it as it was into the
   page, where pass 9 made `list`, `show`, `compare` and `verify` print such characters as their escapes. The report
   shows every text of the archive as the commands do, then HTML-escaped (`audit.report_text.html_text`)
4. `export --format csv` of a run with a text longer than a spreadsheet's cell holds (a label or an answer of 40,000
   characters, past Excel's 32,767) or with more rows than its sheet holds (1,048,576, the header's among them): written
   unsaid, and a spreadsheet opening it cuts the cell short or leaves the rows out, unsaid too. Written as it was, and
   said in a warning each, with `--format jsonl`, which keeps them whole (`audit.export`)
5. `compare` of a run and its retry (or a merge and one of its shards), either first: the answers the retry carried
   are the parent's records, agreeing because they are one, and compare paired them as two askings (delta 0, p 1)
   without a word. A run made of the other's answers is said to be, on its `vs` line (`audit.kinship`)
6. an archive on a NAS (a Synology's or a QNAP's shared folder, mounted over NFS or SMB): its recycle bin (`#recycle`,
   `@Recycle`) and snapshots (`#snapshot/GMT+00_.../`, `@Recently-Snapshot`) were walked, their runs listed as live
   ones, and a run named by its id refused as `the id of 4 run directories (copies of one run?)`; the index folder a
   Synology puts in every folder (`@eaDir/run.json/`, named for the file) listed `unreadable` inside the run. Passed
   over as Windows' recycle bin is (`archive.lookup.OS_KEPT`)
7. a run's folder Seafile keeps in step, written on two machines at once: its conflict copy (`responses (SFConflict
   ann@example.com 2026-12-07-10-10-10).jsonl`) holding another version was left unsaid, verify saying the run intact,
   where Syncthing's, Dropbox's and ownCloud's fail it. Known as theirs are (`core.conflictnames.CONFLICTS`)
8. `export --output rows.jsonl` with --format forgotten (CSV, the default, written into a file named JSONL),
   `--output rows.xlsx` (CSV in a file a spreadsheet then refuses to open as Excel's), `--format jsonl --output
   rows.CSV`, `report --output report.pdf`: written as asked, under a name that says another format (a CSV export
   named `.html` is opened by a browser as a page, its answers' markup and all). Refused, naming the format the name
   says and what to do, nothing written; a name of no known format's suffix (`rows.txt`) is written
   (`audit.outputname`)
"""
from __future__ import annotations

import json
import re
import shutil

import pytest

from benchrun.audit import export
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p41_archive import conflicts_said, report_of, with_copy

TWO_MACHINES = "(the run's folder was written on two machines at once)"

# -- pass 40's rules together ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "copy", "tool", "veiled"), [
    ("responses.jsonl", "responses.sync-conflict-20261207-101010-ABCDEFG.jsonl.Ab12Cd34.partial", "Syncthing",
     "rclone is still copying it here"),
    ("run.json", "run_conflict-20261207-101010.json.gz", "ownCloud", "gzip compressed it")])
def test_a_conflict_copy_compressed_or_still_coming_fails_verify(tmp_path, name, copy, tool, veiled):
    with_copy(tmp_path / "r", name, copy, b"\x1f\x8b")
    assert conflicts_said(tmp_path, "r") == ([
        f"FAIL  {copy}: {tool}'s conflict copy of {name} {TWO_MACHINES}, and {veiled}: a version of {name} no digest "
        "of the run covers, whose bytes were not compared (it may hold answers the run lacks): let it be whole, "
        "compare the two, and keep one"], 1)


def test_a_run_whose_run_json_is_left_only_as_a_conflict_copy_is_listed_naming_it(tmp_path):
    copy = "run (gpu2's conflicted copy 2026-12-07).json"
    run_dir = with_copy(tmp_path / "r", "run.json", copy)
    (run_dir / "run.json").unlink()
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [(entry["status"], entry["reason"]) for entry in listed] == [
        ("unreadable", f"in '{run_dir}': no run.json, though it holds a run's records.sha256, responses.jsonl, "
                       "seal.json: a copy of the run stopped part way, or still coming (run (gpu2's conflicted copy "
                       "2026-12-07).json is here: Dropbox (or Nextcloud)'s conflict copy of its run.json, the one "
                       "version left)")]


# -- a fresh pass ------------------------------------------------------------------------------------------------------

UNSEEN_NAME = "gpt\u202e5-ledom\u200b"
"""A model's name with a right-to-left override (shown as `gptmodel-5`) and a zero-width space."""


def test_the_report_shows_what_prints_nothing_in_a_name_as_its_escape(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0], model=UNSEEN_NAME, label=UNSEEN_NAME)
    page = report_of(run_dir, tmp_path / "report.html")
    assert [char for char in "\u202e\u200b" if char in page] == []
    assert re.findall("<h1>.*?</h1>", page) == ["<h1>benchrun report: synthetic · gpt\\u202e5-ledom\\u200b</h1>"]


WHOLE = "`--format jsonl` keeps every one whole"


def test_an_export_a_spreadsheet_cannot_hold_whole_is_said(tmp_path, monkeypatch):
    synthetic_run(tmp_path / "r", [1, 0], label="x" * 40_000)
    monkeypatch.setattr(export, "SHEET_ROWS", 3)
    done = audit(tmp_path, "export", "r", "--output", "out.csv")
    assert (done.returncode, done.stderr.splitlines()) == (0, [
        "benchrun: warning: export: 4 cells of more characters than a spreadsheet's cell holds (Excel's 32,767), the "
        f"first row 2's label (40,000): one opening the CSV cuts them short; {WHOLE}",
        "benchrun: warning: export: 5 rows with its header, more than a spreadsheet's sheet holds (Excel's 3): one "
        f"opening the CSV leaves the last 2 out; {WHOLE}"])
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 5
    assert audit(tmp_path, "export", "r", "--format", "jsonl").stderr == ""


CARRIED = "the answers carried are {} own records, not asked again, so they agree by being one"


def test_compare_says_a_run_is_made_of_the_others_answers(tmp_path):
    synthetic_run(tmp_path / "r", [1, 0])
    parent = {"run_id": "5" * 12, "path": str(tmp_path / "elsewhere"), "carried": 1, "asked": 1}
    synthetic_run(tmp_path / "r.retry1", [1, 1], run_id="6" * 12, parent=parent)
    said = [[line for line in audit(tmp_path, "compare", *pair).stdout.splitlines() if line.startswith("vs ")]
            for pair in (("r", "r.retry1"), ("r.retry1", "r"))]
    assert said == [
        ["vs m 666666666666 (r.retry1): a retry (1 answer carried) of the baseline, run 555555555555: "
         + CARRIED.format("the baseline's")],
        ["vs m 555555555555 (r): the baseline is a retry (1 answer carried) of it: " + CARRIED.format("its")]]


def test_the_folders_a_nas_keeps_are_passed_over(tmp_path):
    run_dir = synthetic_run(tmp_path / "runs" / "r", [1, 0])
    for kept in ("#recycle/r", "#snapshot/GMT+00_2026.12.07-10.00.00/r", "@Recycle/r", "@Recently-Snapshot/r"):
        shutil.copytree(run_dir, tmp_path / "runs" / kept)
    (run_dir / "@eaDir" / "run.json").mkdir(parents=True)
    listed = json.loads(audit(tmp_path, "list", str(tmp_path / "runs"), "--json").stdout)
    assert [entry["path"] for entry in listed] == [str(run_dir)]
    done = audit(tmp_path, "show", "5555", "--root", str(tmp_path / "runs"), "--json")
    assert (done.returncode, json.loads(done.stdout)["path"]) == (0, str(run_dir))


def test_a_seafile_conflict_copy_of_a_runs_file_fails_verify(tmp_path):
    copy = "responses (SFConflict ann@example.com 2026-12-07-10-10-10).jsonl"
    with_copy(tmp_path / "r", "responses.jsonl", copy, b'{"id": "t:a=2"}\n')
    assert conflicts_said(tmp_path, "r") == ([
        f"FAIL  {copy}: Seafile's conflict copy of responses.jsonl {TWO_MACHINES}: another version of responses.jsonl, "
        "which no digest of the run covers (it may hold answers the run lacks): compare the two, and keep one"], 1)


@pytest.mark.parametrize(("args", "said"), [
    (("--output", "rows.jsonl"), "the name 'rows.jsonl' says jsonl, and the export is csv (--format csv): give "
                                 "--format jsonl, or name the file .csv"),
    (("--output", "rows.xlsx"), "the name 'rows.xlsx' says Excel, and the export is csv (--format csv): it writes "
                                "csv or jsonl: name the file .csv"),
    (("--format", "jsonl", "--output", "rows.CSV"), "the name 'rows.CSV' says csv, and the export is jsonl (--format "
                                                    "jsonl): give --format csv, or name the file .jsonl"),
    (("--output", "report.pdf"), "the name 'report.pdf' says PDF, and the report is html: it writes html: name the "
                                 "file .html")])
def test_an_output_named_for_another_format_is_refused(tmp_path, args, said):
    synthetic_run(tmp_path / "r", [1, 0])
    done = audit(tmp_path, "report" if args[-1] == "report.pdf" else "export", "r", *args)
    assert (done.returncode, done.stderr, sorted(path.name for path in tmp_path.iterdir())) == (
        2, f"benchrun: error: --output: {said}\n", ["r"])


def test_a_run_whose_run_json_is_left_only_as_a_conflict_copy_still_coming_is_listed_so(tmp_path):
    copy = "run.sync-conflict-20261207-101010-ABCDEFG.json.gz"
    run_dir = with_copy(tmp_path / "r", "run.json", copy)
    (run_dir / "run.json").unlink()
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert [entry["reason"].split(" (", 1)[1] for entry in listed] == [
        f"{copy} is here: Syncthing's conflict copy of its run.json, the one version left, and gzip compressed it)"]
