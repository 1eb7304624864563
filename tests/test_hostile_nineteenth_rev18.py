"""Hostile input, nineteenth pass, the eighteenth pass's own code attacked (resume and retry `--set`,
`trust.config_changed`, weights said as a digest, `archive.lookup`, the fence): the cases found bad, each with the rule
it now obeys.

- a run that ended (failed, interrupted) whose config.yaml was removed, emptied or replaced by a folder: `resume` said
  `the benchmark's sources changed since run ...: the benchmark directory (missing); resume with --force to use them
  anyway`, and `--force` then failed on config.yaml (`in '.../config.yaml': missing`, `in 'config': 'task' is
  required`, exit 2). config.yaml is what locates the benchmark: a resume now checks it first, and says it changed
  since the run ended, with the way on (put it back) (`audit.resume.asked_config`); `retry` of a finished run so
  spoiled advised `--force`, which then failed on config.yaml: it says the same
- the fence's whole-file writes (left by the eighteenth pass): a writer checked that run.lock still held its note,
  then worked out the summary, made and synced summary.json and renamed it over the run's, and wrote the seal after
  run.json with no check between. Stopped past its lease in there and its run taken over (and ended) from another
  machine meanwhile, it replaced the taker's summary.json, or its seal, once continued: a finished run's file
  rewritten, verify NOT intact. Each file a writer rewrites whole is now checked for just before it is renamed
  over the run's (`archive.atomic.atomic_file`'s `ready`, given `RunWriter._held`), the seal too
- `resume`/`retry --set` read a value as YAML 1.1 does: `--set runner.retries=010` asked with 8 retries (a run's
  `runner.retries=010` asks with 10), `runner.timeout_s=1:30` with 90 s, `runner.concurrency=0x10` with 16 (a run
  refuses it), each recorded as given. A value is now read as a benchmark file's and `--rejudge`'s are
  (`core.yamlfile.parse_yaml`): one YAML reads as another number than written is refused in one line naming the key
  (`audit.limits._value`)
- a resume of a run whose run.json holds a limit this benchrun bounds otherwise (an older benchrun's run, killed;
  `runner.concurrency: 500`) said `--set runner.concurrency: Input should be less than or equal to 256` though no
  --set was given. It now names run.json and the --set that asks the rest otherwise (`audit.limits.limited`)
- `show` of a run resumed with `--set` gave run.json's runner (the last session's limits) as the run's, beside the
  overrides it began with, and nothing said which answers were asked with which: it now says each resume's `--set`
  and after how many answers (`limits set`, `archive.sessions.limits_set`)
- `rescore --rejudge` of a run whose judge was given longer by `resume --set judge.timeout_s=5` asked the judge with
  config.yaml's limits again (0.3 s) and failed fast, `... TimeoutError: no answer within 0.3 s
  (judge.max_consecutive_failures)`, though run.json says the judge was last asked with 5 s (a later resume keeps
  them). A rejudge now starts from the limits the run's judge was last asked with, its own overrides after
  (`audit.rejudge.rejudged_config`)
- `list` of a run whose summary.json was removed since it ended showed it `completed`, its tasks and an empty
  headline, passing `--status unreadable` by, where a summary.json edited is listed as unreadable (the eighteenth
  pass) and `show` refuses both. Now listed as unreadable with show's line (`summary.json: missing, so what it says
  cannot be trusted ...`) (`archive.headline.headline_unverified`, `audit.listing.listed`)
- a sweep over dry_run itself (`-m dry_run=true,false`, or in `hydra.sweeper.params`): launched as a sweep of runs,
  whose dry job left no run and was listed `missing: the job left no run.json`, exit 1. A sweep is a dry run or not:
  refused in one line before anything is made (`compose.sweepsize.refuse_varied`)
- the fence before a resume's first write: a resume checks the records under the lock, asks the server's preflight
  (seconds, a model loading), then cuts the files to what it checked. Stopped past its lease in between (Ctrl-Z as
  the model loads) and its run taken over from another machine meanwhile, it cut off, once continued, what the new
  writer had appended since. The repair now checks that the run is still the resume's just before it cuts or
  rewrites a file (`archive.repair.apply`'s `ready`, given `DirLock.still_held` by `audit.resume._reopen`)
- a takeover from another machine's writer whose copy of the record files failed part way (a nearly full disk):
  responses.jsonl made anew, scores.jsonl not, and the lock let go with that writer's note still in it, so that
  writer, only stopped and then continued, found the run its own and appended its answers to a responses.jsonl no
  longer the run's (lost) and its scores to the run's. The taker's note is now written before the files are made
  anew, so a copy that fails part way leaves that writer fenced (`archive.dirlock.DirLock.acquire`)

Held (see the pass's note): config.yaml touched or linked to an identical copy; --set keys spelled with `+`, `~`,
`++` or nested; --set values `abc`, `-1`, `[`, `.inf`, `${...}`; sbatch's abbreviations on Slurm 22.05; an Ollama
digest said as `""`; list of runs whose summary.json or seal is a FIFO, a folder or /dev/zero.
"""

