"""The twenty-third hostile pass of issue 19, the side of what goes in (compose): the review's findings first, then
what the pass found. /work/notes/p23/result-compose.md has the whole list, what held and what was left.

Fixed:
1. A runner given both its key names on the command line with other values (`runner.type=ollama` beside
   `+runner.runner_type=openai`) was run as the later, nothing said, where a runner file's two names are refused: the
   config's runner is read by `compose.runneryml.by_our_names` as a runner file's is.
2. A run directory given as `++hydra.run.dir=...` was told `give outputs= ...` when refused for its path: the
   command line's overrides are read by one key parser (`core.keys.override_key`), the `+`s and a package left off.
3. A single run with `hydra/launcher=joblib hydra.launcher.n_jobs=0` (a launcher it never uses) was refused for
   joblib's number of jobs: joblib's checks are a sweep's, in one place (`compose.lokykeys.workers_refusal`).
4. An `unraisablehook` set after benchrun's signal handling was imported and before it was installed (a test runner's,
   a launcher's) was passed over: the hook it hands other reports to is the one installed when it takes over
   (`core.interrupts.Interrupts.install`).
5. `python -m benchrun` imported `importlib.metadata` (for `--version` alone) before it handled signals: imported
   where the version is said (`archive.writer.installed_version`, the one helper for versions).
6. A credential's name of one word, the credential's word glued to another (`PGPASSWORD`, PostgreSQL's; `HFTOKEN`),
   was no credential's name: `+hydra.job.env_set.PGPASSWORD=...` was kept in the run's .hydra/ copies, and
   `runner.model=${oc.env:PGPASSWORD}` asked (and named a run directory by) the password (`core.secrets.GLUED_WORDS`).
7. Two samples whose ids are one text written in two Unicode forms (`café` composed, and decomposed, from an id column
   or from the values) were two samples, shown and exported under one id: ids are told apart as text, in Unicode's
   composed form (`compiler.grid._unique`).
8. Two value names of one text in two Unicode forms (a JSONL record's keys, a CSV header's columns) were
   two values, shown as one name and exported as two columns of one name (`compiler.grid._names_apart`).
9. A boolean for a number setting (`repeats=true`, `task.max_samples=true`, `runner.concurrency: true` in a runner
   file) was taken as 1, recorded so in config.yaml, and a limit refused naming a 1 never given: the config models
   refuse it, as runner options did (`core.settingsbase.Settings`).
10. A key pasted where no variable holds it (`runner.model=hf_...`, `task.system=... sk-proj-...`, an AWS access
   key id in `hydra.job.env_set`) was taken, and archived: a key is told by its provider's prefix too
   (`core.secrets.KNOWN_KEY`).
11. A key given as the name of the variable that holds it (`runner.api_key_env=<the key>`, a runner file's
   `api_key_env:`): no variable of that name, so no key was sent, and the key kept in config.yaml: a name that reads
   as a key (its characters random) and that no variable has is refused as one (`core.secrets.key_as_name`).
12. A file's path given for the key (`OPENAI_API_KEY=~/keys/openai.txt`, the file meant) was sent to the server as
   the key, and masked wherever it stood in the archive: a key's value is refused when it is a path
   (`core.secrets._refuse_path`).
13. A single run's directory named by a credential (`hydra.run.dir=outputs/${oc.env:V}` of a variable holding a key,
   a model's name read so) was made, the key in its name, run.json and every record: only a sweep's directory was
   checked, and only for a credential-named variable's value. Both are checked for any credential before Hydra makes
   them (`compose.hydranames.secret_refusal`).
14. A text of only whitespace where text is asked (a tasks.yml template, system prompt or example turn, a shots
   file's turn, `task.system='   '`) was taken where an empty one is refused (as a folder task's blank template.txt
   was): the schemas' `pattern: \\S` (`compiler.schemas.SOME_TEXT`), and `core.settings._some_text`.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from tests.helpers.commands import call_benchrun

HOST = "runner.host=http://127.0.0.1:9"


def test_a_runner_type_given_by_both_its_names_with_other_values_is_refused(tmp_path):
    """Before: asked as runner_type openai, the ollama type given beside it dropped unsaid."""
    done = call_benchrun("task=listbench", "runner=openai", "+runner.runner_type=ollama", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': runner: runner_type and type: one key given twice, with other values (type is "
        "benchrun's name for runner_type, and one would be taken unsaid); give one\n"))


def test_a_runner_type_given_by_both_its_names_with_one_value_is_taken(tmp_path):
    done = call_benchrun("task=listbench", "+runner.runner_type=ollama", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


def test_a_run_directory_forced_with_plus_plus_is_told_to_give_another(tmp_path):
    """Before: `...; run benchrun in a folder whose path holds no '${', or give outputs= a directory whose path holds
    none`: outputs= does not set the hydra.run.dir the command line forces."""
    folder = tmp_path / "a${x}"
    folder.mkdir()
    done = call_benchrun("task=listbench", HOST, "++hydra.run.dir=myrun", cwd=folder)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': hydra.run.dir: its path {folder / 'myrun'} holds '${{', which Hydra reads as an "
        "interpolation where it keeps the path in its config (the run's log, its output directory); run benchrun in a "
        "folder whose path holds no '${', or give hydra.run.dir a directory whose path holds none\n"))
    assert list(folder.iterdir()) == []


def test_a_single_run_is_not_refused_for_a_sweep_launchers_number_of_jobs(tmp_path):
    """Before: `hydra.launcher.n_jobs=0: n_jobs == 0 in Parallel has no meaning`, of a launcher a run never uses."""
    done = call_benchrun("task=listbench", "hydra/launcher=joblib", "hydra.launcher.n_jobs=0", "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert "dry run: no model was called" in done.stdout


UNRAISABLE = """
import sys
from benchrun.core.interrupts import INTERRUPTS

