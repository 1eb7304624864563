"""The twenty-second hostile pass of issue 19, the items the twenty-first pass noticed and left (closing21.md).

- a sweep's end read each job's whole manifest to compare its `files` (`archive.sweepsources.changed_source`): a job
  of 100,000 samples was ten MB parsed, a quarter second and 37 MiB a job. Now only the manifest's `files`, written
  before its samples, is read (`archive.manifesthead.leading_field`)
- an OpenAI-compatible server's 200 whose body is an error object naming a status (OpenRouter's documented answer for
  an error met once a request has begun: `{"error": {"code": 503, "message": "..."}}`) was `not a chat completion`,
  never retried: five such in a row failed the run (exit 3). Now it is read as that status: 408, 429 and 5xx retried,
  another the sample's own `HTTP 200 saying 400: ...` (`execute.runners.errorbody.error_said`)
- a Slurm sweep's setup line reading a key from a secret manager by its name (`export OPENAI_API_KEY=$(gcloud secrets
  versions access latest --secret=openai-api-key-production)`, AWS's `--secret-id prod/AppBeta/OpenAIKey2`) was
  refused as a key given to `secret`, advising the environment variable it was setting. Now a value given to a name
  that names a secret (`--secret`, `..._ID`, `..._NAME`, `..._REF`, `..._ARN`) that reads as a name (words joined) is
  taken; a key's random characters are still refused (`core.secrets._named`)
- `rescore --scorer contains` (or exact_match) of a run whose references no answer of its format can score 1 with it (a
  BoolAnswer task graded by its own scorer against `yes`/`no`): every value 0, written as rescore 001, exit 0, where a
  compile of the task with that scorer is refused. Now refused as the compile refuses it, the run's manifest named, no
  rescore written (`compiler.answerable.refuse_unscorable`, from `audit.rescore`)
- `benchrun-audit cache` gave 999,999 bytes as `1000.0 kB` (and 999,950,000 as `1000.0 MB`): now `1.0 MB`, `1.0 GB`
  (`audit.cache.human_size`)
- a sweep job refused for a model list (`-m ... runner.model=[llama3.2,gemma3]`) was shown `job 0_llama3.2-gemma3 (?)`,
  the sweep table's column `?`, run.json's model and label `?`. Now the list as JSON writes it, as the job's directory
  is named by it (`execute.job._raw`)
- a run killed outright (SIGKILL runs no exit function) left its `benchrun-scratch-*` folder in $TMPDIR, one a kill,
  for ever. A scratch folder is now named by its maker (boot, pid namespace, pid, start), and the next process that
  makes one removes this user's folders whose makers on this machine are gone (`core.scratch.remove_orphans`)
- `runner.structured=auto` whose structured-output probe was answered busy (HTTP 503, 429, 502, 504, 408, or a 200's
  error object saying one): taken as the server refusing the dialect, the next tried, so a rate-limited first probe
  ran the whole run in json_object (OpenAI: in none, no schema sent), recorded only in run.json's identity. Now the
  probe is said not answered, exit 3, as a dropped connection is (`OpenAIRunner._dialect`, `runners.errorbody.busy`)
- a key file's path given to a variable named like a credential as Hydra's job environment
  (`+hydra.job.env_set.GOOGLE_APPLICATION_CREDENTIALS=/home/u/sa.json`, `HF_TOKEN_PATH=...`; or a config file's
  `env_set`) was refused as a credential, where the same variable and path in a setup line's `export` were taken.
  Now one rule reads both (`core.secrets.a_path`, in `found` and `compose.config.refuse_bad_overrides`)
- an OpenAI-compatible answer whose choice ended in an error (`finish_reason: "error"` with an `error` object, as
  OpenRouter sends for an error met while the answer was made): its cut text was recorded as the model's answer
  (format_valid 0, the error object dropped), never retried. Now it is that attempt's failure, `HTTP 200, the answer
  ending in an error saying 502: ...`, retried when the status is worth it (`runners.errorbody.error_said`); such an
  answer an earlier benchrun kept in the response cache is no longer served (`execute.cacherows.entry_of`)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import benchrun.archive.reader
from benchrun.archive import manifesthead
from benchrun.archive.reader import load_run
from benchrun.archive.sweepsources import changed_source
from benchrun.audit.cache import human_size
from benchrun.audit.rescore import rescore
from benchrun.core import scratch
from benchrun.core.errors import EXIT, ArchiveError, TaskError
from benchrun.execute.runners.openai import PROBE_PROMPT
from benchrun.testing.chat import Reply
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl, replace_manifest, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, make_run, run_benchrun, run_dir_of
from tests.helpers.sqlitefile import sqlite_db


def _job(root: Path, name: str, sha: str) -> Path:
    """A sweep job of the benchmark `root/bench` whose manifest names tasks.yml read with bytes of digest `sha`."""
    (root / "bench").mkdir(exist_ok=True)
    job = synthetic_run(root / "sweep" / name, [1.0] * 3, config=f"task: {{path: {root / 'bench'}}}\n")
    replace_manifest(job, lambda data: data.update(files=[{"path": "tasks.yml", "sha256": sha}]))
    return job


def test_a_sweeps_end_reads_each_jobs_manifest_files_not_the_whole_manifest(tmp_path, monkeypatch):
    jobs = [_job(tmp_path, "0_a", "a" * 64), _job(tmp_path, "1_b", "b" * 64)]
    whole = benchrun.archive.reader.archived

    def archived(path: Path, limit: int | None = None) -> bytes:
        assert path.name != "manifest.json", "a manifest read whole"
        return whole(path, limit)

    monkeypatch.setattr(benchrun.archive.reader, "archived", archived)
    assert changed_source(jobs) == (
        f"jobs 0_a and 1_b read {tmp_path / 'bench' / 'tasks.yml'} with other bytes (sha256 aaaaaaaaaaaa, then "
        "bbbbbbbbbbbb): the benchmark changed while the sweep ran, and the sweep's table compares them as one; run "
        "the sweep again")


def test_a_manifests_files_are_read_without_its_samples(tmp_path, monkeypatch):
    path = tmp_path / "manifest.json"
    files = [{"path": "tasks.yml", "sha256": "c" * 64}]
    head = json.dumps({"benchmark": "b", "config": {"n": 12345}, "files": files}, separators=(",", ":"))[:-1]
    path.write_text(head + ',"samples":[' + ",".join(['{"id":"t:a=1"}'] * 200_000) + "]}")
    monkeypatch.setattr(manifesthead, "FIRST_BYTES", 7)
    read: list[int] = []
    opened = manifesthead.regular_file

    def counted(*args, **kwargs):
        file = opened(*args, **kwargs)
        real = file.read
        file.read = lambda size: (read.append(size), real(size))[1]
        return file

    monkeypatch.setattr(manifesthead, "regular_file", counted)
    assert manifesthead.leading_field(path, "files") == files
    assert sum(read) < 2 * len(head)


@pytest.mark.parametrize(("data", "said"), [
    (b'{"benchmark":"b"}', "not a manifest: no files"),
    (b'{"benchmark":"b","files":[1', "not valid JSON: Expecting ',' delimiter: line 1 column 28 (char 27)"),
    (b'{"benchmark":"b",', "not valid JSON: it ends too soon"),
    (b'{"benchmark":"\xff","files":[]}', "not UTF-8 text (invalid start byte)"),
    (b'[{"files":[]}]', "not valid JSON: expecting '{' at character 0"),
    (b'{"benchmark":"b" "files":[]}', "not valid JSON: expecting ',' at character 17"),
    (b'{"files":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "not valid JSON: nested too deep"),
])
def test_a_manifest_that_is_not_one_is_said_in_one_line(tmp_path, data, said):
    path = tmp_path / "manifest.json"
    path.write_bytes(data)
    with pytest.raises(ArchiveError) as raised:
        manifesthead.leading_field(path, "files")
    assert str(raised.value) == f"in '{path}': {said}"


def _first_asked_with(body: str):
    """A responder answering each prompt's first request with the raw 200 body `body`, then rightly."""
    seen: set[str] = set()

    def responder(request):
        if request.prompt in seen:
            return listbench_answer(request)
        seen.add(request.prompt)
        return Reply(raw=body)
    return responder


