"""Hostile input, seventh pass, the compile, archive and audit side (issue 19's fresh pass): the cases it found bad,
each with the rule it now obeys.

- config.yaml edited after the run (`temperature: 0` made 0.9): `resume` asked the rest of the run at 0.9, its
  manifest still saying 0, and the run then verified intact (the resume wrote config.yaml's new digest); `show`,
  `export` and `report` read the run as intact. Now resume and retry ask only as the manifest pins (a killed run's
  config.yaml has no digest), and every reader checks config.yaml against run.json's digest as it does the records
- YAML 1.1's bools (`yes`, `no`, `on`, `off`) in a task file: `values: {a: [yes, no]}` asked `Is it True?`; now
  refused naming line and column
- a NUL byte in a data file (a CSV saved as UTF-16 without its mark reads as ASCII and NULs): read into a prompt and a
  reference no answer matches; now refused naming its line and column
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from benchrun import compile
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import cli
from benchrun.testing.lab import half_right
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import synthetic_run
from tests.helpers.benchfiles import config, folder_task, write_bench
from tests.helpers.killed import killed_run
from tests.helpers.killed import write_bench as write_times7


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- config.yaml ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [("show",), ("export",), ("report", "--output", "r.html")])
def test_a_config_changed_since_the_run_ended_is_refused_by_every_reader(tmp_path, command):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1])
    (run_dir / "config.yaml").write_text("task: {path: elsewhere}\n")
    before = snapshot(tmp_path)
    result = audit(tmp_path, command[0], str(run_dir), *command[1:])
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{run_dir}': run 555555555555: config.yaml: changed since the run ended, so what it "
        f"says cannot be trusted; benchrun-audit verify {run_dir} says what changed\n"))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL])
def test_resume_never_asks_otherwise_than_the_manifest_says_the_run_asked(tmp_path, stop):
    """A SIGKILLed run's config.yaml has no digest: what catches its edit is the manifest, which pins the options."""
    write_times7(tmp_path / "bench")
    asked = []
    with FakeOllama(models=["llama3.2"], responder=lambda req: asked.append(req) or half_right(req)) as server:
        run_dir = killed_run(tmp_path, server, stop)
        config = run_dir / "config.yaml"
        config.write_text(config.read_text().replace("temperature: 0\n", "temperature: 0.9\n", 1))
        before = snapshot(run_dir)
        result = audit(tmp_path, "resume", str(run_dir))
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert (result.returncode, result.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{config}': runner.options.temperature: 0.9, but run {run_id} asked with 0 (its "
        "manifest): config.yaml was changed since the run was made; put it back\n"))
    assert snapshot(run_dir) == before
    assert [req.options for req in asked if req.options.get("temperature") != 0] == []


# -- benchmark files --------------------------------------------------------------------------------------------

def _dry_run(bench: Path):
    return cli("dry_run=true", f"task.path={bench}", "runner.host=http://127.0.0.1:9", cwd=bench.parent)