sys.unraisablehook = lambda unraisable: print("mine:", unraisable.exc_value)
INTERRUPTS.install()

class Dropped:
    def __del__(self):
        raise ValueError("dropped")

Dropped()
"""


def test_a_hook_for_dropped_exceptions_set_before_install_is_the_one_handed_them(tmp_path):
    """Before: Python's own hook reported it (`Exception ignored in: ...`, a traceback on standard error)."""
    done = subprocess.run([sys.executable, "-c", UNRAISABLE], cwd=tmp_path, env=child_env(None), capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "mine: dropped\n", "")


def test_benchruns_entry_loads_no_package_metadata_before_it_handles_signals(tmp_path):
    """Before: `importlib.metadata` (some 18 ms) was imported with `benchrun.__main__`, before INTERRUPTS.install, only
    for `--version`: a Ctrl-C then was Python's traceback."""
    done = subprocess.run([sys.executable, "-c", "import sys, benchrun.__main__; print('importlib.metadata' in "
                           "sys.modules)"], cwd=tmp_path, env=child_env(None), capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\n", "")


REFUSED = ("secrets are never taken from the config, where they would be archived ({}); put an API key in an "
           "environment variable and name it with runner.api_key_env, and give URLs without user names or passwords")
PASSWORD = "Xk3sPq9AbCdEfGhIjKlMn"
"""A password as $PGPASSWORD (PostgreSQL's variable for one, a name of one word) holds it."""


def test_a_password_handed_to_the_job_under_a_name_of_one_word_is_refused(tmp_path):
    """Before: taken, and kept in the run's .hydra/hydra.yaml twice (its overrides and its env_set)."""
    done = call_benchrun("task=listbench", HOST, "dry_run=true", f"+hydra.job.env_set.PGPASSWORD={PASSWORD}",
                         "hydra.run.dir=run", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': hydra.job.env_set.PGPASSWORD: " + REFUSED.format("a credential's name") + "\n"))
    assert list(tmp_path.iterdir()) == []


def test_a_password_read_from_a_variable_named_in_one_word_is_refused(tmp_path, monkeypatch):
    """Before: the model asked was the password, and the run directory named by it."""
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    done = call_benchrun("task=listbench", HOST, "dry_run=true", "runner.model=${oc.env:PGPASSWORD}", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': runner.model: " + REFUSED.format(
            "${oc.env:PGPASSWORD}, which reads the credential in $PGPASSWORD") + "\n"))


CAFE, CAFE_NFD = "caf\u00e9", "cafe\u0301"
"""One word, composed (NFC, as most keyboards write it) and decomposed (NFD, as macOS's file names and some PDFs)."""
TWO_FORMS = ("one text written in two Unicode forms, composed and decomposed: 'é' as one character, or as 'e' and a "
             "combining accent")


