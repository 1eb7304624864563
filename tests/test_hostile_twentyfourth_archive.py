"""Hostile input, twenty-fourth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases
it found bad, each with the rule it now obeys.

- `verify` of a run whose `rescores` is a regular file, or a symbolic link to a folder elsewhere: `intact`, saying
  nothing of it, where it says what stands in place of the run's other parts. Now a FAIL naming what is there
  (`audit.rescorecheck.check_rescores`); so is a file, a pipe or a dangling link named as a rescore's folder
  (`rescores/001`), which was `ok  unfinished ...: claims nothing` (`audit.rescorecheck.check_rescore`)
- `verify` of a run whose record files (or seal, or a rescore's files or folder) are symbolic links to files outside
  the run directory: `intact`, though its writer never makes one nor writes through one, and the directory no longer
  holds them (a copy keeps the link). Now each link is a FAIL in place of what passed of it (`audit.verify.held`);
  `merge` and `retry`, which refuse a run that does not verify, took such a run, checking it as verify did before
  (now `audit.verify.check_run`, verify's own)
- a run.json, seal.json, summary.json or rescore.json giving a key twice in one object (`"model": "evil",
  "model": "m"`), sealed over: read as its last (`m`), verify intact, where a reader keeping the first reads `evil`.
  Now unreadable, naming the key, as a model's answer or a server's body giving a key twice is
  (`archive.reader.archived_model`); and a record line of a run that did not end, rewritten with its digest in
  records.sha256 (`{"closeness": 0, "closeness": 1}`: shown as 1, verify said nothing of it), reads two ways: a
  problem of the line, as resume and every reader find it (`archive.repair._once`)
- `show RUN --wrong METRIC` of a run whose metric's name holds terminal escapes (`m\x1b]0;PWN\x07`, a hand-built or
  older run's): the table's title printed the name as it is, the terminal's title set. Now shown as every name is
  (`audit.show.wrong_table`)
- `merge SHARDS --into $'x\ny'` (and `retry --into`): the run made in `x<newline>y/`, `run directory: .../x` and `y`
  printed as two lines, where `outputs` and `hydra.run.dir` with a control character are refused before anything is
  made. Now refused as they are (`audit.arguments.run_dir`, `core.settings.a_directory`)
- `cache --cache-dir $'c\nx'` (or XDG_CACHE_HOME so named): `response cache: .../c` and `x/responses.sqlite3, 0
  entries` printed as two lines, where a path is printed on one line in every command. Now as every path is
  (`audit.cache.report`, `audit.cache.removed`)
- `report RUN --output $'r\x1b]0;PWN\x07\n.html'`: the path it wrote printed as it is, escapes and all (the
  terminal's title set, two lines); and `rescore` of a run moved to a folder with a newline in its name printed
  `rescore 001 written to .../x` and the rest as two lines. Now both on one line, shown (`audit.report.main`,
  `audit.rescored.print_rescore`)
- `verify` of a run that ended whose run.lock is a symbolic link (or a named pipe): `intact`, while rescore, resume
  and retry refuse it (`a symbolic link (to ...), where the run's own file belongs`). Now a FAIL, as of a run that
  says `running` (`audit.verify.check_lock`)
- a run.json (or seal, summary, record line, manifest) whose schema_version is 0, `"1"` or null: `schema version 0,
  which this benchrun does not know (written by a newer benchrun? read it with that one)`, sending the reader to a
  benchrun that does not exist. Now a newer benchrun's only when a larger whole number; else `which no benchrun
  writes (this one writes 1): the file was edited` (`core.layout.unknown_version`)

What held is in the pass's note.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchrun.archive.writer import write_atomic
from benchrun.core.errors import EXIT
from benchrun.core.records import FileDigest, Seal
from tests.helpers.archives import reseal, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import run_in_process
from tests.helpers.p24_archive import named_run, rewrite_line


def _failed(cwd: Path, run_dir: Path) -> list[str]:
    """The FAIL lines and the last line `verify RUN` printed; it must have said the run is not intact."""
    done = audit(cwd, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"], done.stdout
    return [line for line in done.stdout.splitlines() if line.startswith(("FAIL", "NOT"))]


LINKED = "in place of the run's own file, which its writer never makes: the run directory no longer holds what it " \
         "wrote there"


# -- rescores that is no folder ----------------------------------------------------------------------------------------

def test_verify_says_a_rescores_that_is_a_file_or_a_link(tmp_path):
    """`rescores` a regular file, or a link to a folder elsewhere: verify passed over it and said `intact`."""
    as_file, as_link = synthetic_run(tmp_path / "f", [1, 0]), synthetic_run(tmp_path / "l", [1, 0])
    (as_file / "rescores").write_text("x")
    (tmp_path / "elsewhere").mkdir()
    (as_link / "rescores").symlink_to("../elsewhere")
    assert _failed(tmp_path, as_file) == [
        "FAIL  rescores: a file in place of the run's own folder, which only a rescore makes: no rescore of the run is "
        "there", "NOT intact: 1 problem"]
    assert _failed(tmp_path, as_link) == [
        "FAIL  rescores: a symbolic link (to ../elsewhere) in place of the run's own folder: the run directory no "
        "longer holds its rescores; none is checked", "NOT intact: 1 problem"]


def test_verify_says_a_rescore_folder_that_is_a_file_a_pipe_or_a_dangling_link(tmp_path):
    """rescores/001 a regular file, 002 a named pipe, 003 a link to nowhere: each was `ok  unfinished (no
    rescore.json: it was stopped): claims nothing`, and the run intact."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    (run_dir / "rescores").mkdir()
    (run_dir / "rescores" / "001").write_text("x")
    os.mkfifo(run_dir / "rescores" / "002")
    (run_dir / "rescores" / "003").symlink_to("nowhere")
    said = "in place of a rescore's folder, which only a rescore makes"
    assert _failed(tmp_path, run_dir) == [
        f"FAIL  rescores/001: a file {said}", f"FAIL  rescores/002: a named pipe (FIFO) {said}",
        f"FAIL  rescores/003: a symbolic link (to nowhere) {said}", "NOT intact: 3 problems"]


