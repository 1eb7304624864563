"""Hostile input, twentieth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- `merge` of shard runs asked with other limits (shard 2/2 with `runner.retries=0 runner.max_response_bytes=1100
  runner.timeout_s=5`, as a slower node's run would be): the merged run.json's `runner` is the first shard's, and
  nothing said that half its answers were asked otherwise; the same of a judge's limits (`+judge.retries=0`). Now each
  shard's runner and judge runner are kept (`merged.shards[].runner`, `judge_runner`, `audit.merge`) and `show` and
  the report say where they differ (`shards asked with`, `audit.heading.parts`)
- `merge` of a shard retried with `--force` after the benchmark's scorer changed (its new answers graded by code the
  manifest does not name): the merged run's history is made fresh, and nothing in it said so. Now each shard's history
  is kept (`merged.shards[].history`) and `shards forced  2/2 retry --force (changed sources: custom_scorer.py
  (changed))` says it (`audit.heading._forced`)
- `benchrun-audit cache` of a cache on a read-only medium whose write-ahead log holds entries (its writer killed, a
  cache copied as it was written): SQLite's `immutable=1` passes the log over, so it listed `0 entries` of a cache of
  three. Now the log is read (`mode=ro`, beside its -shm file), and without its -shm file, where SQLite cannot read
  it, one line says so (`audit.cache._logged`)
- `rescore RUN` after the benchmark's scorer changed (verify: `sources custom_scorer.py: changed since the run`):
  `10 sample values changed` and nothing saying that a scorer's code was not the run's (rescore.json kept both
  digests; the printout said so of the modules scorers import, since pass 16, not of the scorers). Now `scorers whose
  code is not the run's: calculated_answer` (`audit.rescored.print_rescore`)
- `retry .` in a run's directory: a `ValueError: PosixPath('.') has an empty name` traceback (`RUN/.` and `RUN/`
  were taken); `merge S1 S2 --into .` in an empty folder: refused as `. holds the run directory ..merging-…: a run is
  never made around another run's files` (its own hidden folder, made in `.` rather than beside it), where `--into
  "$PWD"` merged. Now both name the folder `.` names (`audit.retry._beside`, `audit.merge._write`)
- a retry killed (SIGKILL, the OOM killer) as it carried its parent's answers over, then resumed: the resume asked the
  rest of the model, and the retry said `(5 answers carried over, 1 sample asked again)` (and its `carried_by`, whose
  lines show attributes to the parent's sessions) though it carried 2 and asked 4; verify intact. Now the resume cuts
  the claims to what was carried (`archive.sessions.carry_cut`, from `audit.resume._reopen`), keeping what they said
  (`carry_cut` in the retry's note)
- `merge` of a shard run killed (SIGKILL: run.json `running`, its writer dead): `is running: merge it once it has
  ended`, which it never would. Now `it has not finished; finish it with benchrun-audit resume SHARD`, as retry said
  of a parent (`archive.trust.not_finished`, shared by `audit.merge` and `audit.retry`)

What held is in the pass's note.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.cache import DB_FILE
from benchrun.testing.inprocess import cli
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import BROKEN, broken_answer, listbench_answer
from tests.helpers.archives import left_by_dead_writer
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import run_dir_of, run_in_process
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def rows(cwd: Path, run_dir: Path, name: str) -> list[str]:
    """`show`'s rows of `name` (a row folded over lines joined), spaces squeezed."""
    shown = audit(cwd, "show", str(run_dir))
    assert shown.returncode == EXIT["ok"], shown.stderr
    found, taking = [], False
    for line in shown.stdout.splitlines():
        if line.startswith(name):
            found.append(line[len(name):].strip())
            taking = True
        elif taking and line.startswith(" ") and line.strip():
            found[-1] += " " + line.strip()
        else:
            taking = False
    return [" ".join(text.split()) for text in found]


# -- a merge of shards asked with other limits ---------------------------------------------------------------------

