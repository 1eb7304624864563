"""The thirty-second hostile pass, the command line beside the sides. Fixed:
1. `resume --set runner.timeout_s=nan` (and `-inf`) was said `Input should be greater than 0`, and `rescore --rejudge
   judge.timeout_s=nan` `in 'config': judge.timeout_s: Input should be greater than 0`, where a run's command line
   says `nan is not a finite number`: a value given to benchrun-audit reads `nan`/`inf` as floats, as Hydra reads
   them (`core.yamlfile.parse_given`), and a rejudge's is refused naming `--rejudge` (the resume's case is in
   `test_hostile_twentythird_archive.py`).
2. An override of Hydra's own logging (`hydra.hydra_logging...`) that `logging.config` cannot use
   (`handlers.console.class=logging.FileHandler`, `root.level=LOUD`) stopped Hydra in a traceback, and a format naming
   no field (`formatters.simple.format='%(x)s'`) printed a traceback at each of Hydra's lines of a sweep: refused
   before Hydra, as the job's logging is (`compose.commandline._refuse_kept_hydra_settings`); a preset of the user's own
   (`--config-dir`, `hydra/hydra_logging=mine`) that logging cannot use is one line (`cli._hydras_own` reads past
   Python's own modules to Hydra's call, and says the cause).
3. A path whose name is not UTF-8 inside an error's text (`hydra.run.dir=ROOT`, ROOT holding the run `nv\\xff`) was
   shown `nv\\ufffd`, a name not on the disk, where an error's file is shown `nv\\xff`: every error line shows such a
   byte as `\\xNN` (`core.text.shown`, in `one_line`).
4. `benchrun-audit --version` said `the following arguments are required: COMMAND`, where `benchrun --version` says
   the version: both say it, by one owner (`core.versions.version_line`).
5. A submitit_local sweep of `hydra.launcher.timeout_min=0` (or below): submitit killed every job before it started,
   nothing recorded, and the sweep's error was submitit's last line, `----------------------------------------`:
   refused before anything is made (`compose.slurmoptions.local_time`), a dry run's too.
6. A server not reached while the environment names a proxy (`HTTP_PROXY=...`, a user behind one) was said `cannot
   reach Ollama at URL (ConnectError); start it ...`, nothing said of the proxy benchrun never reads: the line says
   the server was asked directly (`execute.runners.base.unproxied`); tests run without the environment's proxies.
7. `hydra.job.env_copy=[MYVAR]`, MYVAR holding the API key (`runner.api_key_env=MYVAR`): Hydra wrote the key into the
   run's `.hydra/hydra.yaml` (verify: intact); a variable not set was `Hydra could not go on: KeyError: 'X'`. Refused
   before Hydra (a preset's after composing, `compose.hydragiven.env_copy_refusal`): every job inherits the
   environment already. And the key itself, of no known form in a variable of no credential's name, given as a value
   (`+hydra.job.env_set.FOO=KEY`, `task.system=KEY`, `+runner.options.stop=[KEY]`) was written into `.hydra/`,
   config.yaml and the manifest: a variable an `api_key_env` names is a credential's, whatever its name
   (`core.secrets.Secrets.declare`, from the command line before Hydra, Hydra's config, and the run's config).
8. Review: the reading past Python's own modules (2.) took every frame under Python's own folder for Python's, and a
   Python installed without a venv keeps its packages there (/usr/local/lib/python3.11/site-packages, pyenv's):
   Hydra's frames were skipped and the error a traceback. Installed packages are not Python's own
   (`core.loading.pythons_own`).
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import hydra
import pytest

from benchrun.core import loading
from benchrun.core.errors import EXIT
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import call_benchrun

NOT_FINITE = " is not a finite number, and JSON (config.yaml, run.json, the manifest) has none for it: give a number\n"


@pytest.mark.parametrize(("given", "said"), [("judge.timeout_s=nan", "judge.timeout_s: nan"),
                                             ("judge.timeout_s=NaN", "judge.timeout_s: nan"),
                                             ("judge.options.temperature=-Inf", "judge.options.temperature: -inf")])
def test_a_rejudge_of_a_number_json_has_none_for_is_refused_as_a_run_refuses_it(tmp_path, given, said):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    done = audit(tmp_path, "rescore", str(run_dir), "--rejudge", given)
    assert (done.returncode, done.stderr) == (EXIT["usage"], f"benchrun: error: --rejudge {said}{NOT_FINITE}")
    assert not (run_dir / "rescores").exists()


@pytest.mark.parametrize("given", ["hydra.hydra_logging.handlers.console.class=logging.FileHandler",
                                   "hydra.hydra_logging.formatters.simple.format='%(x)s'", "~hydra.hydra_logging",
                                   "+hydra.hydra_logging.handlers.console.filters=[x]"])
def test_an_override_of_hydras_own_logging_is_refused_before_hydra(tmp_path, given):
    done = call_benchrun("-m", "runner.model=a,b", given, "runner.host=http://127.0.0.1:9", "outputs=out",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {given}: Hydra's own logging is chosen whole, by one of its presets "
        "(hydra/hydra_logging=disabled, none, hydra_debug); leave its settings as they are (hydra.verbose=true logs "
        "more)\n"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("layout", ["venv", "no venv"])
def test_a_preset_of_hydras_logging_that_logging_cannot_use_is_one_line(tmp_path, monkeypatch, layout):
    """`no venv`: a Python whose installed packages lie inside its own modules' folder (/usr/local/lib/python3.11/
    site-packages, pyenv's too): Hydra's frames were read as Python's own, and the error was a traceback."""
    if layout == "no venv":
        monkeypatch.setattr(loading, "STDLIB", (*loading.STDLIB, str(Path(hydra.__file__).parents[2]) + os.sep))
    (tmp_path / "presets" / "hydra" / "hydra_logging").mkdir(parents=True)
    (tmp_path / "presets" / "hydra" / "hydra_logging" / "mine.yaml").write_text("version: 1\nroot: {level: LOUD}\n")
    done = call_benchrun("--config-dir", "presets", "hydra/hydra_logging=mine", "runner.host=http://127.0.0.1:9",
                         "outputs=out", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: Hydra could not go on: ValueError: Unable to configure root logger (ValueError: Unknown "
        "level: 'LOUD')\n"))
    assert not (tmp_path / "out").exists()