T = '- name: t\n  template: "is it {a}?"\n  values: {a: VALUES}\n  reference: REFERENCE\n  scorer: contains\n'
BENCHES = {  # name: (files, message)
    "yes and no as values": (
        {"tasks.yml": T.replace("VALUES", "[yes, no]").replace("REFERENCE", '["y", "n"]')},
        "in 'tasks.yml': line 3, column 16: yes is read by YAML as the bool true, not as written; quote it ('yes') "
        "to keep it as text, or write true"),
    "off as a reference": (
        {"tasks.yml": T.replace("VALUES", "[1, 2]").replace("REFERENCE", '["on", Off]')},
        "in 'tasks.yml': line 4, column 21: Off is read by YAML as the bool false, not as written; quote it ('Off') "
        "to keep it as text, or write false"),
    "ON as a system prompt": (
        {"tasks.yml": T.replace("VALUES", "[1, 2]").replace("REFERENCE", '["1", "2"]') + "  system: ON\n"},
        "in 'tasks.yml': line 6, column 11: ON is read by YAML as the bool true, not as written; quote it ('ON') to "
        "keep it as text, or write true"),
    "1:30 as a value": (
        {"tasks.yml": T.replace("VALUES", "[1:30, 2]").replace("REFERENCE", '["1", "2"]')},
        "in 'tasks.yml': line 3, column 16: 1:30 is read by YAML as the int 90, not as written; quote it ('1:30') to "
        "keep it as text, or write 90"),
    "010 as a value": (
        {"tasks.yml": T.replace("VALUES", "[010, 2]").replace("REFERENCE", '["1", "2"]')},
        "in 'tasks.yml': line 3, column 16: 010 is read by YAML as the int 8, not as written; quote it ('010') to keep "
        "it as text, or write 8"),
    "0x1F and 1_000.5 as values": (
        {"tasks.yml": T.replace("VALUES", "[0x1F, 1_000.5]").replace("REFERENCE", '["1", "2"]')},
        "in 'tasks.yml': line 3, column 16: 0x1F is read by YAML as the int 31, not as written; quote it ('0x1F') to "
        "keep it as text, or write 31"),
    "a value column named by a number": (
        {"tasks.yml": T.replace("{a: VALUES}", "{1: [1, 2]}").replace("{a}", "{1}").replace("REFERENCE", '["1", "2"]')},
        "in 'tasks.yml': line 3, column 12: the key 1 is read by YAML as the int 1, not as a name; quote it ('1')"),
    "a key that is null": (
        {"tasks.yml": T.replace("VALUES", "[1, 2]").replace("REFERENCE", '["1", "2"]') + "  ~: x\n"},
        "in 'tasks.yml': line 6, column 3: the key ~ is read by YAML as null, not as a name; quote it ('~')"),
    "a key that is a list": (
        {"tasks.yml": T.replace("VALUES", "[1, 2]").replace("REFERENCE", '["1", "2"]') + "  [a]: x\n"},
        "in 'tasks.yml': line 6, column 3: a list or mapping as a key: a key is a name"),
    "a NUL byte in a CSV cell": (
        {"tasks/add/template.txt": "what is {a}?", "tasks/add/values.csv": "a,reference\n2,2\n3\0x,3\n"},
        "in 'tasks/add/values.csv': task 'add': line 3, column 2: a NUL byte, which no text holds (a file saved as "
        "UTF-16, or not text?); save it as UTF-8"),
    "a CSV saved as UTF-16 without its mark": (
        {"tasks/add/template.txt": "what is {a}?",
         "tasks/add/values.csv": "a,reference\n2,2\n".encode("utf-16-le").decode("ascii")},
        "in 'tasks/add/values.csv': task 'add': UTF-16 text (a NUL byte after each ASCII character, and no byte-order "
        "mark), where benchrun reads UTF-8; save it as UTF-8 (an editor's Save As, encoding UTF-8; or iconv -f "
        "UTF-16LE -t UTF-8)"),
    "a NUL byte in a JSONL line": (
        {"tasks.yml": '- name: t\n  template: "say {a}"\n  values_file: x.jsonl\n',
         "x.jsonl": '{"a": 1, "reference": "1"}\n{"a": 2, "reference": "2"}\0\n'},
        "in 'x.jsonl': task 't': line 2, column 27: a NUL byte, which no text holds (a file saved as UTF-16, or not "
        "text?); save it as UTF-8"),
}


@pytest.mark.parametrize("name", list(BENCHES))
def test_a_benchmark_file_that_reads_other_than_it_says_is_refused(tmp_path, name):
    files, message = BENCHES[name]
    result = _dry_run(write_bench(tmp_path, files))
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {message}\n")


def test_numbers_bools_and_words_as_written_still_compile(tmp_path):
    tasks = T.replace("VALUES", "['yes', \"010\", true, FALSE, -3, 0, 0.25, 1.5e3]").replace(
        "REFERENCE", '["yes", "010", "t", "f", "-3", "0", "q", "x"]')
    result = _dry_run(write_bench(tmp_path, {"tasks.yml": tasks}))
    assert result.returncode == EXIT["ok"], result.stderr
    assert "is it yes?" in result.stdout and "8 samples" in result.stdout


def test_a_jsonl_string_holding_a_line_separator_is_one_record(tmp_path):
    """JSON strings may hold U+2028, U+2029 and U+0085 as they are; str.splitlines broke the record there (`not
    JSON: Unterminated string`)."""
    bench = write_bench(tmp_path, {"tasks.yml": '- name: t\n  template: "say {a}"\n  values_file: x.jsonl\n',
                                   "x.jsonl": '{"a": "one\u2028two", "reference": "1"}\n{"a": "x\x85y\u2029", '
                                              '"reference": "2"}\n'})
    result = _dry_run(bench)
    assert result.returncode == EXIT["ok"], result.stderr
    assert "2 samples" in result.stdout