def _asked_openai(tmp_path: Path, responder):
    with FakeOpenAI(models=["m"], responder=responder) as server:
        return call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "cache=false",
                             "runner.structured=json_schema", "runner.backoff_s=0", "task.only=[product]", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)


@pytest.mark.parametrize(("code", "message"), [(503, "The server is overloaded"), (429, "Rate limit exceeded")])
def test_a_200_whose_body_is_an_error_naming_a_status_worth_retrying_is_retried(tmp_path, code, message):
    body = json.dumps({"error": {"message": message, "code": code}})
    result = _asked_openai(tmp_path, _first_asked_with(body))
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert len(responses) == 3 and {(r["error"], r["attempts"]) for r in responses} == {(None, 2)}
    assert {a["error"]["message"] for r in responses for a in r["failed_attempts"]} == {
        f"HTTP 200 saying {code}: {message}"}


def test_a_200_whose_body_is_an_error_naming_a_status_not_worth_retrying_is_that_samples_own(tmp_path):
    def responder(request):
        if request.prompt == "find the product of 2 and 3":
            return Reply(raw=json.dumps({"error": {"message": "Provider returned error", "code": 400}}))
        return listbench_answer(request)

    result = _asked_openai(tmp_path, responder)
    assert result.returncode == EXIT["ok"], result.stderr
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert [(r["error"], r["attempts"]) for r in responses if r["error"]] == [
        ({"type": "APIError", "message": "HTTP 200 saying 400: Provider returned error"}, 1)]


