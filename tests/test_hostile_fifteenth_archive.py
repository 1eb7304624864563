"""Hostile input, fifteenth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- a file of a run's own names that the run never wrote, put in its directory after it ended: a `judgements.jsonl`
  beside a sealed run without judges, or records (responses.jsonl, scores.jsonl, a manifest.json) beside a sealed
  run that failed before it compiled. `verify` said `intact`, `show` of the run that never compiled printed the
  planted scores as its metrics, `merge` of a shard run with planted judge calls (and `retry --force`) ended in a
  KeyError traceback ('judgements.jsonl') and `resume` sealed an interrupted run beside them. Now a run that ended
  names in its final digests every file it wrote, and one its writer sealed before it compiled wrote no manifest and
  no records, so any other file of those names is none of the run's (`archive.trust.strays`): verify fails naming
  it, every reader, retry and merge refuse the run, resume refuses to seal beside it; and judge calls are read only
  of a run with judges (`archive.reader.Run.judgements`)
- `merge` of shard runs graded by two judge models of one name (the judge pulled again between them): merged, naming
  the first shard's judge for every grade. Now refused as shards of two models are (`audit.merge._same_split`)
- a live writer told by the wall clock: a clock stepped forward after the writer took run.lock made a copy of the run
  being written look killed (`verify`: `finish it with: benchrun-audit resume COPY`, and resume asked the rest beside
  the live run); one stepped back made a later process holding a killed writer's pid look like the writer. Now
  run.lock's note holds the writer's boot id and start in clock ticks (`archive.dirlock._process`), which no clock
  step changes
- a writer that could not end its run (its directory moved while it wrote) emptied run.lock's note as one that ended
  it does, so verify called run.json edited. Now it leaves its note, as a killed writer's (`DirLock.release(stopped=)`)
- `retry` of a run being written advised `benchrun-audit resume`, which refuses it; now it says to wait
- a resume the disk refused (no room for the writer's reserve) removed the seal first, then failed, leaving part of
  `.reserve`: the untouched run was refused by every reader as edited. Now the seal goes only once run.json says
  `running` (`audit.resume._reopen`), and a refused reserve leaves nothing (`RunWriter._reserve`)
- a model's `identity.details` that is not a mapping (a sealed run.json so written): `show` and `report` an
  AttributeError traceback. Now run.json is unreadable in one line (`core.recordvalues._identity`)
- `resume --force` onto a judge model pulled again replaced run.json's judge and kept no trace of the judge that
  graded before. Now the history entry keeps it (`judge_identity`), `show` and `compare` say `grades from 2 judge
  models: ...`, and merge refuses such a shard (`archive.sessions.mixed_judges`)
- a sealed manifest (its id made to match) whose `files` is no list (verify: TypeError traceback), whose format schema
  refers outside itself (`rescore` fetched the URL it named), or whose samples name a task it does not have
  (`rescore`: KeyError traceback): one line each, nothing fetched (`core.manifest`: `FormatSpec`'s
  `_self_contained`, the Manifest's `_samples_of_its_tasks`; `audit.verify.manifest_files`)

What held is in the pass's note (fuzzers of run.json, summary.json and rescore.json over every audit command, merges
of hostile combinations, inode exhaustion, chattr +a/+i, a SIGSTOPped writer, output to /dev/full).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from benchrun.archive.dirlock import DirLock
from benchrun.archive.reader import load_run
from benchrun.archive.writer import RunWriter, now
from benchrun.audit import metric_rows, resume_run, verify_run
from benchrun.audit.retry import retry_run
from benchrun.core.errors import EXIT, ArchiveError, WriteFailed
from benchrun.core.records import Counts, JudgementRecord, RunInfo
from benchrun.core.text import host_name
from benchrun.testing.chat import Reply
from benchrun.testing.inprocess import child_env, cli
from benchrun.testing.ollama_server import FakeOllama, fake_digest
from benchrun.testing.small_disk import can_mount, fill, small_disk
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import DEAD_WRITER, another_run, replace_manifest, reseal, synthetic_run
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.sealed import interrupted_run

ENDED = ("not the run's: the run ended ({}), and the final digests in run.json, which name every file it wrote, do "
         "not name it; it was put there since")
NEVER_COMPILED = ("not the run's: the run ended (failed) before it compiled, and wrote no manifest and no records; it "
                  "was put there since")


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


def plant_judge_call(run_dir: Path, sample: str, task: str) -> None:
    """A judge call no judge made, written into `run_dir`'s judgements.jsonl."""
    call = JudgementRecord(id=sample, task=task, judge="names", judge_repeat=0, messages=[], reply='{"v": 1}',
                           grade="right", value=1, seconds=0.1, attempts=1)
    (run_dir / "judgements.jsonl").write_text(call.model_dump_json() + "\n")


