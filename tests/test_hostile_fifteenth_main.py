"""Hostile input, fifteenth pass, what the lead session tried beside the three sides' passes: the cases it found
bad, each with the rule it now obeys.

- a command-line word whose `~` stands for a home directory that is not UTF-8, with HOME unset (the home is then the
  user's entry in the password database): the refusal read $HOME to name it, and its KeyError escaped as a
  traceback; now it names where the home came from (`__main__._home_named`)
- `benchrun-audit report` of a run directory renamed (or copied) to a name that is not UTF-8: the HTML could not be
  written (UnicodeEncodeError, a traceback, no report); now the path is shown as every other text from outside is,
  its bytes escaped (`run\\xff`), in the report and on the terminal (`console.visible`)
- a machine whose name is not UTF-8 (the kernel takes any bytes; set in a UTS namespace here): every run ended in a
  traceback writing run.json, after its directory was made; now the name is recorded with its bytes escaped, in
  run.json and run.lock alike (`core.text.host_name`)
- the embedded model under a memory limit (`ulimit -v 200000`, a batch system's limit): the one line blamed the model
  file (`cut short, or a model architecture it does not know; set runner.model_path to a GGUF file`, or the engine's
  death `while loading model file ...; set runner.model_path to a GGUF file it can load`), a file that loads with the
  memory; now it names the limit first, and an engine killed while loading (SIGKILL: the out-of-memory killer) is
  said to be that (`execute.runners.local_engine.memory_limit`, `execute.runners.local.load_died`)
- `shard=1/99999999999999999999`: taken (a run of one sample, run.json recording a count past what JSON readers keep
  exactly), and `merge --partial` of such shards listed the 10**20 shards missing until memory ran out (18 GB in a
  minute); now a split is at most 10,000 parts, as `shards=n` is: the override refused in one line, and a run.json
  saying more refused where it is read (`core.shards.Shard`)
- `hydra.sweep.subdir=${hydra.job.override_dirname}` (Hydra's documented way to name jobs; reported by the runs side),
  or `${runner.model}`: an interpolation that holds a '/' for a job (`runner.host=http://...`, a model named
  `hf.co/org/model`) made that job two folders down, and sweep.json listed one job `missing` where two completed
  (exit 1); now a job's directory may interpolate only a job's number or id and benchrun's own label, refused before
  anything is made otherwise (`callbacks._check_subdir`)
- an override Hydra's grammar cannot read, where its reason names no override (`runner.host=http://[::1]:11434`, an
  IPv6 host unquoted: `mismatched input '[' expecting <EOF>`; reported by the asking side): now the line names the
  override and says how a value that is one text is written (`cli._unreadable_override`)
- a sealed run whose writer wrote a sample's answer twice (as a second writer did, one that a fork at import made, a
  case the runs side closed): `verify` checked its files against the final digests only and said intact; now a run
  that ended has its committed lines checked against its manifest too, as a killed run's are (`audit.verify`,
  `belonging`; reported by the runs side)
- a benchmark's own module that its scorers import (`from helpers import same`, beside custom_scorer.py): its code
  scored the run, but the manifest did not name it, so an edit to it changed the scores under the same manifest id and
  verify said intact; now the modules a benchmark's files imported from inside it are among the manifest's files
  (`compiler.usercode.local_modules`; reported by the runs side)
- a custom response class whose JSON schema is not a JSON Schema (`model_json_schema` returning
  `{"properties": "x"}`): the run began and ended in a jsonschema_rs traceback (exit 1); a manifest sealed so made
  `rescore` do the same (reported by the archive side). Now the compiler refuses such a format in one line
  (`compiler.plan._a_json_schema`), and the format check says it of a manifest it never wrote
  (`execute.formatcheck.FormatCheck`)
- a Slurm sweep stopped by a signal on a machine where `scancel` is missing or hangs (found in review): the cancel
  of its jobs raised FileNotFoundError or TimeoutExpired out of the interrupt handler, a traceback where one line
  was due; now the stop is said whatever scancel does (`compose.takeback.cancel_slurm_jobs`)
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.__main__ import _text_words
from benchrun.archive.ledger import digest_lines
from benchrun.compose import takeback
from benchrun.console.visible import shown_name
from benchrun.core.errors import EXIT, ConfigError
from benchrun.execute.runners import local_engine
from benchrun.execute.runners.base import EngineDied
from benchrun.execute.runners.local import load_died
from benchrun.execute.runners.localadvice import LocalAdvice
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import replace_manifest, reseal, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import call_benchrun, run_dir_of, run_in_process
from tests.helpers.helperbench import helper_bench_run

NOT_UTF8_HOME = os.fsdecode(b"/tmp/h\xff")


def test_a_tilde_for_a_home_that_is_not_utf8_with_home_unset_names_the_users_entry(monkeypatch):
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: cls(NOT_UTF8_HOME)))
    with pytest.raises(ConfigError) as refused:
        _text_words(["cache_dir=~/cache"], [f"cache_dir={NOT_UTF8_HOME}/cache"])
    assert str(refused.value) == (
        "the command line's word 'cache_dir=~/cache' (~ is the home directory of this user's entry (HOME is unset), "
        "'/tmp/h\\xff') is not UTF-8 text (a run records its command line as text, in run.json); give it in UTF-8")


def test_a_report_of_a_run_whose_directory_is_not_utf8_shows_its_bytes_escaped(tmp_path):
    run_dir = synthetic_run(tmp_path / os.fsdecode(b"run\xff"), [1.0, 0.0], run_id="b0b0b0b0b0b0")
    done = audit(tmp_path, "report", str(run_dir), "--output", "page.html")
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    page = (tmp_path / "page.html").read_text("utf-8")
    assert page.count(f"<code>{tmp_path}/run\\xff</code>") == 1
    assert f"<pre>{tmp_path}/run\\xff</pre>" in page


def test_a_byte_of_a_name_that_is_not_utf8_is_shown_as_that_byte():
    assert shown_name(os.fsdecode(b"/tmp/r\xffn\x80")) == "/tmp/r\\xffn\\x80"
    assert shown_name("a\ud800b") == "a\\ud800b"


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="a host name of its own needs root")
def test_a_machine_whose_name_is_not_utf8_records_it_escaped(tmp_path):
    named = 'printf "h\\377st" > /proc/sys/kernel/hostname && exec "$@"'
    with FakeOllama(models=["llama3.2"]) as server:
        done = subprocess.run(["unshare", "--uts", "sh", "-c", named, "sh", sys.executable, "-m", "benchrun",
                               f"runner.host={server.url}", "cache=false"], cwd=tmp_path, env=child_env(),
                              capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    run = json.loads((run_dir_of(done.stdout) / "run.json").read_text("utf-8"))
    assert run["environment"]["hostname"] == "h\\xffst"
    assert audit(tmp_path, "verify", str(run_dir_of(done.stdout))).stdout.splitlines()[-1] == "intact"


MODEL = Path("/models/m.gguf")
KEY = LocalAdvice("runner.model_path", "runner.options.num_ctx", again=False)


def test_an_engine_killed_while_loading_is_said_to_be_out_of_memory(monkeypatch):
    monkeypatch.setattr(local_engine, "LIMITS", {})
    assert load_died(EngineDied("died of SIGKILL (signal 9)"), MODEL, -signal.SIGKILL, KEY) == (
        "the embedded engine (llama.cpp) died of SIGKILL (signal 9) while loading model file '/models/m.gguf' (the "
        "kernel kills a process so when the memory it may use runs out); set runner.model_path to a GGUF file it can "
        "load in less")
    assert load_died(EngineDied("exited with code 1"), MODEL, 1, KEY) == (
        "the embedded engine (llama.cpp) exited with code 1 while loading model file '/models/m.gguf'; set "
        "runner.model_path to a GGUF file it can load")


@pytest.mark.slow
def test_the_embedded_model_under_a_memory_limit_is_told_the_limit_not_the_file(tmp_path):
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (200_000 * 1024, resource.RLIM_INFINITY))

    done = subprocess.run([sys.executable, "-m", "benchrun", "runner=local", "cache=false"], cwd=tmp_path,
                          env=child_env(), capture_output=True, text=True, timeout=300, preexec_fn=limited)
    assert done.returncode == EXIT["runner"]
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("benchrun: error: ")
    assert "within this process's memory limit (195 MiB, ulimit -v)" in done.stderr
    assert done.stderr.endswith(("raise the limit, or set runner.model_path to another GGUF file\n",
                                 "raise the limit, or set runner.model_path to a GGUF file it can load\n"))


def test_a_split_into_more_parts_than_a_sweep_takes_is_refused_in_one_line(tmp_path):
    for shard in ("1/10001", "2/99999999999999999999"):
        done = call_benchrun(f"shard={shard}", "dry_run=true", cwd=tmp_path)
        assert (done.returncode, done.stderr) == (
            EXIT["usage"], f"benchrun: error: in 'config': shard: '{shard}': n is at most 10,000 parts\n")


@pytest.mark.slow
def test_a_shard_run_claiming_a_huge_split_is_refused_where_it_is_read_not_merged(tmp_path):
    run_dir = run_in_process(tmp_path, "part", "shard=1/2")
    info = json.loads((run_dir / "run.json").read_text())
    info["shard"]["count"] = 10**20
    (run_dir / "run.json").write_text(json.dumps(info, indent=2))
    reseal(run_dir)
    done = audit(tmp_path, "merge", str(run_dir), "--into", "merged", "--partial")
    assert (done.returncode, done.stdout) == (EXIT["archive"], "")
    assert done.stderr == (f"benchrun: error: in '{run_dir}/run.json': unreadable: shard.count: "
                           "100000000000000000000 is out of bounds: give at most 10000\n")
    assert not (tmp_path / "merged").exists()


@pytest.mark.parametrize("subdir", ["${hydra.job.override_dirname}", "job_${runner.model}"])
def test_a_job_directory_named_by_what_may_hold_a_slash_is_refused(tmp_path, subdir):
    refused = call_benchrun("-m", "runner.model=a,b", f"hydra.sweep.subdir={subdir}", "runner.host=http://127.0.0.1:9",
                            f"outputs={tmp_path / 'out'}", cwd=tmp_path)
    bad = subdir.removeprefix("job_")
    assert (refused.returncode, refused.stdout, refused.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: hydra.sweep.subdir={subdir}: a job's directory is one name directly in the sweep directory, "
        f"and {bad} may hold a '/' for some job (an override's value: runner.host=http://...), which puts the job out "
        "of the sweep's sight; leave hydra.sweep.subdir out (benchrun names each job by what it varies), or name jobs "
        "by ${hydra.job.num}\n"))
    assert not (tmp_path / "out").exists()


def test_an_override_hydra_cannot_read_is_named_with_how_to_quote_it(tmp_path):
    refused = call_benchrun("runner.host=http://[::1]:11434", "dry_run=true", cwd=tmp_path)
    assert (refused.returncode, refused.stderr) == (EXIT["usage"], (
        "benchrun: error: the override 'runner.host=http://[::1]:11434': Hydra's override grammar cannot read it "
        "(mismatched input '[' expecting <EOF>); a value that is one text is written in quotes: "
        "runner.host='http://[::1]:11434'\n"))


@pytest.mark.slow
def test_a_sealed_run_holding_an_answer_twice_is_not_intact(tmp_path):
    run_dir = run_in_process(tmp_path, "twice")
    lines = (run_dir / "responses.jsonl").read_bytes().splitlines(keepends=True)
    (run_dir / "responses.jsonl").write_bytes(b"".join([*lines, lines[0]]))
    kept = [line for line in (run_dir / "records.sha256").read_bytes().splitlines(keepends=True)
            if not line.startswith(b"r ")]
    (run_dir / "records.sha256").write_bytes(digest_lines("responses.jsonl", [*lines, lines[0]]) + b"".join(kept))
    reseal(run_dir, "responses.jsonl", "records.sha256")
    done = audit(tmp_path, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"]
    said = done.stdout.splitlines()
    assert [line for line in said if line.startswith("FAIL")] == [
        "FAIL  responses.jsonl: line 19 repeats the response to 'product:a=2,b=3' (line 1)"]
    assert said[-1] == "NOT intact: 1 problem"


@pytest.mark.slow
def test_a_module_the_scorers_import_from_the_benchmark_is_recorded_and_verified(tmp_path):
    bench, run_dir = helper_bench_run(tmp_path)
    files = [entry["path"] for entry in json.loads((run_dir / "manifest.json").read_text())["files"]]
    assert files == ["tasks.yml", "custom_scorer.py", "custom_response.py", "helpers.py"]
    (bench / "helpers.py").write_text("def same(a, b):\n    return 1\n")
    said = audit(bench, "verify", str(run_dir)).stdout.splitlines()
    assert [line[:40] for line in said if line.startswith("FAIL")] == ["FAIL  sources helpers.py: changed since "]


JUNK_FORMAT = """
class Junk(BaseModel):
    answer: int

    @classmethod
    def model_json_schema(cls, *args, **kwargs):
        return {"type": "object", "properties": "x"}
