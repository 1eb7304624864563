"""Hostile input, sixth pass, the compile, archive and audit side (issue 19's fresh pass): the cases it found bad,
each with the rule it now obeys.

- a run whose records, summary.json, manifest.json or run.json were edited since it was written (a score line's 0
  made 1): `show`, `compare`, `export` and `report` read them as they were and gave other numbers, exit 0 (only
  `verify` said, and `rescore` and `retry` checked first); now the one reader checks a run against the digests written
  with it before any command reads a number (`Run.require_records`), and refuses in one line naming the run and file
- `export --output` or `report --output` naming a file of the archive (a run's responses.jsonl, its run.lock, a
  link to its scores.jsonl, a rescore's files, a sweep's sweep.json): the archived answers were replaced by the export,
  exit 0; now refused in one line, nothing written
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

from benchrun.core.errors import EXIT
from benchrun.core.layout import CONFIG, DIGESTS, JUDGED_FILES, SUMMARY, DigestedFile
from benchrun.testing.inprocess import cli
from benchrun.testing.small_disk import can_mount, fill, small_disk
from tests.helpers.archives import reseal, synthetic_run
from tests.helpers.benchfiles import write_bench


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _edit_score(run_dir: Path) -> None:
    """Line 4 of scores.jsonl (sample 1's closeness, 0) made 1, as a hand that wants a better number would."""
    lines = (run_dir / "scores.jsonl").read_text().splitlines(keepends=True)
    assert '"closeness":0' in lines[3]
    lines[3] = lines[3].replace('"closeness":0', '"closeness":1')
    (run_dir / "scores.jsonl").write_text("".join(lines))


def _edit_summary(run_dir: Path) -> None:
    data = json.loads((run_dir / "summary.json").read_text())
    data["metrics"][-1]["mean"] = 1.0
    (run_dir / "summary.json").write_text(json.dumps(data))


def _edit_run_json(run_dir: Path) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    data["model"] = "gpt-5"
    (run_dir / "run.json").write_text(json.dumps(data))


def _unseal(run_dir: Path) -> None:
    (run_dir / "seal.json").unlink()
    _edit_run_json(run_dir)


def _edit_manifest(run_dir: Path) -> None:
    (run_dir / "manifest.json").write_text((run_dir / "manifest.json").read_text().replace("a is 1", "a is 7"))


EDITS = {  # how the run was changed -> what the reader says of it
    "a score line": (_edit_score, "scores.jsonl: line 4 is not the line written"),
    "summary.json": (_edit_summary, "summary.json: changed since the run ended"),
    "run.json": (_edit_run_json, "run.json: changed since the run was sealed"),
    "run.json, its seal removed": (_unseal, "seal.json: missing: the run ended (completed) but nothing covers run.json"),
    "manifest.json": (_edit_manifest, "manifest.json: changed: its sha256 is not the manifest id in run.json"),
}
COMMANDS = {"show": ("show",), "show --samples": ("show", "--samples"), "export": ("export",),
            "report": ("report", "--output", "r.html")}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("edit", list(EDITS))
def test_a_run_changed_since_it_was_written_is_refused_by_every_reader(tmp_path, edit, command):
    change, why = EDITS[edit]
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    change(run_dir)
    before = snapshot(tmp_path)
    result = audit(tmp_path, *COMMANDS[command][:1], str(run_dir), *COMMANDS[command][1:])
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{run_dir}': run 555555555555: {why}, so what it says cannot be trusted; "
        f"benchrun-audit verify {run_dir} says what changed\n"))
    assert snapshot(tmp_path) == before


def test_compare_refuses_a_changed_run_it_would_have_compared(tmp_path):
    base = synthetic_run(tmp_path / "base", [1, 0, 1], run_id="1" * 12)
    other = synthetic_run(tmp_path / "other", [0, 0, 1], run_id="2" * 12)
    assert audit(tmp_path, "compare", str(base), str(other)).returncode == EXIT["ok"]
    _edit_score(other)
    result = audit(tmp_path, "compare", str(base), str(other))
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{other}': run 222222222222: scores.jsonl: line 4 is not the line written, so what it "
        f"says cannot be trusted; benchrun-audit verify {other} says what changed\n"))


def test_a_run_that_did_not_end_is_checked_line_by_line_its_uncommitted_tail_kept(tmp_path):
    """A killed run has no final digests: its committed lines are checked against records.sha256, and what a killed
    writer left after them (here a whole score line, of a repeat with no answer) is no reason to refuse the run."""
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1], finish=False)
    with open(run_dir / "scores.jsonl", "ab") as handle:
        handle.write(b'{"id":"t:a=0","task":"t","repeat":1,"scorer":"closeness","metrics":{"closeness":1}}\n')
    shown = audit(tmp_path, "export", str(run_dir), "--format", "jsonl")
    assert shown.returncode == EXIT["ok"], shown.stderr
    assert len(shown.stdout.splitlines()) == 6
    _edit_score(run_dir)
    result = audit(tmp_path, "export", str(run_dir))
    assert (result.returncode, result.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': run 555555555555: scores.jsonl: line 4 is not the line written, so what it "
        f"says cannot be trusted; benchrun-audit verify {run_dir} says what changed\n"))


