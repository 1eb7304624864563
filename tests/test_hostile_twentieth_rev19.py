"""Hostile input, twentieth pass, the review of the nineteenth pass's own new code (issue 19's fresh pass of the same
kinds): what it added, attacked, the cases found bad, each with the rule it now obeys.

- a base64 credential that begins with `/` (one in 64 of them: an AWS secret access key `/K7MDENG/bPxRfi...`) given a
  variable in a Slurm sweep's setup: taken for a path from the root, so the sweep went on and the key was written into
  multirun.yaml, each job's .hydra copies and the job's script. Now a path from the root goes through a folder named
  in lower case (`/home`, `/scratch`, `/Users`), which a key's mixed-case parts are not (`core.secrets.PATH_LIKE`)
- a credential given a command's option or an Authorization header in a Slurm sweep's setup (`huggingface-cli login
  --token hf_...`, `curl -H 'Authorization: Bearer sk-...' ...`): only `NAME=value` and a whole value beginning with
  `Bearer` were seen, so the sweep went on and the key was written into multirun.yaml and the job's script. Now an
  option named like a credential given a key's value (`--token hf_...`, as `--token=hf_...` was) and `Bearer`/`Basic`
  with one anywhere in a value are refused (`core.secrets.OPTION`, `SENT_BEARER`)
- a run.json that says the run ended (`completed`) without its final digests, its seal removed too: `show`,
  `report`, `compare` and `export` read it (exit 0) and `list` listed it `completed`, where `verify` says `NOT intact`
  (`the run did not finish (status completed): no final digests`): readers took a run.json without digests for a
  run being written, whatever its status said; with the seal kept, `list` still listed it `completed` (show refused
  it). Now a run.json that says the run ended is checked against its seal by every reader (`archive.trust._unsealed`,
  `archive.headline.headline_unverified`)
- a benchmark's custom_scorer.py that asks faulthandler for a stack dump on SIGUSR1 at import
  (`faulthandler.register(signal.SIGUSR1)`, a debugging idiom): Slurm's warning before a job's time limit (SIGUSR1,
  which benchrun records as an interrupt) dumped every thread's stack on the console and the run went on (exit 0).
  Python's view of the handlers does not show faulthandler's, so the handling put back after the import missed it.
  Now what user code has faulthandler do is undone with the rest (`core.interrupts.handling_now`)
- a benchmark's custom_scorer.py that makes a folder at import and removes it as its process exits
  (`tempfile.TemporaryDirectory()`, or `mkdtemp` and `atexit.register(shutil.rmtree, ...)`): every run left it in
  $TMPDIR, two to three times over (the import check ends by os._exit, the scorer process is killed, the run's
  process keeps no exit function of user code), and every resume and replaced scorer process again. Now each of those
  processes has its temporary files in a folder of its own, removed once it is done (`core.scratch`)
- a sweep over outputs itself (`-m outputs=o1,o2`): every job was written beneath the outputs the sweep started with
  (`outputs/.../0_outputs-o1`), each job's config.yaml and overrides saying `outputs=o1`, exit 0, o1 and o2 never
  made. Now refused in one line before anything is made, as a sweep over dry_run is (`compose.sweepsize.WHOLE_SWEEP`)
- a sealed run.json whose retry's `carried_by` lists a session without its count of answers (the nineteenth pass's
  history check let a count be left out): `show`, `list`, `report` and `compare` a traceback (`KeyError: 'answers'`).
  Now run.json is unreadable in one line naming the entry (`core.recordvalues`)
- a benchmark's custom_scorer.py that quiets or configures logging at import (`logging.getLogger().setLevel(
  logging.WARNING)`, `logging.disable(logging.INFO)`, `logging.config.dictConfig(...)`, which disables every logger
  there was): what it printed at import, logged after it, was left out of benchrun.log (and, for
  `logging.disable`, of every later job's in a sweep's process). Now the
  process's logging is put back after user code's block, as the rest of its state is (`compiler.runstate`)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.holding import holding_answers
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import line_count, wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import reseal
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, make_run
from tests.helpers.importlog import run_importing

SECRET = ("benchrun: error: in 'config': {key}: secrets are never taken from the config, where they would be archived "
          "(a value given to {name}, a credential's name); put an API key in an environment variable and name it with "
          "runner.api_key_env, and give URLs without user names or passwords\n")


@pytest.mark.parametrize("key", ["/K7MDENG/bPxRfiCYEXAMPLEKEYwJalrXUtnFEMI", "/K7MDENGbPxRfiCYEXAMPLEKEYwJalrXUtnFEMI"])
def test_a_base64_credential_beginning_with_a_slash_given_a_variable_in_a_slurm_sweeps_setup_is_refused(tmp_path,
                                                                                                       key):
    """Before: taken for a path from the root (exit 0), the key written into multirun.yaml and the job's script."""
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         f"hydra.launcher.setup=['export AWS_SECRET_ACCESS_KEY={key}']", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", SECRET.format(key="hydra.launcher.setup", name="AWS_SECRET_ACCESS_KEY"))


