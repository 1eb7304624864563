"""Hostile input, nineteenth pass, the review of this pass's own new code (issue 19's fresh pass of the same kinds):
what the runs and rev18 sides merged, attacked, the cases it found bad, each with the rule it now obeys.

- a credential given a variable in a Slurm sweep's setup whose value holds base64's `/`, `+` or `=` (an AWS secret
  access key, `export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`): the check read a value only up
  to its first character not of a key's, so the sweep went on and the key was written into multirun.yaml, each job's
  .hydra copies and the job's script. Now the value is the whole word, base64's characters in it, and a path
  (`config/aws/credentials`, `keys/sa.json`, `/home/me/token`) is not taken for one (`core.secrets.assigned`)
- a benchmark's custom_scorer.py that registers an exit function at import (`atexit.register(cleanup)`, to end what
  it set up): the run's process ran it as it exited, after the run's last line: a traceback when it raised (`Exception
  ignored in atexit callback ...`), exit 0 for a run that failed (exit 3) when it called `os._exit(0)`. Now what user
  code registers in the run's process is not kept (`compiler.runstate`); what a library registers for the process is
- a benchmark's custom_scorer.py that turns off garbage collection at import (`gc.disable()`, for speed): the run's
  process never freed what refers to itself, some 7 KB an answer (a run of 4,500 samples peaked at 116 MB, not 83 MB;
  100,000 samples some 700 MB more), and every job after it in a sweep's process. Now garbage collection is put back,
  on and at its thresholds, after user code runs in the process (`compiler.runstate`)
- a benchmark's custom_scorer.py that reconfigures or writes its standard output's bytes at import
  (`sys.stdout.reconfigure(encoding='utf-8')`, a common idiom; `sys.stdout.buffer.write(...)`): refused, `cannot
  import: AttributeError: '_io.StringIO' object has no attribute 'reconfigure'`, exit 2, for the run's process gave
  user code a StringIO; and what a file printed at import was kept whole, in memory and in benchrun.log (30 MiB printed,
  a 31 MB log), where what it writes to the descriptors keeps 1 MiB; `faulthandler.enable()` (`sys.stderr.fileno()`)
  refused as `UnsupportedOperation: fileno`. Now sys.stdout and sys.stderr are text files of the usual kind, saying
  their descriptors, keeping 1 MiB (`core.stdfds.Printed`)
- a benchmark's custom_scorer.py that quiets or closes its standard output at import (`sys.stdout =
  open(os.devnull, 'w')`, `sys.stdout.close()`): refused, `cannot import: it ended the process importing it
  (os._exit(0) or the like) before its last line` (wrong: the probe wrote the token saying the import ended through
  the sys.stdout the file had replaced). Now the probe writes through its own copy of the standard output
  (`compiler.usercode.PROBE`)
- a benchmark's custom_scorer.py that prints much at import: the import check's child wrote it all to a temporary
  file (a file printing without end filled $TMPDIR for 60 s, then this process's memory as it read it); under
  `ulimit -f 4096`, 6 MiB printed were `killed by SIGXFSZ`. Now the check's marks go to a file of their own and what
  the file prints goes nowhere there (the import that follows logs it, bounded) (`compiler.importprobe.probed`)
"""

from __future__ import annotations

import gc
import resource
import subprocess
import sys

import pytest

from benchrun.compiler.usercode import import_file
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

SECRET = ("benchrun: error: in 'config': {key}: secrets are never taken from the config, where they would be archived "
          "(a value given to {name}, a credential's name); put an API key in an environment variable and name it with "
          "runner.api_key_env, and give URLs without user names or passwords\n")
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(("given", "key", "name"), [
    (f"hydra.launcher.setup=['export AWS_SECRET_ACCESS_KEY={AWS}']", "hydra.launcher.setup", "AWS_SECRET_ACCESS_KEY"),
    (f"hydra.launcher.setup=['export AWS_SECRET_ACCESS_KEY=\"{AWS}\" && srun true']", "hydra.launcher.setup",
     "AWS_SECRET_ACCESS_KEY"),
    (f"+hydra.launcher.additional_parameters.export='ALL,AWS_SECRET_ACCESS_KEY={AWS},X=1'",
     "hydra.launcher.additional_parameters.export", "AWS_SECRET_ACCESS_KEY")])
def test_a_base64_credential_given_a_variable_in_a_slurm_sweeps_setup_is_refused(tmp_path, given, key, name):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm", given, "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", SECRET.format(key=key, name=name))


def test_a_credentials_path_given_a_variable_in_a_slurm_sweeps_setup_is_taken(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=slurm",
                         "hydra.launcher.setup=['export AWS_SHARED_CREDENTIALS_FILE=config/aws/credentials', "
                         "'export GOOGLE_APPLICATION_CREDENTIALS=keys/service-account-prod.json', "
                         "'export HF_TOKEN_PATH=/home/me/.cache/huggingface/token', 'export TOKENIZERS_PARALLELISM=false']",
                         "dry_run=true", cwd=tmp_path)
    assert done.returncode == EXIT["ok"], done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["raise RuntimeError('the cache was removed already')", "os._exit(0)"])