@pytest.mark.parametrize("line", [
    "export OPENAI_API_KEY=$(gcloud secrets versions access latest --secret=openai-api-key-production)",
    "export OPENAI_API_KEY=$(aws secretsmanager get-secret-value --secret-id prod/AppBeta/OpenAIKey2 --query "
    "SecretString --output text)",
])
def test_a_secret_managers_name_for_a_key_in_a_slurm_sweeps_setup_is_taken(tmp_path, line):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", f"hydra.launcher.setup=['{line}']",
                         "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


@pytest.mark.parametrize(("line", "name"), [
    ("gcloud secrets create x --secret=sk-proj-AbCdEfGhIjKlMnOpQrStUv", "secret"),
    ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID"),
    ("export SECRET_ID=123e4567-e89b-12d3-a456-426614174000", "SECRET_ID"),
    ("sshpass --password=correct-horse-battery-staple ssh h", "password"),
])
def test_a_key_given_to_a_name_for_a_secret_in_a_slurm_sweeps_setup_is_still_refused(tmp_path, line, name):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", f"hydra.launcher.setup=['{line}']",
                         "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': hydra.launcher.setup: secrets are never taken from the config, where they "
        f"would be archived (a value given to {name}, a credential's name); put an API key in an environment "
        "variable and name it with runner.api_key_env, and give URLs without user names or passwords\n"))


BOOL_TASKS = """\
- name: even
  template: "is {a} even?"
  values:
    a: [1, 2]
  reference: ["no", "yes"]
  format: BoolAnswer
  scorer: yes_no
"""
YES_NO = "import json\n\n\ndef yes_no(response, reference):\n    return int(json.loads(response)['answer'] == (reference == 'yes'))\n"


def _even(request) -> Reply:
    return Reply(content=json.dumps({"answer": int(request.prompt.split()[1]) % 2 == 0}))


@pytest.mark.slow
def test_a_rescore_with_a_builtin_scorer_no_answer_of_the_format_can_satisfy_is_refused(tmp_path):
    write_bench(tmp_path, {"tasks.yml": BOOL_TASKS, "custom_scorer.py": YES_NO})
    run_dir = make_run(tmp_path, "task.path=bench", responder=_even)
    done = audit(tmp_path, "rescore", str(run_dir), "--scorer", "contains")
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{run_dir / 'manifest.json'}': task 'even': reference: the reference of sample 'even:a=1' "
        "is \"no\", which no answer of format 'BoolAnswer' (true, false) contains: contains would score every answer "
        "to it 0; the run's references are as it asked them: choose another scorer\n"))
    assert not (run_dir / "rescores").exists()
    with pytest.raises(TaskError, match="which no answer of format 'BoolAnswer' \\(true, false\\) matches: exact_match"):
        rescore(load_run(run_dir), ["exact_match"])
    assert rescore(load_run(run_dir), ["yes_no"]).means  # the run's own scorer, as it was