def failed_before_it_compiled(run_dir: Path) -> Path:
    """A sealed run that failed before it compiled (a sweep job whose config was refused): run.json, config.yaml and
    the seal, no manifest and no records."""
    info = RunInfo(run_id="6" * 12, model="m", status="running", started_at=now(), benchmark="b", manifest_id=None,
                   runner={}, environment={}, counts=Counts(samples=0))
    writer = RunWriter.create(run_dir, info)
    writer.start("task: {path: nowhere}\n")
    writer.finish("failed", "task.only: no task named 'x'")
    writer.release()
    return run_dir


# -- files a run never wrote -----------------------------------------------------------------------------------------

def test_judge_calls_put_beside_a_run_without_judges_are_none_of_the_runs(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    assert verify_run(load_run(run_dir)).intact
    plant_judge_call(run_dir, "t:a=0", "t")
    verdict = verify_run(load_run(run_dir))
    assert [(f.file, f.message) for f in verdict.problems] == [("judgements.jsonl", ENDED.format("completed"))]
    with pytest.raises(ArchiveError) as refused:
        metric_rows(load_run(run_dir))
    assert str(refused.value) == (f"in '{run_dir}': run 555555555555: judgements.jsonl: {ENDED.format('completed')}, "
                                  f"so what it says cannot be trusted; benchrun-audit verify {run_dir} says what "
                                  "changed")


def test_records_put_beside_a_run_that_failed_before_it_compiled_are_none_of_the_runs(tmp_path):
    """`show` printed the planted scores as the metrics of a run that asked nothing, and verify said intact."""
    donor = synthetic_run(tmp_path / "donor", [1.0, 1.0])
    run_dir = failed_before_it_compiled(tmp_path / "run")
    assert verify_run(load_run(run_dir)).intact
    for name in ("manifest.json", "responses.jsonl", "scores.jsonl"):
        (run_dir / name).write_bytes((donor / name).read_bytes())
    verdict = verify_run(load_run(run_dir))
    assert [(f.file, f.message) for f in verdict.problems] == [
        (name, NEVER_COMPILED) for name in ("manifest.json", "responses.jsonl", "scores.jsonl")]
    with pytest.raises(ArchiveError, match="manifest.json: not the run's: the run ended"):
        metric_rows(load_run(run_dir))


def test_an_interrupted_run_is_not_sealed_beside_judge_calls_it_never_made(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0], status="interrupted")
    plant_judge_call(run_dir, "t:a=0", "t")
    before = {path.name: path.read_bytes() for path in run_dir.iterdir()}
    with pytest.raises(ArchiveError) as refused:
        resume_run(load_run(run_dir))
    assert str(refused.value) == (f"in '{run_dir / 'judgements.jsonl'}': {ENDED.format('interrupted')}: a resume would "
                                  "seal the run beside it; move it out of the run's directory, then resume")
    assert {path.name: path.read_bytes() for path in run_dir.iterdir()} == before


