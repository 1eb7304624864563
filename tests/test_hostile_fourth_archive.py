"""Hostile input, fourth pass, the compose, archive and audit side (issue 19's fresh pass): the cases it found bad,
each with the rule it now obeys.

- `compare` of runs that share no scored sample (another benchmark, say): a table of n=0 lines and exit 0; now such a
  run is named `not compared`, and a compare that compares nothing fails in one line
- a run's `rescores/` that is a symbolic link: `rescore` wrote its new directory where the link pointed; now refused
  in one line naming it, as for the run's own files
- a benchmark file that is a named pipe (a values file, tasks.yml): a values file was `missing`, a tasks.yml skipped
  (its tasks silently not run); a directory where a file belongs likewise (custom_scorer.py skipped, description.txt
  a traceback-free but wrong `missing`); a values file of 3 GB was read whole (a MemoryError traceback under a memory
  limit); now each is read by one reader that takes regular files of at most MAX_FILE_BYTES only, in one line (and
  `rescore --scorers FILE` that is a pipe or a folder, which was `no such scorer file`)
- a signed or keyed URL (`?sig=`, Azure's SAS; `?X-Amz-Signature=`; `?code=`, Azure Functions' key) as runner.host:
  taken, so the credential was in config.yaml and run.json; now refused as `?api_key=` is
- `export --text` of a chat task: the prompt alone, the system prompt and the few-shot turns it was asked with
  nowhere in the rows (a reader of the export could not tell two chats apart); now `system` and `fewshot` columns
- an archive's file that is a named pipe (a shared archive, a hostile one): `verify` of a run whose run.json is one,
  and `export` or `compare` of one whose manifest.json is one, waited for ever; `list` left such a run out; verify
  called a pipe `missing`; a run.lock that is one was `illegal seek` naming nothing; a `rescores` that is a file
  `file exists`; now the archive's reader reads only regular files, and a writer writes only into them (one line
  naming the file, exit 4)
- a score line edited to hold 1e308, NaN or an integer of 147 digits (values no scorer can give): `rescore` an
  OverflowError traceback, `compare` a mean of 3.3e307 and an interval of nan; now the record reader refuses the line
  as the scorer boundary refuses the value, in one line naming it
- a data file whose name holds the API key (`values_file: data/<key>.jsonl`): refused, but as held by `a judge` in a
  benchmark with none; now named by what holds it, the file's position among the manifest's files
- `merge --into` the shards' own sweep directory (or a run with hydra.run.dir there): the run was written beside the
  jobs, and the sweep directory then stood for that run, never again for its jobs (`compare SWEEP`: `needs at least two
  runs (got 1)`); now refused in one line, nothing written
- `export --output /` or `report --output ''`: a ValueError traceback (a path with no name to put the temporary file
  beside); now `is a directory writing /`, as for any directory (an empty one is refused as an argument since the
  twelfth pass: tests/test_hostile_twelfth_main.py)
- `retry` beside a parent whose `<run>.retry1` is a symbolic link (to another folder): the retry's run was written
  where it pointed; now a name that anything holds (a file, a folder, a link) is passed over for the next
- a 1 KB tasks.yml whose 20 tasks name one 18 MB values file (500,000 records): the file was parsed 20 times, 70 s and
  1.2 GB before task.max_samples refused it (200 tasks: out of memory); now a data file is parsed once per compile
  however many tasks name it (6 s, 0.27 GB)
- `cache --cache-dir` naming a file, or a folder whose responses.sqlite3 is a pipe or a folder: `0 entries, 0 B`
  (and `--clear`: `cleared 0 entries`), exit 0, as if an empty cache were there; now one line naming what is there
- `rescore` of a run whose responses.jsonl was edited (an answer changed): scored the edited answer, exit 0, `1 sample
  values changed`, as if a scorer had changed; now the records are checked first, as `retry` checks its parent, and
  refused naming the line unless --force, which rescore.json records (`unverified`)

And two that held but were untested: `retry --into` a file or a run's directory names --into DIR as what chose it;
a template, values.csv or info.yml saved with Windows line ends asks what it asks with Unix ones.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from benchrun import compile
from benchrun.archive.lookup import expand_runs
from benchrun.archive.reader import load_run
from benchrun.core.errors import EXIT
from benchrun.core.filebytes import MAX_FILE_BYTES
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import Reply
from tests.helpers.archives import synthetic_run
from tests.helpers.benchfiles import config, tasks_yml, write_bench
from tests.helpers.commands import audit, call_benchrun, make_run, manifest_ids
from tests.helpers.judges import JUDGES, RESPONSE, TASKS

JSONL_TASK = tasks_yml({"name": "add", "template": "what is {a}?", "values_file": "data/add.jsonl"})


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory) -> tuple[Path, Path]:
    """One run of a 2-sample lab, made once: the tests that take it each work in a copy of it
    (`_copy_of_the_lab_run`), never in it."""
    root = tmp_path_factory.mktemp("lab_run")
    with Lab(root, n=2) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
    return root, run_dir.relative_to(root)


def _copy_of_the_lab_run(lab_run: tuple[Path, Path], tmp_path: Path) -> Path:
    """A copy of the shared lab's folder (its benchmark and outputs) into tmp_path; returns the copied run's
    directory."""
    root, run_dir = lab_run
    shutil.copytree(root, tmp_path, symlinks=True, dirs_exist_ok=True)
    return tmp_path / run_dir


def audit_call(cwd: Path, *args: str):
    return call_benchrun(*args, cwd=cwd, module="benchrun.audit")


def test_compare_of_runs_with_no_sample_in_common_fails(tmp_path):
    folder = make_run(tmp_path / "a", "task=folderbench")
    listed = make_run(tmp_path / "b")
    base, other = load_run(folder), load_run(listed)
    result = audit_call(tmp_path, "compare", str(folder), str(listed))
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: nothing to compare: run {other.id} (llama3.2) has no sample scored in both it and the "
        f"baseline, run {base.id}\n"))
    again = make_run(tmp_path / "c", "task=folderbench")
    result = audit_call(tmp_path, "compare", str(folder), str(listed), str(again))
    assert result.returncode == EXIT["ok"], result.stderr
    assert result.stdout.splitlines()[2] == (f"vs llama3.2 {other.id} ({listed}): not compared: no sample scored in "
                                             f"both it and the baseline, run {base.id}")
    assert result.stdout.splitlines()[4] == f"vs llama3.2 {load_run(again).id} ({again})"


def test_a_rescores_folder_that_is_a_link_is_never_written_through(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run_dir / "rescores").symlink_to(elsewhere)
    result = audit_call(tmp_path, "rescore", str(run_dir))
    assert (result.returncode, result.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir / 'rescores'}': a symbolic link (to {elsewhere}), where the run's own folder "
        "belongs; benchrun never writes through one: put the folder itself there\n"))
    assert list(elsewhere.iterdir()) == []


def _pipe(path: Path) -> None:
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.mkdir()


def _huge(path: Path) -> None:
    with open(path, "wb") as file:
        file.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing written, nothing read


ODD_FILES = {  # what stands where a benchmark file belongs -> how it is refused
    "a pipe as a values file": ("data/add.jsonl", _pipe, "in 'data/add.jsonl': task 'add': a named pipe (FIFO), "
                                "where a file belongs: benchrun reads only regular files"),
    "a pipe as tasks.yml": ("tasks.yml", _pipe, "in 'tasks.yml': a named pipe (FIFO), where a file belongs: benchrun "
                            "reads only regular files"),
    "a folder as a values file": ("data/add.jsonl", _folder, "in 'data/add.jsonl': task 'add': a directory, where a "
                                  "file belongs: benchrun reads only regular files"),
    "a folder as custom_scorer.py": ("custom_scorer.py", _folder, "in 'custom_scorer.py': a directory, where a file "
                                     "belongs: benchrun reads only regular files"),
    "a huge values file": ("data/add.jsonl", _huge, f"in 'data/add.jsonl': task 'add': {MAX_FILE_BYTES + 1:,} bytes, "
                           f"more than task.max_file_bytes ({MAX_FILE_BYTES:,} bytes)"),
    "a huge tasks.yml": ("tasks.yml", _huge, f"in 'tasks.yml': {MAX_FILE_BYTES + 1:,} bytes, more than a benchmark's "
                         f"file may hold ({MAX_FILE_BYTES:,} bytes)"),
}


def test_task_max_file_bytes_sets_how_large_a_data_file_may_be_and_is_not_in_the_manifest(tmp_path):
    """A data file over task.max_file_bytes is refused naming the setting; one under it is read; the limit bounds what
    is read, not what is asked, so the manifest id does not change with it."""
    bench = write_bench(tmp_path, {"tasks.yml": JSONL_TASK, "data/add.jsonl": '{"a": 1, "reference": "1"}\n'})
    small = call_benchrun(f"task.path={bench}", "dry_run=true", "task.max_file_bytes=20", cwd=tmp_path)
    assert (small.returncode, small.stderr) == (EXIT["usage"], "benchrun: error: in 'data/add.jsonl': task 'add': 27 "
                                                "bytes, more than task.max_file_bytes (20 bytes)\n")
    ids = [manifest_ids(call_benchrun(f"task.path={bench}", "dry_run=true", *limit, cwd=tmp_path).stdout)
           for limit in ([], ["task.max_file_bytes=27"])]
    assert ids[0] == ids[1] and len(ids[0]) == 1


@pytest.mark.parametrize("case", list(ODD_FILES))
def test_a_benchmark_file_is_a_regular_file_of_bounded_size(tmp_path, case):
    rel, make, said = ODD_FILES[case]
    bench = write_bench(tmp_path, {"tasks.yml": JSONL_TASK, "data/add.jsonl": '{"a": 1, "reference": "1"}\n'})
    (bench / rel).unlink(missing_ok=True)
    make(bench / rel)
    result = call_benchrun(f"task.path={bench}", "dry_run=true", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {said}\n")


@pytest.mark.parametrize("query", ["sig=sv2024abcdefabcdefabcdef", "X-Amz-Signature=abcdefabcdefabcdefabcd",
                                   "code=abcdefabcdefabcdefabcd", "x=1&session=abcdefabcdefabcdefabcd"])
def test_a_signed_or_keyed_url_is_refused(tmp_path, query):
    result = call_benchrun(f"runner.host='http://h:11434/?{query}'", "dry_run=true", cwd=tmp_path)
    name = query.split("&")[-1].split("=")[0]
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': runner.host: secrets are never taken from the config, where they would be "
        f"archived (a URL with a credential in its query string: {name}=); put an API key in an environment variable "
        "and name it with runner.api_key_env, and give URLs without user names or passwords\n"))


def test_a_url_query_of_no_credential_is_taken(tmp_path):
    """(In a value that may hold any text: a server's URL takes no query at all.)"""
    result = call_benchrun("runner.model='http://h:11434/?api-version=2024-02-01&codec=x'", "dry_run=true",
                           cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr


CHAT = tasks_yml({"name": "add", "template": "what is {a}?", "values": {"a": [1]}, "reference": ["1"],
                  "system": "=1+1 answer briefly", "fewshot": [{"user": "what is 0?", "assistant": '{"answer": "0"}'}]})


def test_export_text_holds_the_chat_asked(tmp_path):
    bench = write_bench(tmp_path, {"tasks.yml": CHAT})
    run_dir = make_run(tmp_path, f"task.path={bench}")
    result = audit_call(tmp_path, "export", str(run_dir), "--text", "--format", "jsonl")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["system"], r["fewshot"], r["prompt"]) for r in rows] == [
        ("=1+1 answer briefly", [{"assistant": '{"answer": "0"}', "user": "what is 0?"}], "what is 1?")] * 2
    result = audit_call(tmp_path, "export", str(run_dir), "--text")
    header, first = list(csv.reader(io.StringIO(result.stdout)))[:2]
    assert dict(zip(header, first))["system"] == "'=1+1 answer briefly"
    assert json.loads(dict(zip(header, first))["fewshot"]) == rows[0]["fewshot"]