# -- a run's own files as links ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["responses.jsonl", "scores.jsonl", "seal.json", "run.json", "manifest.json"])
def test_verify_fails_a_run_whose_file_is_a_link_out_of_its_directory(tmp_path, name):
    """A finished run's file moved out of its directory and linked back (digests all matching): `intact`."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    (run_dir / name).rename(tmp_path / name)
    (run_dir / name).symlink_to(tmp_path / name)
    assert _failed(tmp_path, run_dir) == [f"FAIL  {name}: a symbolic link (to {tmp_path / name}) {LINKED}",
                                          "NOT intact: 1 problem"]


def test_verify_fails_a_killed_run_whose_records_are_links(tmp_path):
    """A run that did not end (its lines checked against records.sha256): its responses linked from elsewhere."""
    run_dir = synthetic_run(tmp_path / "k", [1, 0], finish=False)
    (run_dir / "responses.jsonl").rename(tmp_path / "kept.jsonl")
    (run_dir / "responses.jsonl").symlink_to("../kept.jsonl")
    assert f"FAIL  responses.jsonl: a symbolic link (to ../kept.jsonl) {LINKED}" in _failed(tmp_path, run_dir)


@pytest.mark.slow
def test_verify_fails_a_rescore_whose_folder_or_file_is_a_link(tmp_path):
    """rescores/001 (or its scores.jsonl) moved out and linked back: its digests matched, and verify said `ok`."""
    run_dir = run_in_process(tmp_path, "r")
    for _ in range(2):
        assert audit(tmp_path, "rescore", str(run_dir)).returncode == EXIT["ok"]
    (run_dir / "rescores" / "001").rename(tmp_path / "001")
    (run_dir / "rescores" / "001").symlink_to(tmp_path / "001")
    scores = run_dir / "rescores" / "002" / "scores.jsonl"
    scores.rename(tmp_path / "scores.jsonl")
    scores.symlink_to(tmp_path / "scores.jsonl")
    assert _failed(tmp_path, run_dir) == [
        f"FAIL  rescores/001: a symbolic link (to {tmp_path / '001'}) {LINKED}",
        f"FAIL  rescores/002/scores.jsonl: a symbolic link (to {tmp_path / 'scores.jsonl'}) {LINKED}",
        "NOT intact: 2 problems"]


# -- a key given twice in a sealed JSON file ---------------------------------------------------------------------------

def _twice(path: Path, key: str, value: str) -> None:
    """`path`'s JSON text with `"key": value` put before its first `"key"` (two of them in one object)."""
    text = path.read_text()
    path.write_text(text.replace(f'"{key}":', f'"{key}": {value}, "{key}":', 1))