def test_rescore_and_verify_still_read_a_changed_run(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    _edit_summary(run_dir)
    result = audit(tmp_path, "rescore", str(run_dir))
    assert (result.returncode, result.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': summary.json: changed since the run ended; rescore with --force to score "
        "its records anyway (recorded in rescore.json)\n"))
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["not_intact"]
    assert "FAIL  summary.json: changed since the run finished" in verified.stdout


def _sweep_file(tmp_path: Path) -> Path:
    (tmp_path / "sweep" / "0_m").mkdir(parents=True)
    synthetic_run(tmp_path / "sweep" / "0_m" / "x", [1])
    (tmp_path / "sweep" / "sweep.json").write_text("{}")
    return tmp_path / "sweep" / "sweep.json"


ARCHIVE_FILES = {  # what --output names -> what it is said to be
    "responses.jsonl": (lambda tmp, run: run / "responses.jsonl", "the responses.jsonl of the run in {run}"),
    "run.lock": (lambda tmp, run: run / "run.lock", "the run.lock of the run in {run}"),
    "a link to scores.jsonl": (lambda tmp, run: _link(tmp / "out.csv", run / "scores.jsonl"),
                               "the scores.jsonl of the run in {run}"),
    "a rescore's file": (lambda tmp, run: _rescore_dir(run) / "scores.jsonl",
                         "a file of rescore 001 of the run in {run}"),
    "a sweep's sweep.json": (lambda tmp, run: _sweep_file(tmp), "the sweep.json of the sweep in {tmp}/sweep"),
}


def _link(link: Path, target: Path) -> Path:
    link.symlink_to(target)
    return link


def _rescore_dir(run_dir: Path) -> Path:
    (run_dir / "rescores" / "001").mkdir(parents=True)
    (run_dir / "rescores" / "001" / "scores.jsonl").write_text("")
    return run_dir / "rescores" / "001"


@pytest.mark.parametrize("command", ["export", "report"])
@pytest.mark.parametrize("name", list(ARCHIVE_FILES))
def test_an_output_that_is_a_file_of_the_archive_is_refused(tmp_path, name, command):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    where, what = ARCHIVE_FILES[name]
    target = where(tmp_path, run_dir)
    before = snapshot(tmp_path)
    result = audit(tmp_path, command, str(run_dir), "--output", str(target))
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{target}': --output: {what.format(run=run_dir, tmp=tmp_path)}, which only benchrun "
        "writes; nothing was written; name another file\n"))
    assert snapshot(tmp_path) == before