def test_a_benchmark_file_registering_an_exit_function_at_import_ends_no_run(tmp_path, ending):
    """Before: the run's process ran it as it exited: a traceback after the run's one line, or exit 0 for a failed run."""
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                        "  scorer: s\n",
                           "custom_scorer.py": f"import atexit\nimport os\n\n\n@atexit.register\ndef _clean():\n"
                                               f"    {ending}\n\n\ndef s(response, reference):\n    return 1\n"})
    done = run_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["runner"], "benchrun: error: cannot reach Ollama at "
                                              "http://127.0.0.1:9 (ConnectionError); start it with `ollama serve`, or "
                                              "point runner.host at a running server\n")


def test_a_benchmark_file_turning_off_garbage_collection_at_import_leaves_it_on_for_the_run(tmp_path):
    """Before: off for the rest of the run's process (a run of 4,500 samples held 33 MB more, without bound)."""
    path = write_bench(tmp_path, {"custom_scorer.py": "import gc\n\ngc.disable()\ngc.set_threshold(0)\n\n\n"
                                                      "def s(response, reference):\n    return 1\n"}) / "custom_scorer.py"
    thresholds = gc.get_threshold()
    try:
        import_file(path, "custom_scorer.py", probe=False)
        assert (gc.isenabled(), gc.get_threshold()) == (True, thresholds)
    finally:
        gc.enable()
        gc.set_threshold(*thresholds)


UNREACHABLE = ("benchrun: error: cannot reach Ollama at http://127.0.0.1:9 (ConnectionError); start it with `ollama "
               "serve`, or point runner.host at a running server\n")


@pytest.mark.slow
@pytest.mark.parametrize(("printing", "logged"), [
    ("import sys\n\nsys.stdout.reconfigure(encoding='utf-8')\nsys.stdout.buffer.write('h\\u00e9llo\\n'.encode())\n"
     "sys.stdout.flush()\n"
     "print('\\u00fcn\\u00efcode', file=sys.stderr)\n", "h\u00e9llo\n\u00fcn\u00efcode"),
    ("import faulthandler\nimport os\nimport sys\n\nfaulthandler.enable()\nos.write(sys.stdout.fileno(), b'straight\\n')\n",
     "straight"),
    ("for _ in range(3):\n    print('x' * (1 << 20))\n", "x" * (1 << 20) + f"\n[{3 * ((1 << 20) + 1) - (1 << 20):,} "
                                                            "bytes more not kept]")])
def test_what_a_benchmark_file_prints_at_import_is_taken_as_a_program_prints_it_and_kept_bounded(tmp_path, printing,
                                                                                                  logged):
    """Before: `sys.stdout.reconfigure` refused the file (`cannot import: AttributeError: '_io.StringIO' object has no
    attribute 'reconfigure'`, exit 2); 3 MiB printed were kept whole in benchrun.log, in memory first."""
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                        "  scorer: s\n",
                           "custom_scorer.py": f"{printing}\n\ndef s(response, reference):\n    return 1\n"})
    done = call_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["runner"], UNREACHABLE)
    [log] = (tmp_path / "outputs").glob("*/*/benchrun.log")
    assert log.read_text(encoding="utf-8").split(" - ", 1)[1] == (
        f"custom_scorer.py printed while it was imported:\n{logged}\n")


@pytest.mark.slow
@pytest.mark.parametrize("quieting", ["import os\nimport sys\n\nsys.stdout = open(os.devnull, 'w')\n",
                                      "import sys\n\nsys.stdout.close()\nsys.stderr.write('still here\\n')\n"])
def test_a_benchmark_file_quieting_or_closing_its_standard_output_at_import_is_not_said_to_end_the_process(tmp_path,
                                                                                                        quieting):
    """Before: `cannot import: it ended the process importing it (os._exit(0) or the like) before its last line`,
    exit 2: the probe wrote the token saying the import ended through the sys.stdout the file had replaced."""
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                        "  scorer: s\n",
                           "custom_scorer.py": f"{quieting}\n\ndef s(response, reference):\n    return 1\n"})
    # a process: in pytest's own, the file's unclosed sys.stdout = open(os.devnull) is a ResourceWarning (an error)
    done = run_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["runner"], UNREACHABLE)


def _files_of_4_mib_at_most() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20))


@pytest.mark.slow
def test_what_a_benchmark_file_prints_at_import_fills_no_file_of_the_import_check(tmp_path):
    """Before: the check's child wrote it all to a temporary file (a file printing without end: $TMPDIR filled for 60
    s, then read whole into memory); under `ulimit -f 4096` 6 MiB printed were `killed by SIGXFSZ`, exit 2."""
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                        "  scorer: s\n",
                           "custom_scorer.py": "for _ in range(6):\n    print('x' * (1 << 20))\n\n\n"
                                               "def s(response, reference):\n    return 1\n"})
    done = subprocess.run([sys.executable, "-m", "benchrun", "task.path=bench", "runner.host=http://127.0.0.1:9",
                           "outputs=outputs"], cwd=tmp_path, env=child_env(), capture_output=True, text=True,
                          timeout=120, preexec_fn=_files_of_4_mib_at_most)
    assert (done.returncode, done.stderr) == (EXIT["runner"], UNREACHABLE)
