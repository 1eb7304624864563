"""The thirty-first hostile pass, the lead's part.

- A model's name with whitespace at an end (`runner.model=' gemma3'`, `judge.model='gemma3 '`, an item of a list),
  a quoting slip, passed the dry run; the run was then refused as a model not pulled, advising `ollama pull gemma3 `
  (Ollama's names hold no whitespace). It is refused at compile, naming the name to give
  (`core.settings._trimmed`).
- An option given by the OpenAI API's name (`+runner.options.max_tokens=256`, with runner=openai above all) was said
  as `unknown option 'max_tokens' (allowed: numa, num_ctx, ...)`, forty of Ollama's names, no word of num_predict, the
  one runner=openai sends as max_tokens: said with its own name (`compose.config.checked_options`, from the map
  runner=openai sends by, now `core.settings.OPENAI_FIELDS`).
- `cache_dir=RUN` (a finished run's directory, or a folder inside it) wrote the response cache, every run's answers and
  SQLite's files beside them, into that run's archive, where verify still called it intact; a sweep's directory
  alike. Refused before anything is asked (`archive.claims.archive_around`, from `execute.cache.store_for`).
- `runner.model=5` (or `=true`, `runner=openai runner.model=5`, a sweep `-m runner.model=range(1,3)`) was said as `5 is
  not valid here`, nothing of what belongs (the input side's case 77), where `judge.model=5` was said as Hydra read
  it and how to quote it: a key taking text or a list is said so too, and a value of no kind it takes with the
  description of the field a runner declares anew for its default (`compose.config._description`).
- An advised command naming a run whose folder's name is not UTF-8 (`nv\\xff`) gave it as `'nv\ufffd'` (the archive
  side's case 48, its `in '...'` mended there), a path not on the disk, so the command pasted named nothing: such a
  path is written as bash reads its bytes back, `$'nv\\xff'` (`core.advice.audit_command`).
- The context Ollama loaded a model with, archived this pass (`identity.context_length`), was shown by neither show
  nor compare: two runs of one digest loaded with 4096 and 8192 tokens of context compared as of one model. show's
  model line says it, compare sets it beside the digest (`audit.provenance.PROVENANCE_KEYS`, `audit.heading`).
- Found in the merge: the input side's check of a `--config-dir` folder's presets read every `.yaml` beneath it, so a
  project's own folder given whole (`--config-dir .`, its presets in `runner/`) was refused for a YAML list its
  virtual environment holds (`.venv/.../hydra/test_utils/.../list.yaml: it holds a list, where a preset holds keys`).
  Only what Hydra may read as a preset is checked: the primary config and the folders named as config groups (of
  benchrun's, or on the command line), no hidden folder (`compose.userpresets._yaml_files`).
- A preflight waiting on a busy server's Retry-After (this pass's asking side: up to runner.timeout_s, runner.retries
  times) said nothing while the user waited, up to 40 minutes with nothing on the console: a wait of a second or more
  is a warning line naming the server and the try (`runners.retryafter.heeding`, tenacity's before_sleep).
"""

from __future__ import annotations

import os

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import call_benchrun
from tests.helpers.p31_asking import busy_listing

UNTRIMMED = [("runner.model=' gemma3'", "runner.model", "' gemma3' has whitespace at its start"),
             ("runner.model=[llama3.2,'gemma3 ']", "runner.model", "'gemma3 ' has whitespace at its end"),
             ("judge.model='gemma3\u00a0'", "judge.model", "'gemma3\\xa0' has whitespace at its end")]


@pytest.mark.parametrize(("override", "key", "said"), UNTRIMMED, ids=[row[0] for row in UNTRIMMED])
def test_a_model_name_with_whitespace_at_an_end_is_refused_at_compile(tmp_path, override, key, said):
    result = call_benchrun("dry_run=true", override, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}: {said}, which no model's name has: give 'gemma3'\n"))


@pytest.mark.parametrize("runner", [["runner=openai", "runner.model=m"], ["runner=local"], ["judge.model=j"]],
                         ids=["openai", "local", "judge"])
def test_an_option_given_by_the_openai_apis_name_is_said_with_its_own(tmp_path, runner):
    key = "judge" if runner == ["judge.model=j"] else "runner"
    result = call_benchrun("dry_run=true", *runner, f"+{key}.options.max_tokens=256", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}.options.max_tokens: 'max_tokens' is the OpenAI API's name: benchrun's "
        "options take Ollama's names, num_predict for this one (runner=openai sends it as max_tokens)\n"))