@pytest.mark.slow
def test_a_merge_of_shards_asked_with_other_limits_says_each_shards(tmp_path):
    """The merged run's runner was the first shard's (retries=2, max_response_bytes=8388608); nothing said that the
    second shard's nine answers were asked with retries=0 and max_response_bytes=1100."""
    first = run_in_process(tmp_path, "s1", "shard=1/2")
    second = run_in_process(tmp_path, "s2", "shard=2/2", "runner.retries=0", "runner.max_response_bytes=1100")
    merged = audit(tmp_path, "merge", str(first), str(second), "--into", str(tmp_path / "merged"))
    assert merged.returncode == EXIT["ok"], merged.stderr
    shards = json.loads((tmp_path / "merged" / "run.json").read_text())["merged"]["shards"]
    assert [(s["runner"]["retries"], s["runner"]["max_response_bytes"]) for s in shards] == [(2, 8388608), (0, 1100)]
    hosts = [json.loads((run / "run.json").read_text())["runner"]["host"] for run in (first, second)]
    assert rows(tmp_path, tmp_path / "merged", "shards asked with") == [
        f"1/2 retries=2 max_response_bytes=8388608 host={hosts[0]} 2/2 retries=0 max_response_bytes=1100 "
        f"host={hosts[1]}"]
    page = audit(tmp_path, "report", str(tmp_path / "merged"), "--output", str(tmp_path / "report.html"))
    assert page.returncode == EXIT["ok"], page.stderr
    assert (f"shards asked with</td><td><pre>1/2 retries=2 max_response_bytes=8388608 host={hosts[0]}  2/2 retries=0 "
            f"max_response_bytes=1100 host={hosts[1]}</pre>") in (tmp_path / "report.html").read_text()
    assert audit(tmp_path, "verify", str(tmp_path / "merged")).stdout.splitlines()[-1] == "intact"




@pytest.mark.slow
def test_a_merge_of_shards_graded_with_other_judge_limits_says_each_shards(tmp_path):
    """The merged run's judge runner was the first shard's (retries=2); the second shard's grades were asked with
    retries=0."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    shards = []
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        for shard, more in (("1/2", ()), ("2/2", ("+judge.retries=0",))):
            ran = cli(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                      f"shard={shard}", *more, f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
            assert ran.returncode == EXIT["ok"], ran.stderr
            shards.append(run_dir_of(ran.stdout))
    merged = audit(tmp_path, "merge", *map(str, shards), "--into", str(tmp_path / "merged"))
    assert merged.returncode == EXIT["ok"], merged.stderr
    assert rows(tmp_path, tmp_path / "merged", "shards asked with") == ["1/2 judge.retries=2 2/2 judge.retries=0"]


@pytest.mark.slow
def test_a_merge_of_a_shard_retried_by_force_says_so(tmp_path):
    """Shard 2/2 retried with --force past a changed scorer: the merged run said nothing of it (its history is its
    own, made fresh)."""
    shutil.copytree(Path(__file__).parents[1] / "benchrun" / "demos" / "listbench", tmp_path / "bench")
    shards = [run_in_process(tmp_path, f"s{i}", f"shard={i}/2", "task.path=bench", "runner.retries=0",
                             responder=broken_answer) for i in (1, 2)]
    scorer = tmp_path / "bench" / "custom_scorer.py"
    scorer.write_text(scorer.read_text().replace("return int(ref ==", "return 0.5 * int(ref =="))
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        retried = audit(tmp_path, "retry", str(shards[1]), "--force", "--host", server.url)
    assert retried.returncode == EXIT["ok"], retried.stderr
    merged = audit(tmp_path, "merge", str(shards[0]), f"{shards[1]}.retry1", "--into", str(tmp_path / "merged"))
    assert merged.returncode == EXIT["ok"], merged.stderr
    assert rows(tmp_path, tmp_path / "merged", "shards forced") == [
        "2/2 retry --force (changed sources: custom_scorer.py (changed))"]

# -- a cache whose write-ahead log holds entries, on a read-only medium ---------------------------------------------

KILLED_WRITER = """
import os, sys
from pathlib import Path
from benchrun.execute.cache import Store
from tests.helpers.cacheentry import entry
store = Store(Path(sys.argv[1]))
for n, model in enumerate(("llama3.2", "llama3.2", "gemma3")):
    store.put(f"k{n}", entry(model=model, digest="sha256:" + ("ab" if n < 2 else "cd") * 32))
os._exit(0)
"""
"""A run's cache writer killed after three answers: its database and the write-ahead log that holds them."""