from __future__ import annotations

import errno
import json
import os

import pytest

from benchrun.archive import detach, writer
from benchrun.archive.books import Books
from benchrun.archive.dirlock import DirLock
from benchrun.core.errors import EXIT, WriteFailed
from benchrun.execute.runners.ollama import OllamaRunner
from benchrun.testing.chat import Reply
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import synthetic_run
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer, impatient_judge

pytestmark = pytest.mark.slow


def _broken(req):
    return Reply(status=500, error="boom")


def _failed_run(tmp_path, server: FakeOllama | None = None):
    """A run that failed fast (its server answers 500 to every chat; `server`, running, if given): resumable."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "tasks.yml").write_text(
        "- name: t\n  template: 'what is {a} + 1?'\n  values:\n    a: [1, 2, 3, 4, 5, 6]\n"
        "  reference: [2, 3, 4, 5, 6, 7]\n  scorer: exact_match\n")
    if server is None:
        with FakeOllama(models=["llama3.2"], responder=_broken) as server:
            return _failed_at(tmp_path, server.url)
    return _failed_at(tmp_path, server.url)


def _failed_at(tmp_path, url: str, *more: str):
    done = call_benchrun("task.path=bench", f"runner.host={url}", "runner.retries=0", "cache=false",
                         f"outputs={tmp_path / 'o'}", *more, cwd=tmp_path)
    assert done.returncode == (EXIT["ok"] if more else EXIT["runner"]), done.stderr
    [run_dir] = (tmp_path / "o").glob("*/*")
    return run_dir


def _files(run_dir) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}


@pytest.mark.parametrize(("spoil", "said"), [
    (lambda config: config.unlink(), "missing"),
    (lambda config: config.write_text(""), "changed since the run ended"),
    (lambda config: (config.unlink(), config.mkdir()), "a directory in its place"),
])
def test_a_config_yaml_removed_or_emptied_after_the_run_ended_is_said_so_by_resume(tmp_path, spoil, said):
    """Before: `the benchmark's sources changed since run ...: the benchmark directory (missing); resume with --force
    to use them anyway`, and --force then failed on config.yaml."""
    run_dir = _failed_run(tmp_path)
    spoil(run_dir / "config.yaml")
    before = _files(run_dir)
    done = [call_benchrun("resume", str(run_dir), *force, cwd=tmp_path, module="benchrun.audit")
            for force in ([], ["--force"])]
    line = (f"benchrun: error: in '{run_dir}': config.yaml: {said}: a resume asks with it and would digest it as the "
            "run's own; put it back (to ask the rest with other limits: --set runner.KEY=VALUE)\n")
    assert [(each.returncode, each.stderr) for each in done] == [(EXIT["archive"], line)] * 2
    assert _files(run_dir) == before
    assert json.loads(before["run.json"])["status"] == "failed"


def test_a_config_yaml_removed_after_the_run_finished_is_said_so_by_retry(tmp_path):
    """Before: `config.yaml: missing (44 lines, ... when the run finished); retry with --force to carry its records over
    anyway`, and --force then failed: `in '.../config.yaml': missing`."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "tasks.yml").write_text(
        "- name: t\n  template: 'what is {a}?'\n  values:\n    a: [1]\n  reference: [1]\n  scorer: exact_match\n")
    with FakeOllama(models=["llama3.2"], responder=_broken) as server:
        run_dir = _failed_at(tmp_path, server.url, "runner.max_consecutive_failures=10")
    (run_dir / "config.yaml").unlink()
    done = [call_benchrun("retry", str(run_dir), *force, "--into", str(tmp_path / "r"), cwd=tmp_path,
                          module="benchrun.audit") for force in ([], ["--force"])]
    line = (f"benchrun: error: in '{run_dir}': config.yaml: missing: a retry asks with it and would digest it as the "
            "run's own; put it back (to ask the rest with other limits: --set runner.KEY=VALUE)\n")
    assert [(each.returncode, each.stderr) for each in done] == [(EXIT["archive"], line)] * 2
    assert not (tmp_path / "r").exists()


