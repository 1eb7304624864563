"""Hostile input, ninth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it found
bad, each with the rule it now obeys.

- a folder named with digits that are not ASCII (`rescores/²`, a sweep's `²_x`; str.isdigit() takes them, int()
  refuses `²` and reads `٣` as 3): `rescore` of the run, and `show`, `export`, `compare` or `report` of the sweep (and
  the sweep's own summary as it ends), a ValueError traceback; now a name of the archive's numbers something only in
  ASCII digits (`core.layout.number_in`), and any other folder is passed over
- a seal.json copied from another run: `verify` said `run.json: changed since the run was sealed` (run.json was as
  written), and the readers said the same, or (trust did not look at the seal's run id) nothing when the other run's
  seal held this run's digest; now the seal of another run is said to be that, `seal.json: the seal of run
  '666666666666', not of this run (555555555555): nothing covers run.json`, one verdict for verify and every reader
- `export --output` or `report --output` naming a file `run.json` (or any name of a run's own files, or `sweep.json`)
  in a folder that held no run: written, so `list` then showed an unreadable run there (and a run could no longer
  start in it); naming the run's own log, `benchrun.log`, Hydra's copies in `.hydra/`, its `rescores` folder or a
  file directly in it, or a sweep's `multirun.yaml`: the archived file replaced, or a rescore's number taken. Now
  refused in one line, nothing written; a new name beside the run's files is still written
- a model's name, a label, a metric's name or an answer holding characters that print nothing yet change what is seen
  (a right-to-left override, U+202E, that shows `gpt\u202e5-ledom` as `gptmodel-5`; a zero-width space that makes two
  names look one; a line separator): `list`, `show`, `compare` and `verify` printed them as they were (only control
  characters were made visible); now every format character (Unicode's Cf) and line or paragraph separator is shown
  as its escape, `gpt\u202e5-ledom`, as control characters are
- a rescore whose rescore.json was edited to digest none of its files (`"files": {}`), its scores.jsonl and
  summary.json then edited at will: `verify` said nothing of that rescore, and called the run intact; now a finished
  rescore must digest the scores.jsonl and summary.json every rescore writes, else `rescores/001/rescore.json: holds
  no digest of scores.jsonl or summary.json, which every rescore writes: nothing covers what they say`
- a run.json whose `started_at` (or `ended_at`, or a seal's `sealed_at`) is not a time (`garbage`, edited or
  damaged, JSON of the right shape): `list` a ValueError traceback (it sorts by the time), `list --since` too; now
  the record model takes a time only as benchrun writes them (ISO 8601), so such a run.json is `unreadable` in `list`
  and one line for every command, as any run.json of the wrong shape is
- a run.json of the right JSON types whose free-form parts have shapes no run writes (an unfinished run's is covered
  by no seal, and `list` reads none): a model digest that is a number or a list (`list` an AttributeError
  traceback), a merged run of no shards or of a shard `x` (`list` an IndexError), `identity.hosts` that is not a
  list of servers, `judge.identity` or `environment.packages` that is not a mapping (`show`, `compare` and `report`
  tracebacks); now each is refused where run.json is read (the run `unreadable`, one line), and a digest that is not
  a string is shown as its JSON text (`@5`), compared as what it is
- a manifest.json of valid JSON whose samples or tasks are not of a manifest's shape (a sample that is a number, one
  without its id, values that are a list; a task that is a number or has no name), with run.json's manifest id made
  to match (an unfinished run's run.json is covered by no seal): `export` and `show --wrong` TypeError and KeyError
  tracebacks; now the manifest's plain-JSON reader (`Run.manifest_data`) checks the shapes its readers take and
  refuses the file in one line naming the first sample or task at fault
- a response line whose wall time is none a run measures (`"seconds": 1e308`, in an unfinished run whose line
  digest was rewritten to match): `show`, `compare` and `report` an OverflowError traceback (the speed's figures);
  now a record's wall time (`seconds`, `host_seconds`, a failed attempt's, a judge call's) is refused where the line
  is read unless it is from 0 to 1e9 s, as a score line's value beyond what a scorer gives is
- a run resumed and killed again (or any run that did not end) with a summary.json in it, the one its earlier session
  wrote as it was interrupted (a resume leaves it until it writes its own) or one planted: `show`, `list` and
  `report` gave its numbers as the run's (n=2 where the records held 5 graded answers), though run.json's digests
  did not name it; now summary.json is read only when run.json's final digests name it, and a run that did not end
  has its metrics and speed tallied from its records
- a run edited since it was written, read through the Python API: `benchrun.audit.metric_rows(run)` and
  `benchrun.audit.samples(run)` gave the edited numbers (a score line's 0 made 1), while `Run.to_pandas()`,
  `export_rows`, `compare_runs` and `write_report` refused it; now every function of the API that reads a number
  checks the run first, as the commands do (`Run.require_records`), and refuses in the same one line
- a response cache of another schema version (a newer benchrun's): refused, in one line advising `benchrun-audit
  cache --clear`, which refused it in the same line (no way out but finding the file); and opening it wrote this
  version's tables into it first. Now nothing is written into a database before its version is read, and `--clear`
  removes a cache of another version (its database and SQLite's files beside it), saying so
- an SQLite file of another program's as the response cache (without a table named as the cache's): benchrun's
  tables were written into it and it was listed as an empty cache, exit 0 (a run then kept its answers in it); now
  refused in one line naming its tables, nothing written

What held, tried and found as the rules say: `merge` of one shard twice (or through a link to it), of shards of
different manifests, of a shard without its seal, `--into` an existing run or the shards' sweep; a `--partial` merge
then verified; `resume` of a killed run whose responses.jsonl ends in a run of NULs or a half line (cut quietly, asked
again) or lost its last newline (refused, `--force` drops it); `verify` of a record line deleted with records.sha256
edited to match, of counts or summary.json edited (run.json's digests and the seal name them); a sweep.json listing
jobs elsewhere (no reader takes a path from it); `rescore` with a scorer that raises at import (one line), returns
text or a metric name of 300 characters (each sample's scorer error), or is gone (one line); `show`, `compare`,
`export` and `report` of runs of no samples; the HTML report (every text from outside escaped); a cache database that
is not SQLite or is cut short (one line).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from benchrun.archive.sweep import write_sweep_summary
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from tests.helpers.archives import synthetic_run
from tests.helpers.sqlitefile import rows

CLOSENESS = "def closeness(response, reference):\n    return 1\n"


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- names that number something ---------------------------------------------------------------------------------

@pytest.mark.parametrize("planted", ["²", "٣", "007x"])
def test_a_rescores_folder_not_named_in_ascii_digits_numbers_nothing(tmp_path, planted):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    (run_dir / "rescores" / planted).mkdir(parents=True)
    (tmp_path / "scorers.py").write_text(CLOSENESS)
    result = audit(tmp_path, "rescore", str(run_dir), "--scorers", "scorers.py", "--only")
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert sorted(p.name for p in (run_dir / "rescores").iterdir()) == sorted(["001", planted])
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["not_intact"]  # what no rescore made in rescores/ is said (pass 38)
    assert "ok    rescores/001/scores.jsonl: 6 lines as written" in verified.stdout
    assert [line for line in verified.stdout.splitlines() if planted in line] == [
        f"FAIL  rescores/{planted}: a folder that no rescore made: a rescore's folder is named by its number (001, "
        "002, ...); put there since (a copy a file manager made?), nothing in it is checked as the run's"]


def _sweep(tmp_path: Path) -> Path:
    sweep = tmp_path / "sweep"
    synthetic_run(sweep / "0_a", [1, 0], run_id="a" * 12, label="a")
    synthetic_run(sweep / "1_b", [1, 1], run_id="b" * 12, label="b")
    write_sweep_summary(sweep)
    return sweep


@pytest.mark.parametrize("command", [("export",), ("show", "--wrong", "closeness"), ("compare",),
                                     ("report", "--output", "r.html")])
def test_a_sweep_folder_not_named_in_ascii_digits_is_ordered_after_the_jobs(tmp_path, command):
    sweep = _sweep(tmp_path)
    (sweep / "²_x").mkdir()
    result = audit(tmp_path, command[0], str(sweep), *command[1:])
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")


def test_the_sweep_summary_passes_over_a_folder_not_named_in_ascii_digits(tmp_path):
    sweep = _sweep(tmp_path)
    (sweep / "²_x").mkdir()
    summary = write_sweep_summary(sweep)
    assert [(job.dir, job.status) for job in summary.jobs] == [("0_a", "completed"), ("1_b", "completed"),
                                                               ("²_x", "missing")]


# -- the seal ----------------------------------------------------------------------------------------------------

def test_the_seal_of_another_run_is_said_to_be_that(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    other = synthetic_run(tmp_path / "other", [1, 0, 1], run_id="6" * 12)
    shutil.copy(other / "seal.json", run_dir / "seal.json")
    said = "seal.json: the seal of run '666666666666', not of this run (555555555555): nothing covers run.json"
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["not_intact"]
    assert [line for line in verified.stdout.splitlines() if line.startswith("FAIL")] == [f"FAIL  {said}"]
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stdout, shown.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{run_dir}': run 555555555555: {said}, so what it says cannot be trusted; "
        f"benchrun-audit verify {run_dir} says what changed\n"))


def test_a_seal_of_another_run_that_holds_this_runs_digest_is_not_trusted(tmp_path):
    """A seal with this run.json's digest but another run's id (a hand that rewrote the digest, not the id): readers
    looked at the digest only, verify at both."""
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    seal = run_dir / "seal.json"
    seal.write_text(seal.read_text().replace('"555555555555"', '"666666666666"'))
    exported = audit(tmp_path, "export", str(run_dir))
    assert (exported.returncode, exported.stdout) == (EXIT["archive"], "")
    assert "seal.json: the seal of run '666666666666', not of this run (555555555555)" in exported.stderr


# -- times ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["started_at", "ended_at"])
def test_a_run_json_whose_time_is_not_a_time_is_unreadable(tmp_path, field):
    run_dir = synthetic_run(tmp_path / "runs" / "a", [1, 0, 1])
    synthetic_run(tmp_path / "runs" / "b", [1, 1], run_id="6" * 12)
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, field: "garbage"}))
    why = (f"in '{run_dir / 'run.json'}': unreadable: {field}: not a time as benchrun writes them "
           "(ISO 8601): 'garbage'")
    for args in ([], ["--since", "2026-01-01"]):
        listed = audit(tmp_path, "list", str(tmp_path / "runs"), "--json", *args)
        assert (listed.returncode, listed.stderr) == (EXIT["ok"], "")
        assert [(run.get("run_id"), run["status"], run.get("reason")) for run in json.loads(listed.stdout)] == (
            [("6" * 12, "completed", None)] + ([] if args else [(None, "unreadable", why)]))
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stdout, shown.stderr) == (EXIT["archive"], "", f"benchrun: error: {why}\n")


# -- run.json's free-form parts ------------------------------------------------------------------------------------

SHAPES = {  # what run.json was edited to hold -> why it is unreadable
    "identity.hosts a number": ({"identity": {"hosts": 7}}, "identity: hosts: not a list of servers' "
                                                            "identities, each a mapping with its URL as `host`"),
    "a host without its URL": ({"identity": {"hosts": [{"digest": "abc"}]}},
                               "identity: hosts: not a list of servers' identities, each a mapping with "
                               "its URL as `host`"),
    "judge.identity a number": ({"judge": {"identity": 5, "runner": {}}},
                                "judge: identity: not a mapping"),
    "environment.packages a number": ({"environment": {"packages": 5}},
                                      "environment: packages: not a mapping"),
    "a merge of no shards": ({"merged": {"shards": [], "merged_at": "2026-12-01T08:00:00+00:00"}},
                             "merged.shards: a merged run is made of at least one shard run"),
    "a merged shard x": ({"merged": {"shards": [{"run_id": "a", "path": "p", "shard": "x", "status": "completed",
                                                 "responses": 1}], "merged_at": "2026-12-01T08:00:00+00:00"}},
                         "merged.shards.0.shard: 'x' is not i/n (the i-th of n parts, e.g. 1/8)"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_run_json_of_a_shape_no_run_writes_is_unreadable(tmp_path, shape):
    patch, why = SHAPES[shape]
    run_dir = synthetic_run(tmp_path / "runs" / "a", [1, 0, 1], finish=False)
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, **patch}))
    said = f"in '{run_dir / 'run.json'}': unreadable: {why}"
    listed = audit(tmp_path, "list", str(tmp_path / "runs"), "--json")
    assert (listed.returncode, listed.stderr) == (EXIT["ok"], "")
    assert [(run["status"], run["reason"]) for run in json.loads(listed.stdout)] == [("unreadable", said)]
    for command in (("show",), ("compare", str(run_dir)), ("report", "--output", "r.html")):
        result = audit(tmp_path, command[0], str(run_dir), *command[1:])
        assert (result.returncode, result.stdout, result.stderr) == (EXIT["archive"], "", f"benchrun: error: {said}\n")


@pytest.mark.parametrize(("digest", "shown"), [(5, "5"), (["a"], '["a"]')])
def test_a_model_digest_that_is_not_a_string_is_shown_as_its_json(tmp_path, digest, shown):
    run_dir = synthetic_run(tmp_path / "runs" / "a", [1, 0, 1], finish=False)
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "identity": {"digest": digest}}))
    listed = audit(tmp_path, "list", str(tmp_path / "runs"))
    assert (listed.returncode, listed.stderr) == (EXIT["ok"], "")
    assert f"m @{shown}" in listed.stdout
    assert [run["digest"] for run in json.loads(audit(tmp_path, "list", str(tmp_path / "runs"), "--json").stdout)] \
        == [shown]


# -- manifest.json's shape -------------------------------------------------------------------------------------

MANIFESTS = {  # how the manifest was edited -> what is said of it
    "a sample that is a number": (lambda m: m["samples"].insert(0, 5), "samples[0] is not a sample (a mapping with "
                                                                       "its id, task, prompt and values)"),
    "a sample without its id": (lambda m: m["samples"][1].pop("id"), "samples[1] is not a sample (a mapping with its "
                                                                     "id, task, prompt and values)"),
    "values that are a list": (lambda m: m["samples"][2].update(values=[1]), "samples[2] is not a sample (a mapping "
                                                                             "with its id, task, prompt and values)"),
    "a task that is a number": (lambda m: m["tasks"].insert(0, 5), "tasks[0] is not a task (a mapping with its name, "
                                                                   "and its few-shot turns as a list)"),
    "a task without its name": (lambda m: m["tasks"][0].pop("name"), "tasks[0] is not a task (a mapping with its "
                                                                     "name, and its few-shot turns as a list)"),
    "tasks as a mapping": (lambda m: m.update(tasks={"t": {}}), "no samples list and tasks list"),
}


@pytest.mark.parametrize("command", [("export", "--text"), ("show", "--wrong", "closeness")])
@pytest.mark.parametrize("edit", list(MANIFESTS))
def test_a_manifest_of_another_shape_is_one_line(tmp_path, edit, command):
    change, why = MANIFESTS[edit]
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1], finish=False)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    change(manifest)
    raw = json.dumps(manifest).encode()
    (run_dir / "manifest.json").write_bytes(raw)
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "manifest_id": hashlib.sha256(raw).hexdigest()}))
    result = audit(tmp_path, command[0], str(run_dir), *command[1:])
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{run_dir / 'manifest.json'}': not a manifest: {why}\n"))


# -- summary.json ------------------------------------------------------------------------------------------------

def test_a_summary_that_run_json_does_not_name_is_not_the_runs(tmp_path):
    run_dir = synthetic_run(tmp_path / "runs" / "a", [1, 0, 1], finish=False)
    other = synthetic_run(tmp_path / "other", [1, 1, 1], run_id="6" * 12)
    shutil.copy(other / "summary.json", run_dir / "summary.json")
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stderr) == (EXIT["ok"], "")
    rows = [[cell.strip() for cell in line.split("│")[2:5]] for line in shown.stdout.splitlines() if "closeness" in line]
    assert rows == [["closeness", "3", "0.667"]]
    listed = audit(tmp_path, "list", str(tmp_path / "runs"), "--json")
    assert [(run["run_id"], run["metrics"]) for run in json.loads(listed.stdout)] == [("5" * 12, [])]


# -- a record's wall time ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("seconds", [1e308, -5])
@pytest.mark.parametrize("command", [("show",), ("compare", "other"), ("report", "--output", "r.html")])
def test_a_wall_time_no_run_measures_is_refused_where_it_is_read(tmp_path, seconds, command):
    from benchrun.archive.ledger import digest_lines

    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1], finish=False)
    synthetic_run(tmp_path / "other", [1, 1, 1], run_id="6" * 12)
    lines = (run_dir / "responses.jsonl").read_bytes().splitlines(keepends=True)
    lines[0] = (json.dumps({**json.loads(lines[0]), "seconds": seconds}) + "\n").encode()
    (run_dir / "responses.jsonl").write_bytes(b"".join(lines))
    digests = (run_dir / "records.sha256").read_bytes().splitlines(keepends=True)
    digests[0] = digest_lines("responses.jsonl", lines[:1])
    (run_dir / "records.sha256").write_bytes(b"".join(digests))
    args = [str(tmp_path / arg) if arg == "other" else arg for arg in command[1:]]
    result = audit(tmp_path, command[0], *([*args, str(run_dir)] if command[0] == "compare" else [str(run_dir), *args]))
    assert (result.returncode, result.stderr) == (EXIT["archive"], (  # show has printed the run's heading
        f"benchrun: error: in '{run_dir / 'responses.jsonl'}': line 1: not a valid record: seconds: "
        f"{float(seconds)!r} s is no wall time a run measures (0 to 1e+09 s)\n"))


# -- a rescore's claims ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dropped", [("scores.jsonl", "summary.json"), ("scores.jsonl",)])
def test_a_rescore_that_digests_none_of_its_files_is_not_intact(tmp_path, dropped):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    (tmp_path / "scorers.py").write_text(CLOSENESS)
    assert audit(tmp_path, "rescore", str(run_dir), "--scorers", "scorers.py", "--only").returncode == EXIT["ok"]
    claims = run_dir / "rescores" / "001" / "rescore.json"
    info = json.loads(claims.read_text())
    info["files"] = {name: digest for name, digest in info["files"].items() if name not in dropped}
    claims.write_text(json.dumps(info))
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["not_intact"]
    assert [line for line in verified.stdout.splitlines() if "rescores/" in line] == [
        "FAIL  rescores/001/rescore.json: holds no digest of scores.jsonl, which every rescore writes: nothing covers "
        "what it says"]  # a summary.json undigested is checked by its scores (a benchrun before b364313 wrote one)


# -- what --output may name --------------------------------------------------------------------------------------

def _plain_folder(tmp: Path, name: str) -> Path:
    (tmp / "d").mkdir()
    return tmp / "d" / name


def _hydra(run_dir: Path) -> Path:
    (run_dir / ".hydra").mkdir()
    (run_dir / ".hydra" / "overrides.yaml").write_text("- runner.model=m\n")
    return run_dir / ".hydra" / "overrides.yaml"


def _multirun(tmp: Path) -> Path:
    sweep = _sweep(tmp)
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    return sweep / "multirun.yaml"


OUTPUTS = {  # what --output names -> what it is said to be
    "run.json in a plain folder": (lambda tmp, run: _plain_folder(tmp, "run.json"),
                                   "run.json is the name of a run's own file: {tmp}/d would be read as a run's "
                                   "directory"),
    "manifest.json in a plain folder": (lambda tmp, run: _plain_folder(tmp, "manifest.json"),
                                        "manifest.json is the name of a run's own file: {tmp}/d would be read as a "
                                        "run's directory"),
    "sweep.json in a plain folder": (lambda tmp, run: _plain_folder(tmp, "sweep.json"),
                                     "sweep.json is the name of a sweep's own file: {tmp}/d would be read as a "
                                     "sweep's directory"),
    "the run's log": (lambda tmp, run: run / "benchrun.log",
                      "the benchrun.log of the run in {run}, which only benchrun writes"),
    "the run's rescores folder": (lambda tmp, run: run / "rescores",
                                  "the rescores of the run in {run}, which only benchrun writes"),
    "a number in the rescores folder": (lambda tmp, run: (run / "rescores").mkdir() or run / "rescores" / "002",
                                        "a file in the rescores of the run in {run}, which only benchrun writes"),
    "Hydra's copy of the overrides": (lambda tmp, run: _hydra(run),
                                      "a file in the .hydra of the run in {run}, which only benchrun writes"),
    "a sweep's multirun.yaml": (lambda tmp, run: _multirun(tmp),
                                "the multirun.yaml of the sweep in {tmp}/sweep, which only benchrun writes"),
}


@pytest.mark.parametrize("command", ["export", "report"])
@pytest.mark.parametrize("name", list(OUTPUTS))
def test_an_output_that_would_be_read_as_the_archives_is_refused(tmp_path, name, command):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    where, what = OUTPUTS[name]
    target = where(tmp_path, run_dir)
    before = snapshot(tmp_path)
    result = audit(tmp_path, command, str(run_dir), "--output", str(target))
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{target}': --output: {what.format(run=run_dir, tmp=tmp_path)}; nothing was written; "
        "name another file\n"))
    assert snapshot(tmp_path) == before
    assert audit(tmp_path, "list", str(tmp_path)).stdout.count("unreadable") == 0


def test_an_output_of_a_new_name_in_a_run_or_a_sweep_is_written(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    sweep = _sweep(tmp_path)
    for target in (run_dir / "rows.csv", sweep / "rows.csv", tmp_path / "run.json.csv"):
        assert audit(tmp_path, "export", str(run_dir), "--output", str(target)).returncode == EXIT["ok"]
        assert target.read_text().startswith("run_id,")


# -- the Python API ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("read", ["metric_rows", "samples"])
def test_the_api_refuses_a_run_edited_since_it_was_written(tmp_path, read):
    import benchrun
    import benchrun.audit
    from benchrun.core.errors import ArchiveError

    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    scores = run_dir / "scores.jsonl"
    scores.write_text(scores.read_text().replace('"closeness":0', '"closeness":1'))
    with pytest.raises(ArchiveError) as refused:
        list(getattr(benchrun.audit, read)(benchrun.load_run(run_dir)))
    assert str(refused.value) == (
        f"in '{run_dir}': run 555555555555: scores.jsonl: line 4 is not the line written, so what it says cannot be "
        f"trusted; benchrun-audit verify {run_dir} says what changed")


# -- what prints nothing ------------------------------------------------------------------------------------------

UNSEEN_NAME = "gpt\u202e5-ledom\u200b\u2028x"
"""A model's name with a right-to-left override (it shows as `gptmodel-5`), a zero-width space and a line separator."""
UNSEEN_SHOWN = "gpt\\u202e5-ledom\\u200b\\u2028x"