class FailsOdd:
    """HTTP 400 for odd A until `fixed`, then half_right."""

    def __init__(self) -> None:
        self.fixed = False

    def __call__(self, req):
        if not self.fixed and int(req.prompt.split()[4]) % 2:
            return Reply(status=400, error="no")
        return half_right(req)


def test_retry_into_a_directory_it_cannot_take_names_into(tmp_path):
    responder = FailsOdd()
    with Lab(tmp_path, n=4, responder=responder) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [parent] = lab.run_dirs()
        responder.fixed = True
        (tmp_path / "afile").write_text("x")
        into_file = lab.call("retry", str(parent), "--into", "afile", module="benchrun.audit")
        into_run = lab.call("retry", str(parent), "--into", str(parent), module="benchrun.audit")
    run_id = load_run(parent).id
    assert [(r.returncode, r.stderr) for r in (into_file, into_run)] == [
        (EXIT["usage"], "benchrun: error: afile is not a directory; nothing was changed; pick a new directory "
                        "(--into DIR)\n"),
        (EXIT["usage"], f"benchrun: error: {parent} already holds run {run_id} (completed_with_errors); nothing was "
                        "changed; pick a new directory (--into DIR)\n")]
    assert (tmp_path / "afile").read_text() == "x"


def _fifo_in_place(run_dir: Path, name: str) -> Path:
    (run_dir / name).unlink()
    os.mkfifo(run_dir / name)
    return run_dir / name