TAKER = {"pid": 4242, "host": "gpu9", "since": "2026-12-04T08:00:00+00:00", "command": "benchrun-audit resume"}
"""The note of a writer on another machine that took a run over (its lock unseen here)."""
TAKERS = {"run.lock": json.dumps(TAKER).encode(), "run.json": b"the taker's run.json\n",
          "summary.json": b"the taker's summary.json\n", "seal.json": b"the taker's seal.json\n"}
"""What a run holds once that writer took it over and ended it."""


def _taken_over_within(monkeypatch, owner, name: str, outputs):
    """`owner.name` (called as a writer ends its run) made the moment its writer is stopped past its lease, and
    another machine's writer takes the run over and ends it."""
    called = getattr(owner, name)

    def stopped_here(*args, **kwargs):
        [run_dir] = outputs.glob("*/*")
        for file, data in TAKERS.items():
            (run_dir / file).write_bytes(data)
        return called(*args, **kwargs)

    monkeypatch.setattr(owner, name, stopped_here)


@pytest.mark.parametrize(("owner", "name"), [(Books, "summary"), (writer, "Seal")], ids=["summary", "seal"])
def test_a_writer_stopped_as_it_ends_its_run_rewrites_no_file_of_the_writer_that_took_it_over(
        tmp_path, monkeypatch, owner, name):
    """Before: summary.json (taken over as the summary was worked out) or seal.json (as run.json was written) was
    the stopped writer's, over the taker's."""
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        _taken_over_within(monkeypatch, owner, name, tmp_path / "o")
        done = lab.call("task.path=bench", f"runner.host={lab.server.url}", "cache=false", f"outputs={tmp_path / 'o'}")
    [run_dir] = (tmp_path / "o").glob("*/*")
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: another writer (pid 4242 on host gpu9 since 2026-12-04T08:00:00+00:00) "
        "took this run over while this process was stopped past its lease on run.lock (Ctrl-Z, SIGSTOP, a Slurm "
        "suspend, on a file system that keeps locks to each machine); this process wrote nothing more to it: the run "
        "is that writer's\n"))
    assert {file: (run_dir / file).read_bytes() for file in TAKERS} == TAKERS


NOT_AS_WRITTEN = [
    ("runner.retries=010", "010 is read by YAML as the int 8, not as written; quote it ('010') to keep it as text, or "
                           "write 8"),
    ("runner.timeout_s=1:30", "1:30 is read by YAML as the int 90, not as written; quote it ('1:30') to keep it as "
                              "text, or write 90"),
    ("runner.concurrency=0x10", "0x10 is read by YAML as the int 16, not as written; quote it ('0x10') to keep it as "
                                "text, or write 16"),
]
"""`--set`s YAML 1.1 reads as another number than written, and what a resume says of them."""


def test_a_limit_that_yaml_reads_as_another_number_than_written_is_refused(tmp_path):
    """Before: asked (and recorded) with 8 retries, 90 s, 16 at once."""
    run_dir = _failed_run(tmp_path)
    before = _files(run_dir)
    done = [call_benchrun("resume", str(run_dir), "--set", given, cwd=tmp_path, module="benchrun.audit")
            for given, _ in NOT_AS_WRITTEN]
    assert [(each.returncode, each.stderr) for each in done] == [
        (EXIT["usage"], f"benchrun: error: in '--set {given.partition('=')[0]}': line 1, column 1: {said}\n")
        for given, said in NOT_AS_WRITTEN]
    assert _files(run_dir) == before