"""


def test_a_custom_format_whose_schema_is_no_json_schema_is_refused_at_compile(tmp_path):
    bench = tmp_path / "bench"
    shutil.copytree(Path(__file__).parents[1] / "benchrun" / "demos" / "listbench", bench)
    (bench / "custom_response.py").write_text((bench / "custom_response.py").read_text() + JUNK_FORMAT)
    (bench / "tasks.yml").write_text((bench / "tasks.yml").read_text().replace('format: "IntAnswer"', 'format: "Junk"', 1))
    refused = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (refused.returncode, refused.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'custom_response.py': format 'Junk': its JSON schema is not a JSON Schema ('x' is not "
        "of type 'object', at properties); let pydantic make it from the class's fields\n"))


@pytest.mark.slow
def test_rescore_of_a_manifest_whose_format_is_no_json_schema_is_one_line(tmp_path):
    run_dir = run_in_process(tmp_path, "junk", "task.only=[product]")
    replace_manifest(run_dir, lambda m: m["tasks"][0]["format"]["json_schema"].update({"properties": "x"}))
    rescored = audit(tmp_path, "rescore", str(run_dir))
    assert (rescored.returncode, rescored.stderr) == (EXIT["archive"], (
        "benchrun: error: in 'manifest.json': a format's JSON schema is not a JSON Schema (\"x\" is not of type "
        "\"object\" Failed validating \"type\" in schema[\"properties\"][\"properties\"] On instance[\"properties\"]: \"x\"); "
        "the compiler writes none such\n"))
    assert not (run_dir / "rescores").exists()  # the rescore's folder taken back, rescores/ too: the rescore made it


def test_a_stopped_slurm_sweep_without_scancel_here_is_no_traceback(tmp_path, monkeypatch):
    (tmp_path / ".submitit" / "4242").mkdir(parents=True)
    monkeypatch.setattr(takeback, "MADE", takeback.Made(slurm_sweeps=[tmp_path]))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    asked, run = [], subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda args, **kwargs: asked.append(args) or run(args, **kwargs))
    takeback.cancel_slurm_jobs()  # scancel's FileNotFoundError is not raised out of the stop
    assert asked == [["scancel", "4242"]]