def shard_runs(tmp_path: Path, digests: list[dict[str, str]], bench: tuple[str, ...] = (),
               models: tuple[str, ...] = ("llama3.2",), responder=listbench_answer) -> list[Path]:
    """The runs of shards 1/2 and 2/2, each against a fresh loopback Ollama whose models have `digests`."""
    found = []
    for shard, digest in zip(("1/2", "2/2"), digests):
        with FakeOllama(models=list(models), responder=responder, digests=digest) as server:
            made = cli(f"runner.host={server.url}", "cache=false", f"outputs={tmp_path / 'outputs'}", *bench,
                       f"shard={shard}", cwd=tmp_path)
        assert made.returncode == EXIT["ok"], made.stderr
        found.append(run_dir_of(made.stdout))
    return found


@pytest.mark.slow
def test_a_shard_with_judge_calls_it_never_made_is_not_merged(tmp_path):
    """merge ended in a KeyError traceback (the merged run has no judgements.jsonl to append them to)."""
    first, second = shard_runs(tmp_path, [{}, {}])
    sample = json.loads((first / "responses.jsonl").read_text().splitlines()[0])
    plant_judge_call(first, sample["id"], sample["task"])
    merged = audit(tmp_path, "merge", str(first), str(second), "--into", str(tmp_path / "merged"))
    run_id = json.loads((first / "run.json").read_text())["run_id"]
    assert (merged.returncode, merged.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{first}': run {run_id} (shard 1/2) does not verify: judgements.jsonl: "
        f"{ENDED.format('completed')}\n"))
    assert not (tmp_path / "merged").exists()


# -- merging what two judge models graded ----------------------------------------------------------------------------