@pytest.mark.parametrize("inside", ["", "sub/dir"])
def test_the_response_cache_is_never_kept_in_a_runs_directory(tmp_path, inside):
    run_dir = synthetic_run(tmp_path / "run", [1.0])
    before = sorted(path.name for path in run_dir.iterdir())
    result = call_benchrun("runner.host=http://127.0.0.1:9", f"outputs={tmp_path / 'o'}",
                           f"cache_dir={run_dir / inside}", cwd=tmp_path)
    where = "a run's directory" if not inside else f"inside a run's directory ({run_dir})"
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': cache_dir: {run_dir / inside if inside else run_dir} is {where}, which holds "
        "that run's files alone; put the cache elsewhere (cache_dir=DIR), or cache=false\n"))
    assert sorted(path.name for path in run_dir.iterdir()) == before


def test_the_response_cache_is_never_kept_in_a_sweeps_directory(tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("{}\n")
    result = call_benchrun("runner.host=http://127.0.0.1:9", f"outputs={tmp_path / 'o'}", f"cache_dir={sweep}",
                           cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': cache_dir: {sweep} is a sweep's directory, which holds that sweep's files "
        "alone; put the cache elsewhere (cache_dir=DIR), or cache=false\n"))
    assert sorted(path.name for path in sweep.iterdir()) == ["multirun.yaml"]


UNQUOTED = [(["runner.model=5"], "runner.model", "5", "a number"),
            (["runner=openai", "runner.model=true"], "runner.model", "true", "a boolean")]


@pytest.mark.parametrize(("args", "key", "given", "read"), UNQUOTED, ids=["5", "openai-true"])
def test_a_model_named_by_a_number_is_said_as_hydra_read_it(tmp_path, args, key, given, read):
    result = call_benchrun("dry_run=true", *args, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}: Input should be a valid string, not {given} (Hydra's overrides and YAML "
        f"read it unquoted as {read}); quote it as written, e.g. {key}='{given}'\n"))


def test_a_model_of_no_kind_it_takes_is_said_with_what_belongs(tmp_path):
    result = call_benchrun("dry_run=true", "runner.model={a:1}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'config': runner.model: {\"a\": 1} is not valid here (A model name, or a list of names "
        "(one run each).)\n"))


def test_an_advised_command_gives_a_path_that_is_not_utf8_as_a_shell_reads_its_bytes(tmp_path):
    run_dir = synthetic_run(tmp_path / os.fsdecode(b"nv\xff it's"), [1, 0])
    (run_dir / "seal.json").unlink()
    done = audit(tmp_path, "show", str(run_dir))
    assert (done.returncode, done.stderr.split("; ")[-1]) == (
        EXIT["archive"], f"benchrun-audit verify $'{tmp_path}/nv\\xff it\\'s' says what changed\n")


def test_the_context_a_model_was_loaded_with_is_shown_and_compared(tmp_path):
    digest = "sha256:" + "a" * 64
    first = synthetic_run(tmp_path / "a", [1, 0], identity={"digest": digest, "context_length": 4096}, run_id="1" * 12)
    second = synthetic_run(tmp_path / "b", [1, 1], identity={"digest": digest, "context_length": 8192}, run_id="2" * 12)
    shown, compared = audit(tmp_path, "show", str(first)), audit(tmp_path, "compare", str(first), str(second))
    model = next(line for line in shown.stdout.splitlines() if line.startswith("model "))
    assert (model.split()[-2:], compared.stdout.splitlines()[4]) == (
        ["context", "4096"], "  provenance model.context_length: 4096 -> 8192")


def test_a_project_folder_given_as_config_dir_is_read_for_its_presets_alone(tmp_path):
    for folder, listed in [(".venv/lib/site-packages/pkg", "list.yaml"), ("docs", "nav.yaml"), ("runner", "mine.yaml")]:
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / listed).write_text("- a\n- b\n")
    (tmp_path / "runner" / "mine.yaml").write_text("defaults:\n  - ollama\n  - _self_\nmodel: gemma3\n")
    done = call_benchrun("--config-dir", ".", "runner=mine", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr, done.stdout.splitlines()[-1]) == (
        EXIT["ok"], "", "manifest id: adca08521fdd19421d92576a5af6388b7bf74eb58c57032ee74b4770dcaaab86")


@pytest.mark.parametrize(("runner", "server", "count"), [("openai", "the server at {}", 2),
                                                         ("ollama", "Ollama at {}", 3)])
def test_a_preflight_waiting_on_a_busy_servers_retry_after_says_so(tmp_path, runner, server, count):
    """Asked once busy, then once more (Ollama's list asked again at the end, for the digest)."""
    url, done, times = busy_listing(tmp_path, runner, "1")
    assert (done.returncode, done.stderr, times) == (EXIT["ok"], (
        f"benchrun: warning: {server.format(url)} is busy and asks to be asked again after Retry-After: 1 s: the "
        "preflight is asked again then (try 2 of 3)\n"), count)