def _sealed(run_dir: Path) -> None:
    """The run sealed again over its run.json as it is (bytes and all), as its writer would have."""
    info = json.loads((run_dir / "run.json").read_text())
    seal = Seal.model_construct(run_id=info["run_id"], sealed_at=info["ended_at"],
                                run_json=FileDigest.of((run_dir / "run.json").read_bytes()))
    write_atomic(run_dir / "seal.json", seal.model_dump_json(indent=2).encode() + b"\n")


TWICE = "is given twice in one object (which one is meant, JSON does not say); give each key once"


def test_a_run_json_giving_a_key_twice_is_unreadable(tmp_path):
    """run.json with `"model": "evil", "model": "m"`, sealed over: read as model m (Python keeps the last), verify
    said intact, while a reader keeping the first (as some do) reads model evil."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    _twice(run_dir / "run.json", "model", '"evil"')
    _sealed(run_dir)
    for command in ("show", "verify", "export"):
        done = audit(tmp_path, command, str(run_dir))
        assert (done.returncode, done.stderr) == (EXIT["archive"], (
            f"benchrun: error: in '{run_dir / 'run.json'}': unreadable: the key \"model\" {TWICE}\n"))


def test_a_summary_json_giving_a_key_twice_is_unreadable(tmp_path):
    """summary.json with a metric's mean given twice, digested and sealed again: its last shown, verify intact."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    _twice(run_dir / "summary.json", "mean", "0.99")
    reseal(run_dir, "summary.json")
    done = audit(tmp_path, "show", str(run_dir))
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir / 'summary.json'}': unreadable: the key \"mean\" {TWICE}\n"))
    assert f"FAIL  summary.json: unreadable: the key \"mean\" {TWICE}\n" in audit(tmp_path, "verify", str(run_dir)).stdout


@pytest.mark.slow
def test_a_rescore_json_giving_a_key_twice_is_unreadable_to_verify(tmp_path):
    """rescore.json's run_id given twice (another run's, then this one's): verify checked it as this run's."""
    run_dir = run_in_process(tmp_path, "r")
    assert audit(tmp_path, "rescore", str(run_dir)).returncode == EXIT["ok"]
    _twice(run_dir / "rescores" / "001" / "rescore.json", "run_id", '"000000000000"')
    assert _failed(tmp_path, run_dir) == [
        f"FAIL  rescores/001/rescore.json: unreadable: the key \"run_id\" {TWICE}", "NOT intact: 1 problem"]


# -- a metric's name with terminal escapes in --wrong's title ----------------------------------------------------------

def test_show_wrong_prints_a_metrics_name_with_its_escapes_shown(tmp_path):
    """The title `1 sample below 1 on NAME` printed the archived name as it is: ESC ] 0 ; ... BEL set the title."""
    name = "m\x1b]0;PWN\x07\x1b[2J"
    run_dir = named_run(tmp_path / "r", metric=name)
    done = audit(tmp_path, "show", str(run_dir), "--wrong", name)
    assert done.returncode == EXIT["ok"], done.stderr
    assert done.stdout.splitlines()[0].rstrip() == "1 sample below 1 on m\\x1b]0;PWN\\x07\\x1b[2J"
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout


# -- a new run's directory with a line break ---------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["merge", "retry"])
def test_a_new_run_directory_with_a_control_character_is_refused(tmp_path, command):
    """`--into $'x\\ny'`: the merged run was made in `x<newline>y` and its directory printed as two lines."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    done = audit(tmp_path, command, str(run_dir), "--into", "x\ny")
    assert (done.returncode, done.stderr.splitlines()[-1]) == (EXIT["usage"], (
        f"benchrun-audit {command}: error: argument --into: '\\n' at character 2, a control character, which a run "
        "directory's path printed on the console and in the command that finishes a run (benchrun-audit resume PATH) "
        "cannot hold: name a directory without one"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


# -- a cache folder's path with a line break ---------------------------------------------------------------------------

def test_cache_prints_its_folders_path_on_one_line(tmp_path):
    """`response cache: PATH, N entries` was cut in two by a newline in PATH (a line the command did not write)."""
    folder = tmp_path / "c\nok  x"
    folder.mkdir()
    done = audit(tmp_path, "cache", "--cache-dir", str(folder))
    assert (done.returncode, done.stdout) == (EXIT["ok"], (
        f"response cache: {tmp_path}/c\\nok  x/responses.sqlite3, 0 entries, 0 B\n"))


# -- a written file's path printed as it is ----------------------------------------------------------------------------

def test_report_prints_the_path_it_wrote_on_one_line_with_escapes_shown(tmp_path):
    """The report's path was print()ed as given: ESC ] 0 ; ... BEL set the terminal's title, a newline cut it in two."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    done = audit(tmp_path, "report", str(run_dir), "--output", "r\x1b]0;PWN\x07\n.html")
    assert (done.returncode, done.stdout) == (EXIT["ok"], "r\\x1b]0;PWN\\x07\\n.html\n")
    assert (tmp_path / "r\x1b]0;PWN\x07\n.html").is_file()