def test_a_rejudge_asks_the_judge_with_the_limits_a_resume_gave_it(tmp_path):
    """Before: the rejudge asked with config.yaml's judge.timeout_s=0.3 and failed fast, exit 3."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=answer) as model, \
            FakeOllama(models=["qwen2.5"], responder=answer, latency_s=0.5) as judge:
        failed = call_benchrun(*impatient_judge(model.url, judge.url, tmp_path / 'o'), cwd=tmp_path)
        [run_dir] = (tmp_path / "o").glob("*/*")
        resumed = call_benchrun("resume", str(run_dir), "--set", "judge.timeout_s=5", cwd=tmp_path,
                                module="benchrun.audit")
        rejudged = call_benchrun("rescore", str(run_dir), "--rejudge", cwd=tmp_path, module="benchrun.audit")
        given = call_benchrun("rescore", str(run_dir), "--rejudge", "judge.timeout_s=7", cwd=tmp_path,
                              module="benchrun.audit")
    assert [done.returncode for done in (failed, resumed, rejudged, given)] == [EXIT["runner"]] + [EXIT["ok"]] * 3, \
        rejudged.stderr
    asked = [json.loads((run_dir / "rescores" / number / "rescore.json").read_text())["judge"]["runner"]["timeout_s"]
             for number in ("001", "002")]
    assert asked == [5.0, 7.0]


def test_list_shows_a_run_whose_summary_was_removed_since_it_ended_as_unreadable(tmp_path):
    """Before: listed `completed` with its task and no headline, and not among `--status unreadable`."""
    run_dir = synthetic_run(tmp_path / "outputs" / "a", [1, 0, 1])
    (run_dir / "summary.json").unlink()
    listed = call_benchrun("list", "--json", cwd=tmp_path, module="benchrun.audit")
    unreadable = call_benchrun("list", "--status", "unreadable", "--json", cwd=tmp_path, module="benchrun.audit")
    shown = call_benchrun("show", "outputs/a", cwd=tmp_path, module="benchrun.audit")
    line = ("in 'outputs/a': run 555555555555: summary.json: missing, so what it says cannot be trusted; "
            "benchrun-audit verify outputs/a says what changed")
    assert (listed.returncode, json.loads(listed.stdout)) == (
        EXIT["ok"], [{"path": "outputs/a", "status": "unreadable", "listed_as": "unreadable", "reason": line}])
    assert json.loads(unreadable.stdout) == json.loads(listed.stdout)
    assert (shown.returncode, shown.stderr) == (EXIT["archive"], f"benchrun: error: {line}\n")


def test_a_sweep_over_dry_run_itself_is_refused_before_anything_is_made(tmp_path):
    """Before: a sweep of runs, its dry job listed as missing (no run.json), exit 1."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "tasks.yml").write_text(
        "- name: t\n  template: 'what is {a}?'\n  values:\n    a: [1]\n  reference: [1]\n  scorer: exact_match\n")
    done = call_benchrun("-m", "dry_run=true,false", "task.path=bench", "runner.host=http://127.0.0.1:9",
                         f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'config': dry_run=true,false: a sweep is a dry run or not, all its jobs one way; give "
        "dry_run=true for a dry run of the sweep, or leave it out\n"))
    assert not (tmp_path / "o").exists()


def test_a_resume_stopped_in_its_preflight_cuts_nothing_of_the_writer_that_took_its_run_over(tmp_path, monkeypatch):
    """Before: the taker's appended line was cut off (the files cut to what the resume had checked)."""
    server = FakeOllama(models=["llama3.2"], responder=_broken)
    with server:
        run_dir = _failed_run(tmp_path, server)
        identify = OllamaRunner.identify

        async def stopped_here(runner):  # the resume stopped past its lease as the server is asked
            (run_dir / "run.lock").write_bytes(TAKERS["run.lock"])
            with open(run_dir / "responses.jsonl", "ab") as records:
                records.write(b"the taker's line\n")
            return await identify(runner)

        monkeypatch.setattr(OllamaRunner, "identify", stopped_here)
        done = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: another writer (pid 4242 on host gpu9 since 2026-12-04T08:00:00+00:00) "
        "took this run over while this process was stopped past its lease on run.lock (Ctrl-Z, SIGSTOP, a Slurm "
        "suspend, on a file system that keeps locks to each machine); this process wrote nothing more to it: the run "
        "is that writer's\n"))
    assert (run_dir / "responses.jsonl").read_bytes().endswith(b"the taker's line\n")
    assert (run_dir / "run.lock").read_bytes() == TAKERS["run.lock"]