@pytest.mark.parametrize(("line", "why"), [
    ("huggingface-cli login --token hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "a value given to --token, a credential's name"),
    ("curl -sf -H \\'Authorization: Bearer sk-AbCdEfGhIjKlMnOpQrStUvWxYz012345\\' http://10.0.0.5:8000/v1/models",
     "an Authorization header value")])
def test_a_credential_given_a_commands_option_in_a_slurm_sweeps_setup_is_refused(tmp_path, line, why):
    """Before: exit 0; the key written into multirun.yaml, each job's .hydra copies and the job's script."""
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         f"hydra.launcher.setup=['{line}']", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': hydra.launcher.setup: secrets are never taken from the config, where they "
        f"would be archived ({why}); put an API key in an environment variable and name it with runner.api_key_env, "
        "and give URLs without user names or passwords\n"))


def test_a_credentials_option_read_from_a_variable_in_a_slurm_sweeps_setup_is_taken(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         "hydra.launcher.setup=['huggingface-cli login --token $HF_TOKEN', "
                         "'vllm serve --api-key-file /run/secrets/vllm_key_of_the_cluster --max-tokens 4096', "
                         "'echo a basic internationalization check']",
                         "dry_run=true", cwd=tmp_path)
    assert done.returncode == EXIT["ok"], done.stderr


def test_a_path_from_the_root_given_a_credentials_variable_in_a_slurm_sweeps_setup_is_taken(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         "hydra.launcher.setup=['export SSH_AUTH_SOCK=/tmp/ssh-AbCdEfGh1234/agent.5678', "
                         "'export GOOGLE_APPLICATION_CREDENTIALS=/Users/Me/Keys/service-account', "
                         "'export KEY_DIR=/scratch/project_4471/ModelKeys', "
                         "'export HF_TOKEN_PATH=/SNS/HFIR/IPTS-1234/shared/token']", "dry_run=true", cwd=tmp_path)
    assert done.returncode == EXIT["ok"], done.stderr


@pytest.mark.parametrize("session", [{"identity": None}, {"answers": None}])
@pytest.mark.parametrize("command", ["show", "list"])
def test_a_retrys_carried_session_without_its_count_of_answers_is_one_line(tmp_path, session, command):
    """Before: `show`, `list`, `report` and `compare` of the run were a traceback, `KeyError: 'answers'`."""
    run_dir = make_run(tmp_path, "task.only=[product]")
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "history": [{"carried_by": [session]}]}, indent=2))
    reseal(run_dir)
    args = ["show", str(run_dir)] if command == "show" else ["list", "--json", str(run_dir.parent.parent)]
    done = call_benchrun(*args, cwd=tmp_path, module="benchrun.audit")
    said = (f"in '{run_dir}/run.json': unreadable: history: 0.carried_by: a session without its count of "
            "answers")
    if command == "show":
        assert (done.returncode, done.stderr) == (EXIT["archive"], f"benchrun: error: {said}\n")
    else:
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        [row] = json.loads(done.stdout)
        assert (row["status"], row["reason"]) == ("unreadable", said)


UNREACHABLE = ("benchrun: error: cannot reach Ollama at http://127.0.0.1:9 (ConnectionError); start it with `ollama "
               "serve`, or point runner.host at a running server\n")


@pytest.mark.slow
@pytest.mark.parametrize("quieting", ["logging.getLogger().setLevel(logging.WARNING)", "logging.disable(logging.INFO)",
                                      "import logging.config\nlogging.config.dictConfig({'version': 1})"])
def test_a_benchmark_file_quieting_logging_at_import_still_has_what_it_printed_logged(tmp_path, quieting):
    """Before: benchrun.log was empty: the run's process logged what the file printed at the level the file left."""
    done, log = run_importing(tmp_path, f"import logging\n\n{quieting}\nprint('loaded the tables')")
    assert (done.returncode, done.stderr) == (EXIT["runner"], UNREACHABLE)
    assert log == "custom_scorer.py printed while it was imported:\nloaded the tables\n"