PIPED = {  # file made a named pipe -> command, and what it says (a manifest in a pipe's place is no longer the run's,
    # which the reader says before it reads any: the twelfth pass)
    "run.json, verify": ("run.json", ("verify",), "in '{pipe}': a named pipe (FIFO), where a file belongs: benchrun "
                                                  "reads only regular files"),
    "manifest.json, export": ("manifest.json", ("export",), "in '{run_dir}': run {run_id}: manifest.json: a named "
                                                            "pipe (FIFO) in its place, so what it says cannot be "
                                                            "trusted; benchrun-audit verify {run_dir} says what "
                                                            "changed"),
    "run.lock, rescore": ("run.lock", ("rescore",), "in '{pipe}': a named pipe (FIFO), where the run's own file "
                                                    "belongs; benchrun writes only into its own files"),
}


@pytest.mark.parametrize("case", list(PIPED))
def test_an_archive_file_that_is_a_pipe_is_one_line(lab_run, tmp_path, case):
    name, command, said = PIPED[case]
    run_dir = _copy_of_the_lab_run(lab_run, tmp_path)
    run_id = load_run(run_dir).id
    pipe = _fifo_in_place(run_dir, name)
    result = audit(tmp_path, *command, str(run_dir))  # a process of its own: were it to wait on the pipe, it times out
    assert (result.returncode, result.stderr) == (
        EXIT["archive"], f"benchrun: error: {said.format(pipe=pipe, run_dir=run_dir, run_id=run_id)}\n")