def test_a_path_not_in_utf8_inside_an_errors_text_is_shown_by_its_bytes(tmp_path):
    synthetic_run(tmp_path / "root" / "deeper" / os.fsdecode(b"nv\xff"), [1, 0])
    done = call_benchrun(f"hydra.run.dir={tmp_path / 'root'}", "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: {tmp_path / 'root'} holds the run directory {tmp_path / 'root'}/deeper/nv\\xff: a run is "
        "never made around another run's files; nothing was changed; pick a new directory (hydra.run.dir=...)\n"))


@pytest.mark.parametrize("flags", [["--version"], ["--vers"], ["--verbose", "--version"]])
def test_benchrun_audit_version_says_benchruns_version(tmp_path, flags):
    done = audit(tmp_path, *flags)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["ok"], f"benchrun {metadata.version('benchrun')} (Hydra {hydra.__version__})\n", "")


@pytest.mark.parametrize("minutes", ["0", "-3"])
def test_a_local_submitit_sweep_of_no_time_is_refused_before_anything_is_made(tmp_path, minutes):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=submitit_local",
                         f"hydra.launcher.timeout_min={minutes}", "runner.host=http://127.0.0.1:9", "outputs=out",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: hydra.launcher.timeout_min={minutes}: submitit_local kills a job once it has run that many "
        "minutes, so every job would be killed before it starts; give the minutes a job may run (at least 1)\n"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("runner", "said"), [
    (["runner.host=http://127.0.0.1:9"], "Ollama at http://127.0.0.1:9 (ConnectionError)"),
    (["runner=openai", "runner.base_url=http://127.0.0.1:9/v1", "runner.model=m"],
     "the OpenAI-compatible server at http://127.0.0.1:9/v1 (ConnectError)")])
def test_a_server_not_reached_with_a_proxy_in_the_environment_says_it_was_asked_directly(tmp_path, runner, said):
    done = call_benchrun(*runner, "runner.retries=0", "outputs=out", cwd=tmp_path,
                         env={"HTTPS_PROXY": "http://proxy.example:3128"})
    key = "runner.host" if "Ollama" in said else "runner.base_url"
    start = "start it with `ollama serve`" if "Ollama" in said else "start it"
    assert (done.returncode, done.stderr) == (EXIT["runner"], (
        f"benchrun: error: cannot reach {said}, asked directly (benchrun reads no proxy; $HTTPS_PROXY "
        f"names one); {start}, or point {key} at a running server\n"))


KEY = "local-server-key-0123456789abcdef"
"""An API key of no provider's form, in a variable of no credential's name (a local server's)."""
OPENAI = ["runner=openai", "runner.base_url=http://127.0.0.1:9/v1", "runner.model=m", "runner.api_key_env=MYVAR"]
COPY_SAID = ("Hydra writes the value of each variable it names into the run's archive (.hydra/hydra.yaml), an API "
             "key's too, and every job inherits this process's environment already (a run, joblib's workers, Slurm's "
             "jobs); leave hydra.job.env_copy out")


@pytest.mark.parametrize("given", ["hydra.job.env_copy=[MYVAR]", "+hydra.job.env_copy=[NOT_SET]"])
def test_a_copy_of_variables_to_the_jobs_is_refused_before_hydra(tmp_path, given):
    done = call_benchrun(*OPENAI, given, "outputs=out", cwd=tmp_path, env={"MYVAR": KEY})
    said = f"benchrun: error: {given}: {COPY_SAID}\n"
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", said)
    assert not (tmp_path / "out").exists()


def test_a_presets_copy_of_variables_to_the_jobs_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "presets" / "extra").mkdir(parents=True)
    (tmp_path / "presets" / "extra" / "copy.yaml").write_text(
        "# @package _global_\nhydra: {job: {env_copy: [MYVAR]}}\n")
    done = call_benchrun("--config-dir", "presets", "+extra=copy", *OPENAI, "outputs=out", cwd=tmp_path,
                         env={"MYVAR": KEY})
    said = f"benchrun: error: hydra.job.env_copy=['MYVAR']: {COPY_SAID}\n"
    assert (done.returncode, done.stderr) == (EXIT["usage"], said)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("given", "key"), [(f"+hydra.job.env_set.FOO={KEY}", "hydra.job.env_set.FOO"),
                                           (f"task.system={KEY}", "task.system"),
                                           (f"+runner.options.stop=[{KEY}]", "runner.options.stop")])
def test_a_key_the_run_sends_given_as_a_value_is_refused_by_its_value(tmp_path, given, key):
    done = call_benchrun(*OPENAI, given, "outputs=out", cwd=tmp_path, env={"MYVAR": KEY})
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}: secrets are never taken from the config, where they "
        "would be archived (the value of $MYVAR); put an API key in an environment variable and name it with "
        "runner.api_key_env, and give URLs without user names or passwords\n"))
    assert not (tmp_path / "out").exists()