# -- the archive as found ----------------------------------------------------------------------------------------

def _in_place(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "a directory":
        path.mkdir()
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("kind, said", [("a directory", "a directory"), ("a pipe", "a named pipe (FIFO)")])
def test_a_seal_that_is_not_a_file_is_one_line(tmp_path, kind, said):
    """It was `AttributeError: 'NoneType' object has no attribute 'run_json'` from show, and verify said `missing`."""
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    _in_place(run_dir / "seal.json", kind)
    what = f"{said}, where a file belongs: benchrun reads only regular files"
    why = f"in '{run_dir / 'seal.json'}': {what}"
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stdout, shown.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{run_dir}': run 555555555555: {why}, so what it says cannot be trusted; "
        f"benchrun-audit verify {run_dir} says what changed\n"))
    verified = audit(tmp_path, "verify", str(run_dir))
    assert (verified.returncode, verified.stdout.splitlines()[1]) == (EXIT["not_intact"], f"FAIL  seal.json: {what}")


def test_a_run_whose_manifest_is_gone_is_not_shown_as_if_whole(tmp_path):
    """show reads no manifest, and printed the run's table, exit 0."""
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    (run_dir / "manifest.json").unlink()
    shown = audit(tmp_path, "show", str(run_dir))
    assert (shown.returncode, shown.stdout, shown.stderr) == (EXIT["archive"], "", (
        f"benchrun: error: in '{run_dir}': run 555555555555: manifest.json: missing, so what it says cannot be "
        f"trusted; benchrun-audit verify {run_dir} says what changed\n"))


def test_a_csv_number_with_a_leading_zero_stays_the_text_it_is(tmp_path):
    """A code or an id ('007', a postcode '02139') was typed 7 and 2139: asked `what is 7?`, and the right answer
    '02139' scored against 2139. A CSV cannot quote it into text, so the zero says it."""
    bench = write_bench(tmp_path, folder_task("codes", "what is {a}?", "a,reference\n007,02139\n-08,-8\n0,0\n"))
    manifest = compile(config(bench), tmp_path)
    assert [(s.prompt, s.values, s.reference) for s in manifest.samples] == [
        ("what is 007?", {"a": "007"}, "02139"), ("what is -08?", {"a": "-08"}, -8), ("what is 0?", {"a": 0}, 0)]


@pytest.mark.parametrize("kind", ["a link to nowhere", "a pipe"])
def test_a_run_json_that_is_no_file_is_an_unreadable_run_never_dropped(tmp_path, kind):
    """`list` dropped a run whose run.json is a link that leads nowhere; `show` of it (or of one that is a pipe) said
    `neither a run nor a sweep directory`."""
    run_dir = synthetic_run(tmp_path / "archive" / "run", [1])
    (run_dir / "run.json").unlink()
    if kind == "a pipe":
        os.mkfifo(run_dir / "run.json")
        why = "a named pipe (FIFO), where a file belongs: benchrun reads only regular files"
    else:
        (run_dir / "run.json").symlink_to(tmp_path / "gone" / "run.json")
        why = "unreadable: no such file or directory"
    listed = audit(tmp_path, "list", str(tmp_path / "archive"), "--json")
    assert (listed.returncode, json.loads(listed.stdout)) == (EXIT["ok"], [
        {"path": str(run_dir / "run.json"), "status": "unreadable", "listed_as": "unreadable",
         "reason": f"in '{run_dir / 'run.json'}': {why}"}])
    for command in (("show",), ("export",), ("report", "--output", "r.html")):
        result = audit(tmp_path, command[0], str(run_dir), *command[1:])
        assert (result.returncode, result.stderr) == (EXIT["archive"],
                                                      f"benchrun: error: in '{run_dir / 'run.json'}': {why}\n")


@pytest.mark.parametrize("text", ["", "# the tasks, soon\n"])
def test_a_benchmark_file_that_holds_nothing_says_so(tmp_path, text):
    empty = _dry_run(write_bench(tmp_path, {"tasks.yml": text}))
    assert (empty.returncode, empty.stderr) == (EXIT["usage"], "benchrun: error: in 'tasks.yml': tasks: the file holds "
                                                "nothing (it is empty, or only comments); give a list\n")