@pytest.mark.parametrize(("size", "shown"), [(999, "999 B"), (1000, "1.0 kB"), (999_949, "999.9 kB"),
                                             (999_950, "1.0 MB"), (999_999, "1.0 MB"), (999_950_000, "1.0 GB"),
                                             (2_500_000_000, "2.5 GB")])
def test_a_cache_size_is_given_in_the_unit_it_rounds_to(size, shown):
    assert human_size(size) == shown


def test_a_sweep_job_refused_for_a_model_list_is_labelled_by_the_list(tmp_path):
    done = call_benchrun("-m", "task=folderbench", "runner.model=[llama3.2,gemma3]", "runner.options.temperature=0",
                         "outputs=o", "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert done.returncode == EXIT["sweep_failed"]
    assert 'job 0_llama3.2-gemma3 (["llama3.2","gemma3"]) failed: ' in done.stdout and "?" not in done.stdout
    [job] = (tmp_path / "o").glob("*/*_sweep/0_*/run.json")
    info = json.loads(job.read_text())
    assert (info["model"], info["label"], info["status"]) == ('["llama3.2","gemma3"]', '["llama3.2","gemma3"]', "failed")


@pytest.mark.slow
def test_a_scratch_folder_a_killed_process_left_is_removed_by_the_next_run(tmp_path, monkeypatch):
    temp = tmp_path / "tmp"
    temp.mkdir()
    killed = subprocess.run([sys.executable, "-c", "import os, signal; from benchrun.core.scratch import scratch_folder; "
                             "scratch_folder(); os.kill(os.getpid(), signal.SIGKILL)"], env=child_env({"TMPDIR": str(temp)}))
    [left] = temp.iterdir()
    assert killed.returncode == -9 and left.name.startswith(scratch.PREFIX)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(scratch, "_SWEPT", {scratch.PREFIX}, raising=False)  # this process sweeps nothing
    live = Path(scratch.scratch_folder())  # this process's, alive
    older = temp / f"{scratch.PREFIX}q1w2e3r4"  # an older benchrun's: whose it is cannot be told
    older.mkdir()
    with FakeOllama() as server:  # a real process: TMPDIR as it reads it, and its own first sweep of old folders
        done = run_benchrun(f"runner.host={server.url}", "cache=false", "task.only=[product]", "outputs=o", cwd=tmp_path,
                            env={"TMPDIR": str(temp)})
    assert done.returncode == EXIT["ok"], done.stderr
    assert sorted(path.name for path in temp.iterdir()) == sorted([live.name, older.name])


@pytest.mark.parametrize(("first", "said"), [(Reply(status=503, error="overloaded"), "HTTP 503: overloaded"),
                                             (Reply(status=429, error="Rate limit reached"), "HTTP 429: Rate limit reached"),
                                             (Reply(raw=json.dumps({"error": {"code": 503, "message": "overloaded"}})),
                                              "HTTP 200 saying 503: overloaded")])
def test_a_structured_output_probe_answered_busy_is_not_a_refused_dialect(tmp_path, first, said):
    def responder(request):  # busy through the retries (twenty-third pass: a probe is retried as any request is)
        return first if request.prompt == PROBE_PROMPT else listbench_answer(request)

    with FakeOpenAI(models=["m"], responder=responder) as server:
        done = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "cache=false",
                             "runner.retries=1", "runner.backoff_s=0", "task.only=[product]", "outputs=o",
                             cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["runner"], "", (
        f"benchrun: error: the server at {server.url} did not answer the structured-output probe ({said}); "
        "runner.structured=json_schema, json_object or none skips it\n"))