def test_verify_names_a_pipe_where_a_record_file_was_and_list_keeps_the_run(lab_run, tmp_path):
    run_dir = _copy_of_the_lab_run(lab_run, tmp_path)
    info = load_run(run_dir).info
    _fifo_in_place(run_dir, "scores.jsonl")
    result = audit_call(tmp_path, "verify", str(run_dir))
    assert result.returncode == EXIT["not_intact"]
    assert [line for line in result.stdout.splitlines() if line.startswith("FAIL")] == [
        f"FAIL  scores.jsonl: a named pipe (FIFO) in its place ({info.files['scores.jsonl'].lines} lines, "
        f"{info.files['scores.jsonl'].size} bytes when the run finished)"]
    _fifo_in_place(run_dir, "run.json")
    listed = audit_call(tmp_path, "list", str(tmp_path / "outputs"), "--json")
    assert [(run["status"], run["reason"]) for run in json.loads(listed.stdout)] == [
        ("unreadable", f"in '{run_dir / 'run.json'}': a named pipe (FIFO), where a file belongs: benchrun reads only "
                       "regular files")]


def test_a_rescores_that_is_a_file_is_one_line(lab_run, tmp_path):
    run_dir = _copy_of_the_lab_run(lab_run, tmp_path)
    (run_dir / "rescores").write_text("mine")
    result = audit_call(tmp_path, "rescore", str(run_dir))
    assert (result.returncode, result.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir / 'rescores'}': a file, where the run's own folder belongs; benchrun writes "
        "only into its own folders\n"))
    assert (run_dir / "rescores").read_text() == "mine"