@pytest.mark.parametrize(("values", "key", "fix"), [
    (f'id: ["{CAFE}", "{CAFE_NFD}"]\n    w: [1, 2]', "values.id", "make the ids unique"),
    (f'w: ["{CAFE}", "{CAFE_NFD}"]', "values", "make the values unique or add an 'id' column")])
def test_two_sample_ids_of_one_text_in_two_unicode_forms_are_refused(tmp_path, values, key, fix):
    """Before: two samples, both shown and exported as `t:café` (or `t:w=café`), one of them found by what a user
    types."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "tasks.yml").write_text(f'- name: t\n  template: "say {{w}}"\n  values:\n    {values}\n',
                                                   encoding="utf-8")
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    given = f"t:{CAFE_NFD}" if key == "values.id" else f"t:w={CAFE_NFD}"
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'tasks.yml': task 't': tasks[0].{key}: duplicate sample id '{given}' (samples 1 and 2, "
        f"{TWO_FORMS}); {fix}\n"))


@pytest.mark.parametrize(("files", "where"), [
    ({"tasks.yml": '- name: t\n  template: "say {w}"\n  values_file: v.jsonl\n',
      "v.jsonl": f'{{"w": 1, "{CAFE}": 2, "{CAFE_NFD}": 3, "reference": 1}}\n'}, f"'v.jsonl': task 't': column '{CAFE_NFD}'"),
    ({"tasks.yml": '- name: t\n  template: "say {w}"\n  values_file: v.csv\n',
      "v.csv": f"w,{CAFE},{CAFE_NFD},reference\n1,2,3,4\n"}, f"'v.csv': task 't': column '{CAFE_NFD}'")])
def test_two_value_names_of_one_text_in_two_unicode_forms_are_refused(tmp_path, files, where):
    """Before: taken, `show` listing `café 2` and `café 3`, and an export two columns `value.café`."""
    (tmp_path / "bench").mkdir()
    for name, text in files.items():
        (tmp_path / "bench" / name).write_text(text, encoding="utf-8")
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in {where}: the value names '{CAFE}' and '{CAFE_NFD}' are shown, and exported as columns, "
        f"as one: {TWO_FORMS}; give each its own name\n"))


@pytest.mark.parametrize(("given", "said"), [
    ("repeats=true", "repeats: Input should be a valid integer, not true"),
    ("task.max_samples=true", "task.max_samples: Input should be a valid integer, not true"),
    ("scorer_timeout_s=false", "scorer_timeout_s: Input should be a valid number, not false"),
    ("runner.concurrency=true", "runner.concurrency: Input should be a valid integer, not true"),
    ("runner.keep_alive=true", "runner.keep_alive: Input should be a valid number or text, not true")])
def test_a_boolean_given_for_a_number_setting_is_refused(tmp_path, given, said):
    """Before: taken as 1 (config.yaml's `repeats: 1`), and `task.max_samples=true` said `more than task.max_samples
    (1)`, a number never given."""
    done = call_benchrun("task=listbench", HOST, "dry_run=true", given, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'config': {said}\n")


def test_a_boolean_given_for_a_number_in_a_runner_file_is_said_of_the_file(tmp_path):
    (tmp_path / "r.yml").write_text("runner_type: ollama\nmodel: llama3.2\nconcurrency: true\n")
    done = call_benchrun("task=listbench", HOST, "dry_run=true", "runner_file=r.yml", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'r.yml': concurrency: Input should be a valid integer, not true\n"))


@pytest.mark.parametrize(("given", "key", "prefix"), [
    ("runner.model=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "runner.model", "hf_"),
    ("task.system=use sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "task.system", "sk-"),
    ("+hydra.job.env_set.AWS_ID=AKIAIOSFODNN7EXAMPLE", "hydra.job.env_set.AWS_ID", "AKIA")])
def test_a_key_told_by_its_prefix_is_refused_where_no_variable_holds_it(tmp_path, monkeypatch, given, key, prefix):
    """Before: taken (no variable held it to compare), the key in config.yaml, Hydra's copies, the run's name."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    done = call_benchrun("task=listbench", HOST, "dry_run=true", given, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': {key}: " + REFUSED.format(f"a key by its prefix, {prefix}...") + "\n"))


@pytest.mark.parametrize("given", ["runner.model=sk-learn-tutorial-for-beginners", "task.system=ask hf_transfer_docs",
                                   "runner.model=mask-AbCdEfGhIjKlMnOpQrSt0123"])
def test_words_that_begin_as_a_key_does_are_no_key(tmp_path, given):
    done = call_benchrun("task=listbench", HOST, "dry_run=true", given, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


def test_a_key_given_as_the_name_of_its_variable_is_refused(tmp_path):
    """Before: taken, no key sent (no variable of that name), and the key kept in config.yaml as the variable's name."""
    (tmp_path / "r.yml").write_text("runner_type: openai\nmodel: m\napi_key_env: Xk3sPq9AbCdEfGhIjKlMnOp4\n")
    for args, where in ((["runner=openai", "runner.api_key_env=Xk3sPq9AbCdEfGhIjKlMnOp4"], "'config': runner."),
                        (["runner_file=r.yml"], "'r.yml': ")):
        done = call_benchrun("task=listbench", "dry_run=true", *args, cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
            f"benchrun: error: in {where}api_key_env: " + REFUSED.format(
                "a key given where the name of the variable holding it belongs: no variable of that name is set") + "\n"))


def test_a_variable_named_in_words_that_is_unset_is_no_key(tmp_path):
    done = call_benchrun("task=listbench", "runner=openai", "runner.api_key_env=MY_SERVICE_API_KEY_PRODUCTION",
                         "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


@pytest.mark.parametrize("path", ["/home/u/secrets/openai-key.txt", "~/keys/openai.txt", "./keys/a-long-openai-key"])
def test_a_files_path_given_for_the_key_is_refused(tmp_path, monkeypatch, path):
    """Before: taken, the path sent to the server as the key, and masked wherever it stood in the archive."""
    monkeypatch.setenv("OPENAI_API_KEY", path)
    done = call_benchrun("task=listbench", "runner=openai", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: runner.api_key_env: $OPENAI_API_KEY holds a file's path, not a key (a key is sent as it is, "
        "in an HTTP header); set OPENAI_API_KEY to the key itself, the file's contents: export "
        "OPENAI_API_KEY=\"$(cat PATH)\"\n"))


@pytest.mark.parametrize("args", [["hydra.run.dir=outputs/${oc.env:MYV}"], ["hydra.run.dir=outputs/${oc.env:MYV}",
                                                                             "dry_run=true"]])
def test_a_run_directory_named_by_a_key_is_refused_before_it_is_made(tmp_path, monkeypatch, args):
    """Before: the run (a dry run too) made `outputs/sk-proj-...`, its run.json, records and Hydra's copies there."""
    monkeypatch.setenv("MYV", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789")
    done = call_benchrun("task=listbench", HOST, *args, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': hydra.run.dir: secrets are never taken from the config, where they would be "
        "archived (${oc.env:MYV}, which reads the credential in $MYV); put an API key in an environment variable and "
        "name it with runner.api_key_env, and give URLs without user names or passwords\n"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("text", "key"), [('template: "   "', "template"), ('template: "{a}"\n  system: "  "', "system"),
                                           ('template: "{a}"\n  fewshot: [{user: "  ", assistant: x}]', "fewshot[0].user"),
                                           ('template: "{a}"\n  fewshot: [{user: q, assistant: " "}]',
                                            "fewshot[0].assistant")])
def test_a_text_of_only_whitespace_where_text_is_asked_is_refused(tmp_path, text, key):
    """Before: taken (an empty one is refused), every sample asked a blank prompt, or sent a blank system prompt or
    example; a folder task's template.txt of only whitespace was refused as empty already."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "tasks.yml").write_text(f"- name: t\n  {text}\n  values: {{a: [1, 2]}}\n  reference: [1, 2]\n")
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'tasks.yml': task 't': tasks[0].{key}: \" \" is only whitespace, which asks or says "
        "nothing: give the text\n"))


def test_a_system_prompt_of_only_whitespace_on_the_command_line_is_refused(tmp_path):
    """Before: every task's own system prompt replaced by three spaces."""
    done = call_benchrun("task=listbench", HOST, "dry_run=true", "task.system='   '", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': task.system: only whitespace and invisible characters, which say nothing: give "
        "the system prompt's text, or leave task.system out for the tasks' own\n"))