def test_a_structured_output_probe_answered_200_with_an_error_of_the_request_tries_the_next_dialect(tmp_path):
    asked: list[str] = []

    def responder(request):
        asked.append(request.prompt)
        if len(asked) == 1:
            return Reply(raw=json.dumps({"error": {"code": 400, "message": "response_format is not supported"}}))
        return listbench_answer(request)

    with FakeOpenAI(models=["m"], responder=responder) as server:
        done = call_benchrun("runner=openai", f"runner.base_url={server.url}", "runner.model=m", "cache=false",
                             "task.only=[product]", "outputs=o", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    info = json.loads((run_dir_of(done.stdout) / "run.json").read_text())
    assert info["identity"]["structured_dialect"] == "json_object"


@pytest.mark.parametrize("given", ["+hydra.job.env_set.GOOGLE_APPLICATION_CREDENTIALS=/home/u/sa.json",
                                   "+hydra.job.env_set.HF_TOKEN_PATH=/home/u/.cache/huggingface/token",
                                   "+hydra.job.env_set.AWS_SHARED_CREDENTIALS_FILE=~/.aws/credentials"])
def test_a_key_files_path_given_a_credentials_variable_in_a_sweeps_job_environment_is_taken(tmp_path, given):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", given, "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


def test_a_key_given_a_credentials_variable_in_a_sweeps_job_environment_is_still_refused(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         "+hydra.job.env_set.GOOGLE_APPLICATION_CREDENTIALS=AbCdEfGhIjKlMnOpQrStUvWxYz012345",
                         "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': hydra.job.env_set.GOOGLE_APPLICATION_CREDENTIALS: secrets are never taken from "
        "the config, where they would be archived (a credential's name); put an API key in an environment variable "
        "and name it with runner.api_key_env, and give URLs without user names or passwords\n"))


def _ended_in_error(error: dict) -> str:
    return json.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "error", "message": {"role": "assistant", "content": '{"answer": 1'},
        "error": error}]})


def test_an_answer_ending_in_an_error_worth_retrying_is_asked_again(tmp_path):
    result = _asked_openai(tmp_path, _first_asked_with(_ended_in_error({"code": 502, "message": "Upstream error"})))
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert {(r["error"], r["attempts"], r["text"]) for r in responses} >= {(None, 2, '{"answer": 6}')}
    assert {a["error"]["message"] for r in responses for a in r["failed_attempts"]} == {
        "HTTP 200, the answer ending in an error saying 502: Upstream error"}


def test_an_answer_ending_in_an_error_of_no_status_is_that_samples_failure_not_its_answer(tmp_path):
    def responder(request):
        if request.prompt == "find the product of 2 and 3":
            return Reply(raw=_ended_in_error({"message": "Provider disconnected"}))
        return listbench_answer(request)

    result = _asked_openai(tmp_path, responder)
    assert result.returncode == EXIT["ok"], result.stderr
    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert [(r["error"], r["text"]) for r in responses if r["id"] == "product:a=2,b=3"] == [
        ({"type": "APIError", "message": "HTTP 200, the answer ending in an error: Provider disconnected"}, None)]


def test_a_cached_answer_that_ended_in_an_error_is_not_served(tmp_path):
    cache = ["cache=true", f"cache_dir={tmp_path / 'cache'}"]
    with FakeOpenAI(models=["m"], responder=listbench_answer) as server:
        asked = ["runner=openai", f"runner.base_url={server.url}", "runner.model=m", "runner.structured=json_schema",
                 "task.only=[product]", "outputs=o"]
        assert call_benchrun(*asked, *cache, cwd=tmp_path).returncode == EXIT["ok"]
        with sqlite_db(tmp_path / "cache" / "responses.sqlite3") as db:  # as an earlier benchrun kept such answers
            db.execute("UPDATE answers SET answer = json_set(answer, '$.done_reason', 'error', '$.text', '{')")
        done = call_benchrun(*asked, *cache, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    responses = read_jsonl(run_dir_of(done.stdout) / "responses.jsonl")
    assert {(r["cached_from"], r["done_reason"], r["attempts"]) for r in responses} == {(None, "stop", 1)}


@pytest.mark.slow
def test_a_dry_runs_folder_a_killed_dry_run_left_is_removed_by_the_next(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    killed = subprocess.run([sys.executable, "-c", "import os, signal; from benchrun.compose.rundirs import "
                             "_dry_run_scratch; _dry_run_scratch('o'); os.kill(os.getpid(), signal.SIGKILL)"],
                            env=child_env({"TMPDIR": str(temp)}))
    assert killed.returncode == -9 and [path.name[:17] for path in temp.iterdir()] == ["benchrun-dry-run-"]
    # a real process: TMPDIR is read once, at the interpreter's first temporary file (tempfile.gettempdir)
    done = run_benchrun("dry_run=true", cwd=tmp_path, env={"TMPDIR": str(temp)})
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert list(temp.iterdir()) == []