@pytest.mark.parametrize("value, shown", [("1e308", "1e+308"), ("NaN", "nan"), ("1" + "0" * 146, "an integer of 147 digits")])
def test_a_score_line_holding_what_no_scorer_can_give_is_refused_where_read(lab_run, tmp_path, value, shown):
    run_dir = _copy_of_the_lab_run(lab_run, tmp_path)
    scores = run_dir / "scores.jsonl"
    lines = scores.read_text().splitlines(keepends=True)
    lines[1] = re.sub(r'"times7":\s*\d+', f'"times7": {value}', lines[1])
    scores.write_text("".join(lines))
    said = (f"benchrun: error: in '{scores}': line 2: not a valid record: metrics.times7: a metric's value "
            f"is a finite number of magnitude at most 1e+100, not {shown}\n")
    result = audit_call(tmp_path, "rescore", "--force", str(run_dir))  # the others refuse a line that changed
    assert (result.returncode, result.stderr) == (EXIT["archive"], said)


KEY = "sk-test-0123456789abcdef"


@pytest.mark.parametrize("where", ["a data file's name", "a judge's rubric"])
def test_the_api_key_in_a_benchmark_is_refused_naming_what_holds_it(tmp_path, where):
    if where == "a data file's name":
        files = {"tasks.yml": tasks_yml({"name": "t", "template": "say {a}", "values_file": f"data/{KEY}.jsonl"}),
                 f"data/{KEY}.jsonl": '{"a": 1, "reference": "1"}\n'}
        holder, extra = "the name of file 2 of the benchmark (as the manifest lists them)", []
    else:
        files = {"tasks.yml": TASKS, "custom_response.py": RESPONSE, "judges.yml": JUDGES.replace("Question:", KEY)}
        holder, extra = "judge 1", ["judge.model=j"]
    bench = write_bench(tmp_path, files)
    result = call_benchrun(f"task.path={bench}", "dry_run=true", *extra, cwd=tmp_path, env={"OPENAI_API_KEY": KEY})
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: {holder} holds the value of $OPENAI_API_KEY, which the manifest would keep as written; "
        "take the key out of the benchmark\n"))


def test_files_saved_with_windows_line_ends_ask_what_they_ask_on_linux(tmp_path):
    """The one reader of benchmark files reads line ends as Python's text files do (the reader before it did)."""
    files = {"tasks/add/template.txt": "what is\r\n{a}?\r\n", "tasks/add/values.csv": "a,reference\r\n2,2\r\n",
             "tasks/add/info.yml": "description: \"one\r\n\r\n  two\"\r\n"}
    bench = tmp_path / "bench"
    for rel, text in files.items():
        (bench / rel).parent.mkdir(parents=True, exist_ok=True)
        (bench / rel).write_bytes(text.encode())
    manifest = compile(config(bench))
    assert ([s.prompt for s in manifest.samples], manifest.tasks[0].template, manifest.tasks[0].description) == (
        ["what is\n2?"], "what is\n{a}?", "one\ntwo")


def test_a_run_is_never_made_in_a_sweep_directory(tmp_path):
    sweep = make_run(tmp_path, "shards=2", multirun=True)
    before = sorted(p.name for p in sweep.iterdir())
    jobs = [str(job) for job in sorted(sweep.glob("*_shard-*"))]
    merged = audit_call(tmp_path, "merge", *jobs, "--into", str(sweep))
    assert (merged.returncode, merged.stderr) == (EXIT["usage"], (
        f"benchrun: error: {sweep} holds a sweep (its jobs' runs), which a run made there would hide; nothing was "
        "changed; pick a new directory (--into DIR)\n"))
    assert sorted(p.name for p in sweep.iterdir()) == before
    assert [run.path for run in expand_runs(sweep)] == [Path(job) for job in jobs]


def test_rescore_scorers_that_are_a_pipe_is_one_line(lab_run, tmp_path):
    run_dir = _copy_of_the_lab_run(lab_run, tmp_path)
    _pipe(tmp_path / "mine.py")
    result = audit_call(tmp_path, "rescore", str(run_dir), "--scorers", "mine.py")
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'mine.py': a named pipe (FIFO), where a file belongs: benchrun reads only regular "
        "files\n"))
    assert not (run_dir / "rescores").exists()