def test_a_sweep_over_outputs_itself_is_refused_before_anything_is_made(tmp_path):
    """Before: the sweep went on (exit 0 against a server), both jobs beneath ./outputs (`0_outputs-o1`), no o1, o2."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "tasks.yml").write_text(
        "- name: t\n  template: 'what is {a}?'\n  values:\n    a: [1]\n  reference: [1]\n  scorer: exact_match\n")
    done = call_benchrun("-m", "outputs=o1,o2", "task.path=bench", "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'config': outputs=o1,o2: a sweep's jobs are all written into its one directory, beneath "
        "the outputs it is started with; give one outputs=DIR, or start a sweep for each\n"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bench"]


@pytest.mark.parametrize("sealed", [False, True])
def test_a_run_json_saying_the_run_ended_without_its_digests_is_read_by_no_reader(tmp_path, sealed):
    """Before: without the seal, show, report, compare and export read the run (exit 0); list listed it `completed`
    with the seal kept too."""
    run_dir = make_run(tmp_path, "task.only=[product]")
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "files": {}}, indent=2))
    if not sealed:
        (run_dir / "seal.json").unlink()
    why = ("run.json: changed since the run was sealed" if sealed else
           "seal.json: missing: the run ended (completed) but nothing covers run.json")
    said = (f"in '{run_dir}': run {info['run_id']}: {why}, so what it says cannot be trusted; benchrun-audit verify "
            f"{run_dir} says what changed")
    shown = call_benchrun("show", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    listed = call_benchrun("list", "--json", str(run_dir.parent.parent), cwd=tmp_path, module="benchrun.audit")
    [row] = json.loads(listed.stdout)
    assert (shown.returncode, shown.stderr, row["status"], row["reason"]) == (
        EXIT["archive"], f"benchrun: error: {said}\n", "unreadable", said)


@pytest.mark.slow
def test_a_stack_dump_a_benchmark_file_asks_for_at_import_does_not_take_the_schedulers_signal(tmp_path):
    """Before: SIGUSR1 dumped every thread's stack on stderr and the run went on (exit 0, `completed`)."""
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1, 2, 3, 4, 5, 6]}\n"
                                        "  reference: ['1', '2', '3', '4', '5', '6']\n  scorer: s\n",
                           "custom_scorer.py": "import faulthandler\nimport signal\n\nfaulthandler.register(signal.SIGUSR1)"
                                               "\n\n\ndef s(response, reference):\n    return 1\n"})
    outputs = tmp_path / "outputs"
    with FakeOllama(models=["llama3.2"]) as server, holding_answers(server, after=2):
        run = subprocess.Popen([sys.executable, "-m", "benchrun", "task.path=bench", f"runner.host={server.url}",
                                "cache=false", "runner.concurrency=1", f"outputs={outputs}"], cwd=tmp_path,
                               env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
        try:
            wait_for(lambda: line_count(next(outputs.glob("*/*/responses.jsonl"), outputs / "none")) >= 2, 120)
            os.killpg(run.pid, signal.SIGUSR1)
        except BaseException:
            run.kill()
            raise
    _, stderr = run.communicate(timeout=120)
    [run_dir] = outputs.glob("*/*")
    assert (run.returncode, json.loads((run_dir / "run.json").read_text())["status"]) == (EXIT["interrupted"],
                                                                                         "interrupted"), stderr
    assert stderr.startswith("benchrun: error: interrupted by SIGUSR1: run "), stderr


@pytest.mark.slow
def test_the_temporary_files_a_benchmark_file_makes_at_import_are_not_left_behind(tmp_path):
    """Before: five folders left in $TMPDIR by one run (the import check's, the scorer process's, the run's own)."""
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                        "  scorer: s\n",
                           "custom_scorer.py": "import atexit\nimport shutil\nimport tempfile\n\n"
                                               "_WORK = tempfile.TemporaryDirectory(prefix='benchwork-')\n"
                                               "_MORE = tempfile.mkdtemp(prefix='benchwork-')\n"
                                               "atexit.register(shutil.rmtree, _MORE, True)\n\n\n"
                                               "def s(response, reference):\n    return 1\n"})
    (scratch := tmp_path / "tmp").mkdir()
    with FakeOllama(models=["llama3.2"]) as server:
        done = subprocess.run([sys.executable, "-m", "benchrun", "task.path=bench", f"runner.host={server.url}",
                               "cache=false", "outputs=outputs"], cwd=tmp_path, env=child_env({"TMPDIR": str(scratch)}),
                              capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr, sorted(path.name for path in scratch.iterdir())) == (EXIT["ok"], "", [])