@pytest.mark.slow
def test_rescore_prints_where_it_wrote_on_one_line(tmp_path):
    """A run moved to `x<newline>ok  y`: `rescore 001 written to .../x` and `ok  y/rescores/001` were two lines."""
    run_dir = run_in_process(tmp_path, "r").rename(tmp_path / "x\nok  y")
    done = audit(tmp_path, "rescore", str(run_dir))
    assert done.returncode == EXIT["ok"], done.stderr
    assert f"rescore 001 written to {tmp_path}/x\\nok  y/rescores/001\n" in done.stdout


# -- merge checks its shards as verify does ----------------------------------------------------------------------------

@pytest.mark.slow
def test_merge_refuses_a_shard_whose_records_are_links(tmp_path):
    """A shard whose scores.jsonl is a link to a file outside it was merged, though verify says it is not intact."""
    first, second = (run_in_process(tmp_path, f"s{i}", f"shard={i}/2") for i in (1, 2))
    (first / "scores.jsonl").rename(tmp_path / "kept.jsonl")
    (first / "scores.jsonl").symlink_to(tmp_path / "kept.jsonl")
    shard = json.loads((first / "run.json").read_text())["run_id"]
    done = audit(tmp_path, "merge", str(first), str(second), "--into", str(tmp_path / "m"))
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{first}': run {shard} (shard 1/2) does not verify: scores.jsonl: a symbolic link (to "
        f"{tmp_path / 'kept.jsonl'}) {LINKED}\n"))
    assert not (tmp_path / "m").exists()


# -- an ended run's run.lock that no writer can hold -------------------------------------------------------------------

def test_verify_fails_an_ended_run_whose_lock_no_writer_can_hold(tmp_path):
    """run.lock a link (or a pipe) beside a sealed run: verify said intact, every writer refused the run."""
    linked, piped = synthetic_run(tmp_path / "l", [1, 0]), synthetic_run(tmp_path / "p", [1, 0])
    (linked / "run.lock").unlink()
    (linked / "run.lock").symlink_to("../elsewhere")
    (piped / "run.lock").unlink()
    os.mkfifo(piped / "run.lock")
    said = ("in its place, which no writer can hold: rescore, resume and retry refuse the run until the file itself (or "
            "none) is there")
    assert _failed(tmp_path, linked) == [f"FAIL  run.lock: a symbolic link (to ../elsewhere) {said}",
                                         "NOT intact: 1 problem"]
    assert _failed(tmp_path, piped) == [f"FAIL  run.lock: a named pipe (FIFO) {said}", "NOT intact: 1 problem"]


# -- a schema version no benchrun writes -------------------------------------------------------------------------------

@pytest.mark.parametrize(("version", "shown"), [(0, "0"), ("1", "'1'"), (None, "None")])
def test_a_schema_version_no_benchrun_writes_is_not_said_to_be_a_newer_ones(tmp_path, version, shown):
    """An older number, text or null was said to be `written by a newer benchrun? read it with that one`."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "schema_version": version}))
    done = audit(tmp_path, "show", str(run_dir))
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir / 'run.json'}': unreadable: schema_version: schema version {shown}, which no "
        "benchrun writes (this one writes 1): the file was edited\n"))


def test_a_record_line_giving_a_key_twice_is_a_problem_of_the_line(tmp_path):
    """A killed run's score line rewritten to `{"closeness": 0, "closeness": 1}`, its digest with it (no seal covers
    records.sha256 yet): show said a mean of 1/2 (Python keeps the last), verify said nothing of the line."""
    run_dir = synthetic_run(tmp_path / "k", [1, 0], finish=False)
    rewrite_line(run_dir, "scores.jsonl", 2, lambda line: line.replace(b'{"closeness":1}', b'{"closeness":0,"closeness":1}'))
    said = f"scores.jsonl: line 2 reads two ways: the key \"closeness\" {TWICE}"
    assert f"FAIL  {said}" in _failed(tmp_path, run_dir)
    done = audit(tmp_path, "show", str(run_dir))
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': run 555555555555: {said}, so what it says cannot be trusted; benchrun-audit "
        f"verify {run_dir} says what changed\n"))