@pytest.mark.parametrize("command", ["export", "report"])
def test_an_output_with_no_name_is_a_directory(tmp_path, command):
    run_dir = synthetic_run(tmp_path / "run", [1, 0])
    result = audit_call(tmp_path, command, str(run_dir), "--output", "/")
    assert (result.returncode, result.stderr) == (EXIT["archive"], "benchrun: error: is a directory writing /\n")


def test_retry_passes_over_a_name_beside_the_parent_that_something_holds(tmp_path):
    responder = FailsOdd()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with Lab(tmp_path, n=4, responder=responder) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [parent] = lab.run_dirs()
        responder.fixed = True
        parent.with_name(parent.name + ".retry1").symlink_to(elsewhere)
        parent.with_name(parent.name + ".retry2").write_text("mine")
        result = lab.call("retry", str(parent), module="benchrun.audit")
    assert result.returncode == EXIT["ok"], result.stderr
    assert f"run directory: {parent}.retry3\n" in result.stdout
    assert list(elsewhere.iterdir()) == [] and parent.with_name(parent.name + ".retry2").read_text() == "mine"


def test_a_data_file_many_tasks_name_is_parsed_once(tmp_path, monkeypatch):
    from benchrun.compiler import data
    parsed = []
    real = data.read_jsonl
    monkeypatch.setattr(data, "read_jsonl", lambda path, *rest: parsed.append(path.name) or real(path, *rest))
    tasks = [{"name": f"t{i}", "template": "x {a}", "values_file": "data/v.jsonl",
              "fewshot": {"file": "data/s.jsonl", "n": 1}} for i in range(3)]
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml(*tasks), "data/s.jsonl": '{"user": "u", "assistant": "a"}\n',
                                   "data/v.jsonl": '{"a": 1, "reference": "1"}\n{"a": 2, "reference": "2"}\n'})
    manifest = compile(config(bench))
    assert sorted(parsed) == ["s.jsonl", "v.jsonl"]
    assert [(s.task, s.prompt, s.reference) for s in manifest.samples] == [
        (f"t{i}", f"x {a}", str(a)) for i in range(3) for a in (1, 2)]
    assert [len(task.fewshot) for task in manifest.tasks] == [1, 1, 1]


@pytest.mark.parametrize("case", ["a file", "a pipe", "a folder"])
def test_cache_of_what_is_no_cache_says_what_is_there(tmp_path, case):
    folder, database = tmp_path / "cache", tmp_path / "cache" / "responses.sqlite3"
    if case == "a file":
        folder.write_text("mine")
        found, kind, what = folder, "a file", "folder"
    else:
        folder.mkdir()
        _pipe(database) if case == "a pipe" else database.mkdir()
        found, kind, what = database, "a named pipe (FIFO)" if case == "a pipe" else "a directory", "database"
    for clear in ([], ["--clear"]):
        result = audit_call(tmp_path, "cache", "--cache-dir", str(folder), *clear)
        assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
            f"benchrun: error: --cache-dir: {found} is {kind}, where the response cache's {what} belongs\n"))


def test_rescore_refuses_records_that_do_not_verify_unless_forced(lab_run, tmp_path):
    run_dir = _copy_of_the_lab_run(lab_run, tmp_path)
    responses = run_dir / "responses.jsonl"
    responses.write_text(responses.read_text().replace('{\\"answer\\": 0}', '{\\"answer\\": 7}', 1))
    refused = audit_call(tmp_path, "rescore", str(run_dir))
    assert (refused.returncode, refused.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': responses.jsonl: line 1 is not the line written; rescore with --force to "
        "score its records anyway (recorded in rescore.json)\n"))
    assert not (run_dir / "rescores").exists()
    forced = audit_call(tmp_path, "rescore", str(run_dir), "--force")
    assert forced.returncode == EXIT["ok"], forced.stderr
    kept = json.loads((run_dir / "rescores" / "001" / "rescore.json").read_text())
    assert kept["unverified"] == ["responses.jsonl: line 1 is not the line written"]