@pytest.mark.slow
def test_shards_graded_by_two_judge_models_of_one_name_are_not_merged(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    first, second = shard_runs(tmp_path, [{}, {"qwen2.5": "f" * 64}], ("task.path=bench", "judge.model=qwen2.5"),
                               ("llama3.2", "qwen2.5"), answer)
    merged = audit(tmp_path, "merge", str(first), str(second), "--into", str(tmp_path / "merged"))
    ids = [json.loads((run / "run.json").read_text())["run_id"] for run in (first, second)]
    digest = json.loads((first / "run.json").read_text())["judge"]["identity"]["digest"]
    assert (merged.returncode, merged.stderr) == (EXIT["archive"], (
        f"benchrun: error: shard runs {ids[0]} (1/2) and {ids[1]} (2/2) were graded by different judge models: digest "
        f"{digest[:12]} and digest ffffffffffff; a merged run names one judge model for every grade\n"))
    assert not (tmp_path / "merged").exists()


# -- a writer known by its process, not by the clock -----------------------------------------------------------------

def process_of(pid: int) -> tuple[str, int, float]:
    """The boot id of this machine, the start of process `pid` in clock ticks since boot, and that start on the wall
    clock as it reads now."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    started = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    btime = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                 if line.startswith("btime "))
    return boot, started, btime + started / os.sysconf("SC_CLK_TCK")


def leave_note(run_dir: Path, pid: int, since: float, boot: str, started: int) -> None:
    """run.lock's note as the writer `pid` left it, at `since` on its clock."""
    note = {"pid": pid, "host": host_name(), "command": "python -m benchrun", "boot": boot,
            "started": started, "since": datetime.fromtimestamp(since, timezone.utc).isoformat(timespec="seconds")}
    (run_dir / "run.lock").write_text(json.dumps(note))


@pytest.fixture
def live_process():
    process = subprocess.Popen(["sleep", "60"])
    yield process.pid
    process.kill()
    process.wait()


@pytest.mark.slow
def test_a_copy_of_a_run_being_written_is_known_after_the_clock_stepped_forward(tmp_path, live_process):
    """The wall clock stepped forward an hour (an NTP step, a virtual machine restored) after the writer took its lock:
    its start, read against the stepped clock, came after the note's `since`, so verify called the copy a killed
    run, with `finish it with: benchrun-audit resume COPY`, and resume asked the rest again beside the live run."""
    copy = synthetic_run(tmp_path / "copy", [1.0], finish=False)
    boot, started, wall = process_of(live_process)
    leave_note(copy, live_process, wall - 3600, boot, started)
    [finding] = [f for f in verify_run(load_run(copy)).problems if f.file == "run.json"]
    assert f"its writer (pid {live_process} on host {host_name()} since " in finding.message
    assert "is still running but holds no lock here: this directory is a copy of its run" in finding.message
    before = {path.name: path.read_bytes() for path in copy.iterdir()}
    with pytest.raises(ArchiveError, match="this directory is a copy of its run.*finish the run where it is written"):
        resume_run(load_run(copy))
    assert {path.name: path.read_bytes() for path in copy.iterdir()} == before


@pytest.mark.slow
def test_a_killed_writers_pid_taken_by_another_process_is_no_writer_whatever_the_clock_said(tmp_path, live_process):
    """The writer was killed, and its pid taken by a later process; the note's `since` was written by a clock an hour
    ahead (stepped back since): the later process seemed to have started before the note, so the killed run was
    called a copy of a live one, and resume refused it for as long as that process ran."""
    run_dir = synthetic_run(tmp_path / "run", [1.0], finish=False)
    boot, started, wall = process_of(live_process)
    leave_note(run_dir, live_process, wall + 3600, boot, started + 1)
    [finding] = [f for f in verify_run(load_run(run_dir)).problems if f.file == "run.json"]
    assert finding.message.endswith(f"stopped before the run ended (killed, or its disk failed); finish it with: "
                                    f"benchrun-audit resume {run_dir} (record lines checked against records.sha256 "
                                    "only)")


# -- a writer that could not end its run -----------------------------------------------------------------------------

@pytest.mark.slow
def test_a_run_whose_directory_moved_while_it_wrote_is_a_stopped_writers_not_an_edited_one(tmp_path):
    """The run's directory moved (mv) while it was written: the records went on into the moved directory, summary.json
    could not be written where the run had been, and the writer, which had not ended the run, emptied run.lock's note
    as one that ended it does, so verify said `its last writer let go of it cleanly, which a writer does once the run
    has ended: run.json was edited`, an accusation of tampering with no way on."""
    run_dir, moved = tmp_path / "run", tmp_path / "moved"
    with FakeOllama(models=["llama3.2"], responder=listbench_answer, latency_s=0.5) as server:
        writer = subprocess.Popen([sys.executable, "-m", "benchrun", f"runner.host={server.url}", "cache=false",
                                   "task.only=[product]", f"hydra.run.dir={run_dir}"], cwd=tmp_path, env=child_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while not (run_dir / "responses.jsonl").is_file() or not (run_dir / "responses.jsonl").read_bytes():
            assert writer.poll() is None, writer.communicate()
            time.sleep(0.02)
        run_dir.rename(moved)
        _, stderr = writer.communicate(timeout=120)
    assert (writer.returncode, stderr) == (EXIT["archive"], f"benchrun: error: no such file or directory writing "
                                                            f"{run_dir}/summary.json\n")
    [finding] = [f for f in verify_run(load_run(moved)).problems if f.file == "run.json"]
    assert f"its writer (pid {writer.pid} on host " in finding.message
    assert finding.message.endswith(f"since {json.loads((moved / 'run.lock').read_text())['since']}) stopped before "
                                    f"the run ended (killed, or its disk failed); finish it with: benchrun-audit "
                                    f"resume {moved} (record lines checked against records.sha256 only)")


def test_retry_of_a_run_being_written_says_to_wait_not_to_resume_it(tmp_path):
    """retry of a run whose writer lives (asking, or stopped with SIGSTOP) said `finish it with benchrun-audit resume
    RUN`, which refuses it: `another process is writing this run`."""
    run_dir = synthetic_run(tmp_path / "run", [1.0], finish=False)
    lock = DirLock(run_dir).acquire()
    try:
        note = json.loads((run_dir / "run.lock").read_text())
        with pytest.raises(ArchiveError) as refused:
            retry_run(load_run(run_dir))
    finally:
        lock.release()
    took = f"pid {DEAD_WRITER['pid']} on host {DEAD_WRITER['host']} since {DEAD_WRITER['since']}"  # its lock's note
    assert str(refused.value) == (f"in '{run_dir}': run 555555555555 is running: it has not finished; it is being "
                                  f"written (pid {os.getpid()} on host {host_name()} since {note['since']}, which "
                                  f"took the run over from {took}): retry it once it has ended")


# -- a resume the disk refuses ---------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(not can_mount(), reason="a small disk is mounted for it (needs root)")
def test_a_resume_the_disk_refuses_leaves_the_run_sealed_as_it_was(tmp_path):
    """An interrupted run (sealed) resumed on a disk with less room than a writer's reserve: the resume removed the
    seal, then failed writing `.reserve` (leaving the part it wrote), so the run, which it had not changed, was one
    every reader refused as if edited (`seal.json: missing: the run ended (interrupted) but nothing covers
    run.json`), and verify gave no way on."""
    with small_disk(tmp_path / "disk", 256) as disk:
        with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
            run_dir = interrupted_run(disk / "run", server.url, tmp_path)
            fill(disk / "filler")
            os.truncate(disk / "filler", (disk / "filler").stat().st_size - 16384)
            before = {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}
            with pytest.raises(WriteFailed) as refused:
                resume_run(load_run(run_dir), host=server.url)
        assert str(refused.value) == f"disk full writing {run_dir}/.reserve"
        assert {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()} == before
        assert verify_run(load_run(run_dir)).intact


# -- run.json's shapes -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("details", ["x", 5, [["family", "llama"]]])
def test_a_models_details_that_are_not_a_mapping_make_run_json_unreadable(tmp_path, details):
    """identity.details as text, a number or a list (a sealed run.json so written): `show` and `report` an
    AttributeError traceback (`'str' object has no attribute 'items'`), though list and verify read the run."""
    run_dir = synthetic_run(tmp_path / "run", [1.0], identity={"digest": "a" * 64, "details": {"family": "llama"}})
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "identity": {**info["identity"], "details": details}}))
    reseal(run_dir)
    with pytest.raises(ArchiveError) as refused:
        load_run(run_dir)
    assert str(refused.value) == (f"in '{run_dir / 'run.json'}': unreadable: identity: details: not a "
                                  "mapping")