def test_an_output_beside_the_archives_files_is_written(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    for target in (run_dir / "rows.csv", run_dir / "report.csv"):
        assert audit(tmp_path, "export", str(run_dir), "--output", str(target)).returncode == EXIT["ok"]
        assert target.read_text().startswith("run_id,")


# -- benchmark files ---------------------------------------------------------------------------------------------

def _dry_run(bench: Path, *overrides: str):
    return cli("dry_run=true", f"task.path={bench}", "runner.host=http://127.0.0.1:9", *overrides, cwd=bench.parent)


T = '- name: t\n  template: "say {a}"\n  values: {a: [1, 2]}\n  reference: ["1", "2"]\n'
VERDICT = ("from enum import Enum\n\nfrom pydantic import BaseModel\n\n\nclass Grade(str, Enum):\n    right = 'right'\n"
           "    wrong = 'wrong'\n\n\nclass Verdict(BaseModel):\n    verdict: Grade\n")
JUDGE = ('- name: j\n  rubric: "{prompt} {response}: right or wrong?"\n  format: Verdict\n  score: verdict\n'
         '  scores: {right: 1, wrong: WRONG}\n')
BENCHES = {  # name: (files, message)
    "a key given twice in a task": (
        {"tasks.yml": T.replace('  values:', '  template: "shout {a}"\n  values:')},
        "in 'tasks.yml': line 3, column 3: the key 'template' is given twice in one mapping (YAML would keep the last "
        "without a word); give it once"),
    "a value column given twice": (
        {"tasks.yml": T.replace("{a: [1, 2]}", "{a: [1, 2], a: [3, 4]}")},
        "in 'tasks.yml': line 3, column 23: the key 'a' is given twice in one mapping (YAML would keep the last "
        "without a word); give it once"),
    "a key given twice in judges.yml": (
        {"tasks.yml": T + "  judge: j\n", "custom_response.py": VERDICT,
         "judges.yml": JUDGE.replace("WRONG", "0") + "  format: StringAnswer\n"},
        "in 'judges.yml': line 6, column 3: the key 'format' is given twice in one mapping (YAML would keep the last "
        "without a word); give it once"),
    "an async scorer": (
        {"tasks.yml": T + "  scorer: s\n", "custom_scorer.py": "async def s(response, reference):\n    return 1\n"},
        "in 'custom_scorer.py': scorer 's' is async: a scorer returns its value (a number, a bool or a dict of them); "
        "define it with a plain def and return"),
    "a scorer that yields": (
        {"tasks.yml": T + "  scorer: s\n", "custom_scorer.py": "def s(response, reference):\n    yield 1\n"},
        "in 'custom_scorer.py': scorer 's' is a generator (it yields): a scorer returns its value (a number, a bool or "
        "a dict of them); define it with a plain def and return"),
    "an empty reference": (
        {"tasks.yml": T.replace('["1", "2"]', '["", "2"]') + "  scorer: contains\n"},
        "in 'tasks.yml': task 't': tasks[0].reference: the reference of sample 1 is '': an empty answer, which every "
        "answer contains; give the answer, or leave the sample out"),
    "an empty reference cell": (
        {"tasks/add/template.txt": "what is {a}?", "tasks/add/values.csv": "a,reference\n2,2\n3, \n"},
        "in 'tasks/add/values.csv': task 'add': column 'reference': the reference of sample 2 is '': an empty answer, "
        "which every answer contains; give the answer, or leave the sample out"),
    "an empty acceptable answer in a values file": (
        {"tasks.yml": '- name: t\n  template: "say {a}"\n  values_file: x.jsonl\n',
         "x.jsonl": '{"a": 1, "reference": ["one", ""]}\n'},
        "in 'x.jsonl': task 't': column 'reference': the reference of sample 1 is ['one', '']: an empty answer, which "
        "every answer contains; give the answer, or leave the sample out"),
    "an empty template.txt": (
        {"tasks/add/template.txt": "\n", "tasks/add/values.csv": "a,reference\n2,2\n"},
        "in 'tasks/add/template.txt': task 'add': empty: a task's template is the prompt it asks"),
    "a judge's score of NaN": (
        {"tasks.yml": T + "  judge: j\n", "custom_response.py": VERDICT, "judges.yml": JUDGE.replace("WRONG", ".nan")},
        "in 'judges.yml': judges[0].scores.wrong: nan is not a finite number of magnitude at most 1e+100, as a "
        "metric's value must be"),
    "a judge's score beyond what a metric may be": (
        {"tasks.yml": T + "  judge: j\n", "custom_response.py": VERDICT,
         "judges.yml": JUDGE.replace("WRONG", "-1.0e+300")},
        "in 'judges.yml': judges[0].scores.wrong: -1e+300 is not a finite number of magnitude at most 1e+100, as a "
        "metric's value must be"),
}


@pytest.mark.parametrize("name", list(BENCHES))
def test_a_benchmark_file_that_would_ask_or_score_other_than_it_reads_is_refused(tmp_path, name):
    files, message = BENCHES[name]
    result = _dry_run(write_bench(tmp_path, files), "judge.model=j")
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {message}\n")


def test_yaml_anchors_without_aliases_and_keys_given_once_still_compile(tmp_path):
    bench = write_bench(tmp_path, {"tasks.yml": T.replace('"say {a}"', '&t "say {a}"')})
    assert _dry_run(bench).returncode == EXIT["ok"]


# -- the archive as found ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["run.json", "summary.json", "seal.json"])
def test_a_planted_file_of_gigabytes_is_one_line_not_read_whole(tmp_path, name):
    """A sparse file costs no disk; read whole, 3 GB was a MemoryError traceback (`list` of a shared archive)."""
    run_dir = synthetic_run(tmp_path / "archive" / "run", [1, 0, 1])
    with open(run_dir / name, "r+b") as handle:
        handle.truncate(3 * 2**30)
    size = f"3,221,225,472 bytes, more than benchrun writes in a {name} (67,108,864 bytes)"
    said = f"in '{run_dir / name}': {size}"
    if name == "seal.json":
        verified = audit(tmp_path, "verify", str(run_dir))
        assert (verified.returncode, verified.stdout.splitlines()[1]) == (EXIT["not_intact"],
                                                                          f"FAIL  seal.json: {size}")
        return
    listed = audit(tmp_path, "list", str(tmp_path / "archive"), "--json")
    assert (listed.returncode, json.loads(listed.stdout)) == (EXIT["ok"], [
        {"path": str(run_dir / name), "status": "unreadable", "listed_as": "unreadable",
         "reason": said}])


def test_list_keeps_every_run_when_one_summary_cannot_be_read(tmp_path):
    good = synthetic_run(tmp_path / "archive" / "good", [1], run_id="1" * 12)
    bad = synthetic_run(tmp_path / "archive" / "bad", [1], run_id="2" * 12)
    (bad / "summary.json").write_text('{"metrics": ')
    listed = audit(tmp_path, "list", str(tmp_path / "archive"), "--json")
    assert listed.returncode == EXIT["ok"], listed.stderr
    runs = json.loads(listed.stdout)
    assert [run.get("run_id") for run in runs] == ["1" * 12, None]
    assert runs[1] == {"path": str(bad / "summary.json"), "status": "unreadable", "listed_as": "unreadable",
                       "reason": f"in '{bad / 'summary.json'}': unreadable: Invalid JSON: EOF while parsing a value at "
                                 "line 1 column 12"}
    assert str(good) == runs[0]["path"]


NEEDS_MOUNT = pytest.mark.skipif(not can_mount(), reason="a small disk is mounted for it (needs root)")


@NEEDS_MOUNT
def test_a_full_disk_names_the_lock_it_could_not_write_and_lets_it_go(tmp_path):
    """Taking the lock of a run on a full disk was `disk full`, naming nothing, and the lock stayed held by the
    process (so `resume` after a `rescore` in one process: `another process is writing this run`)."""
    bench = write_bench(tmp_path, {"tasks.yml": T + "  scorer: closeness\n",
                                   "custom_scorer.py": "def closeness(response, reference):\n    return 1\n"})
    with small_disk(tmp_path / "disk", 1024) as disk:
        run_dir = synthetic_run(disk / "run", [1, 0], config=f"task: {{path: {bench}}}\n")
        fill(disk / "filler")
        for _ in range(2):
            result = audit(tmp_path, "rescore", str(run_dir))
            assert (result.returncode, result.stderr) == (
                EXIT["archive"], f"benchrun: error: disk full writing {run_dir / 'run.lock'}\n")
        assert (run_dir / "run.lock").read_bytes() == b"" and not (run_dir / "rescores").exists()


@pytest.mark.parametrize("text, said", [
    ("runner_type: [ollama\n", "line 2, column 1: YAML syntax error: expected ',' or ']', but got '<stream end>' "
                               "(while parsing a flow sequence at line 1, column 14)"),
    ("runner_type: ollama\nmodel: llama3.2\nmodel: gemma3\n",
     "line 3, column 1: the key 'model' is given twice in one mapping (YAML would keep the last without a word); give "
     "it once"),
])
def test_a_runner_file_that_cannot_be_read_is_one_line(tmp_path, text, said):
    """It was `TaskError raised while resolving interpolation: ... full_key: hydra.run.dir object_type=dict`: the
    run directory's name is made from the runner file's models, and the error escaped that resolver."""
    (tmp_path / "r.yml").write_text(text)
    result = cli("runner_file=r.yml", "dry_run=true", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: in 'r.yml': {said}\n")


@pytest.mark.parametrize("source, said", [
    ("async def closeness(response, reference):\n    return 1\n",
     "scorer 'closeness' is async: a scorer returns its value (a number, a bool or a dict of them); define it with a "
     "plain def and return"),
    ("def closeness(response):\n    return 1\n",
     "scorer 'closeness' must take two arguments, (response, reference); it is closeness(response)"),
])
def test_rescore_checks_the_scorers_it_is_given_as_a_run_checks_its_own(tmp_path, source, said):
    """`rescore --scorers FILE.py` called them unchecked: every sample a scorer error, and a rescore written."""
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    (tmp_path / "mine.py").write_text(source)
    result = audit(tmp_path, "rescore", str(run_dir), "--scorers", str(tmp_path / "mine.py"), "--only")
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: in '{tmp_path / 'mine.py'}': "
                                                                 f"{said}\n")
    assert not (run_dir / "rescores").exists()


def test_a_planted_run_json_names_only_the_runs_own_files(tmp_path):
    """A run.json (and its seal) rewritten to digest `/etc/shadow`: verify read it and printed its sha256 and line
    count; now run.json's `files` names the run's own files only, the names of layout (checked here)."""
    assert set(get_args(DigestedFile)) == {CONFIG, *JUDGED_FILES, DIGESTS, SUMMARY}
    run_dir = synthetic_run(tmp_path / "run", [1])
    info = json.loads((run_dir / "run.json").read_text())
    info["files"]["/etc/shadow"] = info["files"]["summary.json"]
    (run_dir / "run.json").write_text(json.dumps(info))
    reseal(run_dir)
    result = audit(tmp_path, "verify", str(run_dir))
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{run_dir / 'run.json'}': unreadable: files./etc/shadow.[key]: Input should be "
        "'config.yaml', 'responses.jsonl', 'scores.jsonl', 'judgements.jsonl', 'records.sha256' or 'summary.json'\n"))