def test_a_name_with_characters_that_print_nothing_is_shown_as_written(tmp_path):
    """list, show, compare and verify print a model's name, a label and a metric's name read from the archive."""
    named = synthetic_run(tmp_path / "runs" / "a", [1, 0], model=UNSEEN_NAME, label=UNSEEN_NAME)
    other = synthetic_run(tmp_path / "runs" / "b", [1, 1], run_id="6" * 12)
    printed = {"list": audit(tmp_path, "list", str(tmp_path / "runs")),
               "show": audit(tmp_path, "show", str(named)),
               "compare": audit(tmp_path, "compare", str(other), str(named))}
    assert {name: (r.returncode, r.stderr) for name, r in printed.items()} == dict.fromkeys(printed, (EXIT["ok"], ""))
    assert [name for name, r in printed.items() if any(c in r.stdout for c in "\u202e\u200b\u2028")] == []
    assert [name for name, r in printed.items() if UNSEEN_SHOWN not in "".join(r.stdout.split())] == []


def test_what_prints_nothing_is_every_format_character_and_separator_unicode_has():
    """console.visible's list against this Python's unicodedata: Cf, Zl, Zp, and the control characters."""
    import unicodedata

    from benchrun.console.visible import visible

    unseen = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp")]
    assert [c for c in unseen if visible(c) == c] == ["\t", "\n"]
    assert visible("é 中文 \xa0 👨\u200d👩 ok\t\n") == "é 中文 \xa0 👨\\u200d👩 ok\t\n"