# -- a judge model pulled again before a forced resume ---------------------------------------------------------------

@pytest.mark.slow
def test_a_forced_resume_onto_another_judge_model_keeps_which_judge_graded_before(tmp_path):
    """resume --force onto a judge model pulled again: run.json's `judge` was replaced by the new judge's identity and
    the resume's history entry kept only the model's, so the run said the new judge graded every answer, the first
    session's grades included (the README's "--force never erases a fact already recorded", for the model only)."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        made = cli(f"runner.host={server.url}", "task.path=bench", "judge.model=qwen2.5", "cache=false",
                   f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert made.returncode == EXIT["ok"], made.stderr
    run_dir = run_dir_of(made.stdout)
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "status": "interrupted"}, indent=2))
    reseal(run_dir)
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer, digests={"qwen2.5": "f" * 64},
                    port=int(server.url.rsplit(":", 1)[1])) as again:
        resumed = audit(tmp_path, "resume", str(run_dir), "--host", again.url, "--force")
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    [entry] = json.loads((run_dir / "run.json").read_text())["history"]
    assert entry["judge_identity"]["digest"] == fake_digest("qwen2.5")
    shown = audit(tmp_path, "show", str(run_dir)).stdout
    assert f"graded by    grades from 2 judge models: {fake_digest('qwen2.5')[:12]}, then ffffffffffff" in shown
    copy = another_run(run_dir, tmp_path / "copy")  # a run is compared with another run
    compared = audit(tmp_path, "compare", str(run_dir), str(copy)).stdout.splitlines()[0]
    assert compared.endswith(f"): grades from 2 judge models: {fake_digest('qwen2.5')[:12]}, then ffffffffffff")


@pytest.mark.parametrize("files", [None, 5, True])
def test_a_manifest_whose_files_are_no_list_is_verified_without_a_traceback(tmp_path, files):
    """A manifest.json that hashes to its run's id (resealed) but whose `files` is null or a number: verify's check of
    the benchmark's sources raised `TypeError: 'NoneType' object is not iterable`."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "tasks.yml").write_text("[]\n")
    run_dir = synthetic_run(tmp_path / "run", [1.0], config="task: {path: bench}\n")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    data = json.dumps({**manifest, "files": files}, sort_keys=True, separators=(",", ":")).encode()
    (run_dir / "manifest.json").write_bytes(data)
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "manifest_id": hashlib.sha256(data).hexdigest()}))
    reseal(run_dir)
    verdict = verify_run(load_run(run_dir), cwd=tmp_path)
    assert [(f.ok, f.file, f.message) for f in verdict.findings if f.file == "sources"] == [
        (True, "sources", "not checked: manifest.json is not canonical JSON")]