def test_a_takeover_whose_copy_of_the_records_fails_part_way_leaves_the_writer_taken_over_fenced(tmp_path, monkeypatch):
    """Before: the lock let go with the stopped writer's note in it, responses.jsonl made anew: that writer, continued,
    found the run its own and appended to a responses.jsonl no longer the run's."""
    for name in ("responses.jsonl", "scores.jsonl", "records.sha256"):
        (tmp_path / name).write_bytes(b"{}\n")
    (tmp_path / "run.lock").write_bytes(TAKERS["run.lock"])  # a writer on another machine, stopped past its lease
    os.utime(tmp_path / "run.lock", (0, 0))
    copy, copied = detach.shutil.copyfileobj, []

    def disk_full_at_the_second(source, target, length):
        if copied:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        copied.append(copy(source, target, length))

    monkeypatch.setattr(detach.shutil, "copyfileobj", disk_full_at_the_second)
    with pytest.raises(WriteFailed):
        DirLock(tmp_path).acquire()
    assert json.loads((tmp_path / "run.lock").read_bytes())["pid"] == os.getpid()


def test_a_limit_the_run_was_last_asked_with_that_is_out_of_bounds_now_is_said_as_run_jsons(tmp_path):
    """Before: `--set runner.concurrency: Input should be less than or equal to 256`, no --set given."""
    run_dir = _failed_run(tmp_path)
    info = json.loads((run_dir / "run.json").read_text())
    info["runner"]["concurrency"] = 500  # an older benchrun's run, killed: unsealed, its status running
    (run_dir / "run.json").write_text(json.dumps({**info, "status": "running", "reason": None, "ended_at": None,
                                                  "files": {}}))
    for name in ("seal.json", "summary.json"):
        (run_dir / name).unlink()
    refused = call_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    given = call_benchrun("resume", str(run_dir), "--set", "runner.concurrency=4", cwd=tmp_path,
                          module="benchrun.audit")
    assert (refused.returncode, refused.stderr) == (EXIT["usage"], (
        f"benchrun: error: in '{run_dir / 'run.json'}': runner.concurrency: 500 is out of bounds: give at most 256, "
        "as the run was last asked; ask the rest otherwise with --set runner.concurrency=VALUE\n"))
    assert (given.returncode, given.stderr.split(" (")[0]) == (
        EXIT["runner"], f"benchrun: error: cannot reach Ollama at {info['runner']['host']}")


class _Answers:
    """An answer for the first `answered` chats, then HTTP 500 for every chat: a server that broke."""

    def __init__(self, answered: int) -> None:
        self.left = answered

    def __call__(self, req):
        self.left -= 1
        return Reply(content="2") if self.left >= 0 else Reply(status=500, error="boom")


def test_show_says_the_limits_each_resume_asked_the_rest_with(tmp_path):
    """Before: only run.json's runner, the last session's limits, shown as the run's."""
    with FakeOllama(models=["llama3.2"], responder=_Answers(1)) as server:
        run_dir = _failed_run(tmp_path, server)
        resumed = [call_benchrun("resume", str(run_dir), "--set", given, cwd=tmp_path, module="benchrun.audit")
                   for given in ("runner.timeout_s=5", "runner.retries=1")]
    shown = call_benchrun("show", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert [done.returncode for done in resumed] == [EXIT["runner"]] * 2
    assert ("\nlimits set   runner.timeout_s=5 by resume 1 (after 1 answer); runner.retries=1 by resume 2 (after 1 "
            "answer) ") in shown.stdout