def test_what_prints_nothing_follows_the_unicode_database_python_has(monkeypatch):
    """A newer Python's Unicode has format characters an older one did not (Unicode 15's U+13439 to U+1343F): the
    rule asks the running Python's unicodedata, never a list written for one version (which left them raw)."""
    import types
    import unicodedata

    from benchrun.console import visible as module

    newer = types.SimpleNamespace(category=lambda char: "Cf" if char == "\U00013439" else unicodedata.category(char))
    monkeypatch.setattr(module, "unicodedata", newer)
    assert module.visible("a\U00013439b é") == "a\\U00013439b é"


# -- the response cache ------------------------------------------------------------------------------------------

def _cache_of_version(folder: Path, version: str) -> Path:
    """A response cache as a benchrun of schema `version` might make it: other tables, its version in meta."""
    folder.mkdir()
    db = sqlite3.connect(folder / "responses.sqlite3")
    db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (version,))
    db.execute("CREATE TABLE answers_v2 (key TEXT PRIMARY KEY, answer BLOB)")
    db.commit()
    db.close()
    return folder / "responses.sqlite3"


def _tables(database: Path) -> list[str]:
    return sorted(name for (name,) in rows(database, "SELECT name FROM sqlite_master WHERE type = 'table'"))


def test_a_cache_of_another_version_is_never_written_and_clear_removes_it(tmp_path):
    database = _cache_of_version(tmp_path / "cache", "3")
    said = (f"benchrun: error: --cache-dir: the response cache at {database} has schema version '3', not 2 (another "
            "version of benchrun made it); benchrun-audit cache --clear removes it\n")
    for args in ([], ["--clear", "--digest", "45b1"]):
        result = audit(tmp_path, "cache", "--cache-dir", str(database.parent), *args)
        assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", said)
    assert _tables(database) == ["answers_v2", "meta"]
    cleared = audit(tmp_path, "cache", "--cache-dir", str(database.parent), "--clear")
    assert (cleared.returncode, cleared.stdout, cleared.stderr) == (EXIT["ok"], (
        f"removed the response cache at {database}, of schema version '3' (another version of benchrun made it)\n"),
        "")
    assert list(database.parent.iterdir()) == []
    after = audit(tmp_path, "cache", "--cache-dir", str(database.parent))
    assert (after.returncode, after.stdout) == (EXIT["ok"], f"response cache: {database}, 0 entries, 0 B\n")


def test_another_programs_database_is_never_taken_for_an_empty_cache(tmp_path):
    (tmp_path / "cache").mkdir()
    database = tmp_path / "cache" / "responses.sqlite3"
    db = sqlite3.connect(database)
    db.execute("CREATE TABLE users (name TEXT)")
    db.commit()
    db.close()
    for args in ([], ["--clear"]):
        result = audit(tmp_path, "cache", "--cache-dir", str(database.parent), *args)
        assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
            f"benchrun: error: --cache-dir: the response cache at {database} cannot be used (it holds another "
            "program's tables, 'users', and no schema version); this command lists and clears only a cache it can "
            "open: name the cache's own folder with --cache-dir, or move this file aside (a run makes a new cache "
            "where there is none)\n"))
    assert _tables(database) == ["users"]