# -- a manifest that hashes to its id but is not one benchrun writes -------------------------------------------------

class Fetched(http.server.BaseHTTPRequestHandler):
    """Answers every GET with a JSON schema, and counts it."""

    asked: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        Fetched.asked.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.slow
def test_rescore_fetches_nothing_a_manifests_format_names_outside_itself(tmp_path):
    """A run whose manifest's format schema holds `{"$ref": "http://host/x.json"}` (sealed so): `rescore` fetched the
    URL (twice) and checked every answer's format against what that server answered then, though the compiler
    refuses such a format because benchrun fetches nothing for one, and an audit works from the archive alone."""
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        made = cli(f"runner.host={server.url}", "cache=false", "task.only=[product]", f"outputs={tmp_path / 'out'}",
                   cwd=tmp_path)
    run_dir = run_dir_of(made.stdout)
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fetched) as web:
        threading.Thread(target=web.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{web.server_address[1]}/x.json"
        replace_manifest(run_dir, lambda m: m["tasks"][0]["format"]["json_schema"].update({"$ref": url}))
        rescored = audit(tmp_path, "rescore", str(run_dir))
        web.shutdown()
    assert (rescored.returncode, rescored.stderr, Fetched.asked) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir / 'manifest.json'}': not a valid manifest: tasks.0.format.json_schema: "
        f"refers to '{url}' ($ref), outside the schema, and benchrun fetches nothing for a format (no URL, no "
        "file)\n"), [])
    assert not (run_dir / "rescores").exists()


def test_a_manifest_whose_samples_are_of_no_task_of_it_is_one_line(tmp_path):
    """A manifest (sealed so) whose `tasks` are empty while its samples name a task: `rescore` a KeyError traceback."""
    run_dir = synthetic_run(tmp_path / "run", [1.0])
    replace_manifest(run_dir, lambda m: m.update(tasks=[]))
    with pytest.raises(ArchiveError) as refused:
        load_run(run_dir).manifest
    assert str(refused.value) == (f"in '{run_dir / 'manifest.json'}': not a valid manifest: sample "
                                  "'t:a=0' is of task 't', which the manifest does not have")


def refusing_one(req):
    """listbench's answers, but HTTP 400 for the product of 2 and 3 (that sample's error, the run goes on)."""
    return Reply(status=400, error="no") if req.prompt.endswith("2 and 3") else listbench_answer(req)


@pytest.mark.slow
def test_a_forced_retry_carries_no_judge_calls_of_a_run_without_judges(tmp_path):
    """`retry --force` of a run without judges beside which judge calls were put (refused without --force, as
    `judgements.jsonl: not the run's`): a KeyError traceback ('judgements.jsonl'), the retry's directory left
    `running`. A run's judge calls are read only of a run with judges (`Run.judgements`)."""
    with FakeOllama(models=["llama3.2"], responder=refusing_one) as server:
        made = cli(f"runner.host={server.url}", "cache=false", "task.only=[product]", f"outputs={tmp_path / 'out'}",
                   cwd=tmp_path)
        parent = run_dir_of(made.stdout)
        plant_judge_call(parent, "product:a=3,b=4", "product")
        retried = audit(tmp_path, "retry", str(parent), "--force", "--host", server.url)
    assert retried.returncode == EXIT["ok"], retried.stderr
    child = run_dir_of(retried.stdout)
    assert not (child / "judgements.jsonl").exists()
    assert verify_run(load_run(child)).intact