@contextlib.contextmanager
def read_only(folder: Path):
    """`folder` seen through a read-only bind mount (`mount -o bind,ro`: root only)."""
    mount = folder.with_name(folder.name + "-ro")
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-o", "bind,ro", folder, mount], capture_output=True).returncode:
        pytest.skip("a read-only bind mount needs root, and a machine that can make one")
    try:
        yield mount
    finally:
        subprocess.run(["umount", mount], check=True)


@pytest.fixture
def logged_cache(tmp_path) -> Path:
    cache = tmp_path / "cache"
    subprocess.run([sys.executable, "-c", KILLED_WRITER, str(cache)], check=True, cwd=Path(__file__).parents[1])
    assert (cache / f"{DB_FILE}-wal").stat().st_size > 0
    return cache


@pytest.mark.slow
def test_a_cache_whose_log_holds_its_entries_is_listed_whole_from_a_read_only_medium(tmp_path, logged_cache):
    """Listed `0 entries` (SQLite's immutable=1 reads the database file alone) of a cache of three."""
    with read_only(logged_cache) as mount:
        shown = audit(tmp_path, "cache", "--cache-dir", str(mount), "--json")
    assert shown.returncode == EXIT["ok"], shown.stderr
    listed = json.loads(shown.stdout)
    assert (listed["entries"], [(m["model"], m["entries"]) for m in listed["models"]]) == (
        3, [("gemma3", 1), ("llama3.2", 2)])


@pytest.mark.slow
def test_a_cache_whose_log_cannot_be_read_on_a_read_only_medium_says_so(tmp_path, logged_cache):
    """Without its -shm file SQLite cannot read the log in a folder it may not write: it was listed as none."""
    (logged_cache / f"{DB_FILE}-shm").unlink()
    with read_only(logged_cache) as mount:
        shown = audit(tmp_path, "cache", "--cache-dir", str(mount))
    database = mount / DB_FILE
    assert (shown.returncode, shown.stdout, shown.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: --cache-dir: the response cache at {database} has entries in its write-ahead log "
        f"({database}-wal), which SQLite reads only beside its -shm file or in a folder it may write, and it may not "
        "write this one: list a copy of the folder (cp -r)\n"))


# -- a rescore by a scorer that changed since the run --------------------------------------------------------------

@pytest.mark.slow
def test_a_rescore_says_which_scorers_code_is_not_the_runs(tmp_path):
    """The benchmark's calculated_answer halved after the run: the rescore printed ten changed values and nothing
    saying that the scorer was not the run's."""
    shutil.copytree(Path(__file__).parents[1] / "benchrun" / "demos" / "listbench", tmp_path / "bench")
    run_dir = run_in_process(tmp_path, "run", "task.path=bench")
    same = audit(tmp_path, "rescore", str(run_dir))
    scorer = tmp_path / "bench" / "custom_scorer.py"
    scorer.write_text(scorer.read_text().replace("return int(ref ==", "return 0.5 * int(ref =="))
    halved = audit(tmp_path, "rescore", str(run_dir))
    assert (same.returncode, halved.returncode) == (EXIT["ok"], EXIT["ok"]), halved.stderr
    assert same.stdout.splitlines()[-3:-1] == ["0 sample values changed", "0 scorer errors"]
    assert [line for line in halved.stdout.splitlines() if not line.startswith(" ")][-4:-1] == [
        "10 sample values changed", "0 scorer errors", "scorers whose code is not the run's: calculated_answer"]


# -- a run named `.` -------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_retry_of_the_run_in_the_working_directory_is_made_beside_it(tmp_path):
    """`retry .` in the run's directory: `ValueError: PosixPath('.') has an empty name`, a traceback."""
    parent = run_in_process(tmp_path, "parent", *BROKEN, responder=broken_answer)
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        retried = audit(parent, "retry", ".", "--host", server.url)
    assert (retried.returncode, retried.stderr) == (EXIT["ok"], "")
    assert retried.stdout.splitlines()[-1] == (f"retry of run {json.loads((parent / 'run.json').read_text())['run_id']}"
                                               ": 5 answers carried over, 1 sample asked again")
    assert sorted(p.name for p in parent.parent.iterdir()) == ["parent", "parent.retry1"]


@pytest.mark.slow
def test_a_merge_into_the_empty_working_directory_is_made_there(tmp_path):
    """`merge S1 S2 --into .` in an empty folder: `. holds the run directory ..merging-…: a run is never made around
    another run's files` (its own hidden folder, made in `.` and not beside it); `--into "$PWD"` merged."""
    shards = [run_in_process(tmp_path, f"s{i}", f"shard={i}/2") for i in (1, 2)]
    (tmp_path / "merged").mkdir()
    merged = audit(tmp_path / "merged", "merge", *map(str, shards), "--into", ".")
    assert (merged.returncode, merged.stderr) == (EXIT["ok"], "")
    assert json.loads((tmp_path / "merged" / "run.json").read_text())["counts"]["responses"] == 18
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


# -- a retry killed as it carried its parent's answers over ----------------------------------------------------------

KILLED_CARRYING = """
import os, signal, sys
from benchrun.archive.writer import RunWriter
from benchrun.audit.__main__ import main
record, carried = RunWriter.record, []
def killed_after_two(self, *args, **kwargs):
    carried.append(1)
    if len(carried) > 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return record(self, *args, **kwargs)
RunWriter.record = killed_after_two
sys.argv = ["benchrun-audit", *sys.argv[1:]]
sys.exit(main())
"""
"""`benchrun-audit ARGS`, killed by SIGKILL as it records its third answer (a retry: as it carries it over)."""


@pytest.mark.slow
def test_a_retry_killed_as_it_carried_says_what_it_carried_once_resumed(tmp_path):
    """Killed after carrying 2 of its parent's 5 answers, then resumed (the other 4 asked of the model): it said
    `5 answers carried over, 1 sample asked again` and its carried_by gave 5 lines to the parent's session."""
    parent = run_in_process(tmp_path, "parent", *BROKEN, responder=broken_answer)
    retry = parent.with_name("parent.retry1")
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        killed = subprocess.run([sys.executable, "-c", KILLED_CARRYING, "retry", str(parent), "--host", server.url],
                                cwd=Path(__file__).parents[1], capture_output=True, text=True)
        assert killed.returncode == -9, killed.stderr
        resumed = audit(tmp_path, "resume", str(retry), "--host", server.url)
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    info = json.loads((retry / "run.json").read_text())
    responses = [json.loads(line) for line in (retry / "responses.jsonl").read_text().splitlines()]
    parent_id = json.loads((parent / "run.json").read_text())["run_id"]
    assert [r["carried_from"] for r in responses] == [parent_id] * 2 + [None] * 4
    assert (info["parent"]["carried"], info["parent"]["asked"]) == (2, 4)
    note, entry = info["history"]
    assert ([s["answers"] for s in note["carried_by"]], note["carry_cut"]) == ([2], {"planned": 5, "carried": 2})
    assert (entry["answers"], entry["kept"]) == (0, 2)
    assert rows(tmp_path, retry, "retry of") == [f"{parent_id} {parent} (2 answers carried over, 4 samples asked again)"]
    assert audit(tmp_path, "verify", str(retry)).stdout.splitlines()[-1] == "intact"


# -- a merge of a killed shard -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_merge_of_a_killed_shard_says_to_resume_it(tmp_path):
    """A shard run killed (SIGKILL: run.json `running`, no seal, its dead writer's note in run.lock): `is running:
    merge it once it has ended`, which no waiting brings about."""
    shards = [run_in_process(tmp_path, f"s{i}", f"shard={i}/2") for i in (1, 2)]
    info = json.loads((shards[1] / "run.json").read_text())
    (shards[1] / "run.json").write_text(json.dumps({**info, "status": "running", "ended_at": None, "files": {}}))
    (shards[1] / "seal.json").unlink()
    left_by_dead_writer(shards[1])
    merged = audit(tmp_path, "merge", *map(str, shards), "--into", str(tmp_path / "merged"))
    assert (merged.returncode, merged.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{shards[1]}': run {info['run_id']} (shard 2/2) is running: it has not finished; finish "
        f"it with benchrun-audit resume {shards[1]}\n"))
    assert not (tmp_path / "merged").exists()
