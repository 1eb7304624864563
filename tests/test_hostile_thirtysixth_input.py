"""The thirty-sixth hostile pass of issue 19, the side of what goes in: the items the thirty-fifth pass left, then a
fresh pass. /work/notes/p36/result-input.md has the whole list, what held and what was left.

Fixed:
1. The process's locale and the interpreter's other settings (`compiler.runstate.SETTINGS`, out of
   execute/scorer_worker.py: trace and profile functions, the default socket timeout, the bound on an int's digits,
   the CPUs it runs on, ...) put back after a benchmark's file is imported to compile (`runstate._settings_kept`), as
   the scorer process puts them back after each call: a custom_scorer.py that set `locale.setlocale(LC_ALL,
   'de_DE.UTF-8')` at import rendered a template's `{a:n}` as `1.234.567` (`1234567` in the C locale every run
   starts in), under another manifest id, in its run and every job after it in a sweep's process.
2. A file the user saved (tasks.yml, an info.yml, judges.yml, a runner file, custom_*.py) that is not UTF-8 told
   to be saved as UTF-8, as a template, a data file and a preset were (core.filebytes.read_utf8's `saved`); the
   archive's config.yaml is not.
3. A folder task's data file (`fewshot: {file: shots.jsonl}`) missing from the benchmark's folder but in the task's
   said with the path to give (compiler.data._in_task_folder): `tasks/t/shots.jsonl`.
4. An override of several values given without -m (`runner.model=a,b`; a sweep's function: `repeats=range(1,3)`,
   `choice(...)`, `interval(...)`, `glob(*)`, `sort(2,1)`), and one of Hydra's own keys swept with -m
   (`hydra.job.name=a,b`), said in benchrun's words naming the key (compose.commandline._sweep_misplaced): Hydra's
   `Sweep parameters 'repeats=range(1,3)' requires --multirun`, and three numbered sentences whose advice printed its
   backslashes (`quote the value: key=\\'value1,value2\\'`).
5. A sweep's function inside another value (`-m repeats=range(1,3),5`, `repeats=[range(1,3)]`,
   `runner.options={seed: choice(1,2)}`) refused naming the key (compose.commandline._refuse_nested_sweeps): Hydra's
   grammar read it, and OmegaConf said `Unexpected type annotation: Set[str] full_key: tags object_type=RangeSweep`.
   (compose.sweepwords now holds this and 4, out of compose/commandline.py.)
6. An override reaching into a setting of one value (`repeats.x=1`, `runner.model.0=x`, `task.path.0=x`,
   `~runner.model.0`) said as that (compose.valuekeys.one_value_above, by the config's models), not Hydra's `Could not
   override 'repeats.x'. To append to your config use +repeats.x=1`, advice refused in turn; a runner's option too
   (`runner.options.stop.0=x`, with a '+' where no stop is given; `runner.options.temperature.x=1`).
   And an override of a judge's option the config holds none of (`judge.options.top_k=1`; `judge.options.x=1`, an
   option no runner has) said as a runner's is (compose.config.keys_taken: the judge's options are a runner's), not
   Hydra's `Could not override 'judge.options.x'. To append to your config use +judge.options.x=1`.
7. A preset of benchrun's groups named by a path (`runner=../model/gemma3`, `model=./gemma3`, `runner=/etc/x`,
   `runner=ollama/`) or by its file's name (`runner=ollama.yaml`) refused (compose.commandline._refuse_preset_paths):
   Hydra read a model preset as a runner (`runner.host: the config holds no value of it`), said `In
   'model/../runner/openai': Could not load 'model/base/openai'`, or took it, the path recorded as the preset's name;
   in a preset's own defaults list (`override /runner: ../model/gemma3`) too (compose.userpresets._default_path).
8. A key, an option or an example's value named as one taken but for case suggested as that one
   (core.keys.closest): `top_K` was `did you mean 'top_p'?`, `SCORER` given the whole list of keys.
9. A scorer or format named in a task file as written in custom_*.py but not composed as Python composes names
   (`def cafe\u0301` defines `café`, NFKC; `scorer: "cafe\u0301"` in tasks.yml) said so, with the name to write
   (compiler.plan._as_python_reads): it was only `unknown scorer 'café' (cafe\u0301) (...; in custom_scorer.py:
   café)`, the same text written in both files.
"""

from __future__ import annotations

import locale

import pytest

from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p36_input import FOLDER_SHOTS, LOCALE_SCORER


def test_a_locale_a_benchmarks_file_sets_as_it_is_imported_is_put_back(tmp_path):
    """Before: the locale of numbers C.UTF-8 after the compile (de_DE's rendered `{a:n}` of 1234567 `1.234.567`)."""
    was = locale.setlocale(locale.LC_NUMERIC)
    try:
        done = dry_run(tmp_path, {"tasks.yml": TASK + "  scorer: s\n", "custom_scorer.py": LOCALE_SCORER})
        assert (done.returncode, locale.setlocale(locale.LC_NUMERIC)) == (0, was)
    finally:
        locale.setlocale(locale.LC_NUMERIC, was)


def test_a_task_file_that_is_not_utf8_is_told_to_be_saved_as_utf8(tmp_path):
    """Before: `... not UTF-8 text (invalid continuation byte, 0xe9)`, with no word of what to do, as a template's
    had."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "judges.yml").write_bytes("- name: caf\u00e9\n".encode("latin-1"))
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "judge.model=j")) == refusal(
        "in 'judges.yml': line 1, column 12: not UTF-8 text (invalid continuation byte, 0xe9); save it as UTF-8")


def test_a_folder_tasks_data_file_in_its_folder_is_said_with_the_path_to_give(tmp_path):
    """Before: `file 'shots.jsonl' is missing (paths are relative to the benchmark directory)`."""
    assert ended(dry_run(tmp_path, FOLDER_SHOTS)) == refusal(
        "in 'tasks/t/info.yml': task 't': fewshot.file: file 'shots.jsonl' is missing (paths are relative to the "
        "benchmark directory: give 'tasks/t/shots.jsonl', the file in the task's folder)")


@pytest.mark.parametrize(("args", "said"), [
    (("runner.model=a,b",), "runner.model: 'a,b' gives several values, which only a sweep (-m) runs, one job each: "
                            "add -m, or give one value: a list in brackets (runner.model=[a,b]) or, for text holding a "
                            "comma, quoted (runner.model='a,b')"),
    (("+runner.options.seed='1',2",), "runner.options.seed: \"'1',2\" gives several values, which only a sweep (-m) "
                                      "runs, one job each: add -m, or give one value: a list in brackets "
                                      "(+runner.options.seed=['1',2])"),
    (("repeats=range(1,3)",), "repeats: 'range(1,3)' is a sweep, which runs one job for each of its values, and only "
                              "with -m (--multirun): add -m, or give one value"),
    (("repeats=sort(2,1)",), "repeats: 'sort(2,1)' is a sweep, which runs one job for each of its values, and only "
                             "with -m (--multirun): add -m, or give one value"),
    (("-m", "hydra.job.name=a,b"), "hydra.job.name: 'a,b' sweeps Hydra's own setting, which is one for the whole "
                                   "sweep: give it one value")])
def test_a_sweep_given_where_none_is_run_is_said_in_benchruns_words(tmp_path, args, said):
    """Before: `Sweep parameters 'repeats=range(1,3)' requires --multirun`, `Ambiguous value for argument ... 2. To use
    it as string, quote the value: key=\\'value1,value2\\' 3. ...`, `Sweeping over Hydra's configuration is not
    supported : 'hydra.job.name=a,b'`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, *args)) == refusal(f"in 'config': {said}")


@pytest.mark.parametrize(("arg", "key", "value"), [
    ("repeats=range(1,3),5", "repeats", "'range(1,3),5'"), ("repeats=[range(1,3)]", "repeats", "'[range(1,3)]'"),
    ("runner.options={seed: choice(1,2)}", "runner.options", "'{seed: choice(1,2)}'")])
def test_a_sweep_inside_another_value_is_refused(tmp_path, arg, key, value):
    """Before: `Unexpected type annotation: Set[str] full_key: tags object_type=RangeSweep`, `Error merging override
    repeats=[range(1,3)] (Unexpected type annotation: Set[str])`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "-m", arg)) == refusal(
        f"in 'config': {key}: {value} holds a sweep (a range, choice, interval or glob) inside another value (a list, "
        "a mapping or a sweep's values), where none is read: give the sweep as the override's whole value, with -m, or "
        "list the values it gives")


@pytest.mark.parametrize(("arg", "key", "one"), [
    ("repeats.x=1", "repeats.x", "repeats"), ("runner.model.0=x", "runner.model.0", "runner.model"),
    ("~runner.model.0", "runner.model.0", "runner.model"),
    ("runner.options.temperature.x=1", "runner.options.temperature.x", "runner.options.temperature"),
    ("runner.options.stop.0=x", "runner.options.stop.0", "+runner.options.stop")])
def test_an_override_into_a_setting_of_one_value_is_said_as_that(tmp_path, arg, key, one):
    """Before: `Could not override 'repeats.x'. To append to your config use +repeats.x=1` (then refused: `repeats: a
    mapping, where a whole number is taken`), `Could not delete from config. 'runner.model.0' does not exist.`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, arg)) == refusal(
        f"in 'config': {key}: '{one.lstrip('+')}' takes one value (a number, a text, or a list given whole), not keys "
        f"or items overridden one at a time: override it whole ({one}=...)")


@pytest.mark.parametrize(("arg", "said"), [
    ("runner=../model/gemma3", "runner: '../model/gemma3' is a path, where a preset's name belongs (shipped: local, "
                               "ollama, openai; presets of your own: --config-dir DIR, with runner/NAME.yaml in it)"),
    ("model=./gemma3", "model: './gemma3' is a path, where a preset's name belongs (shipped: gemma3, llama3.2; presets "
                       "of your own: --config-dir DIR, with model/NAME.yaml in it)"),
    ("runner=ollama.yaml",
     "runner: 'ollama.yaml' names the preset's file, where its name belongs: give runner=ollama")])
def test_a_preset_named_by_a_path_or_its_file_is_refused(tmp_path, arg, said):
    """Before: `runner.host: the config holds no value of it to override` (a model preset read as a runner); taken,
    `./gemma3` and `ollama.yaml` recorded as the preset's name."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, arg)) == refusal(f"in 'config': {said}")


@pytest.mark.parametrize(("files", "args", "said"), [
    ({"tasks.yml": TASK}, ("+runner.options.top_K=1",),
     "in 'config': runner.options.top_K: unknown option 'top_K' (did you mean 'top_k'?)"),
    ({"tasks.yml": TASK + "  SCORER: exact_match\n"}, (),
     "in 'tasks.yml': task 't': tasks[0].SCORER: unknown key 'SCORER' (did you mean 'scorer'?)")])
def test_a_name_taken_but_for_case_is_the_one_suggested(tmp_path, files, args, said):
    """Before: `unknown option 'top_K' (did you mean 'top_p'?)`; `unknown key 'SCORER' (allowed: name, template,
    ...)`."""
    assert ended(dry_run(tmp_path, files, *args)) == refusal(said)


def test_a_preset_named_by_a_path_in_a_presets_defaults_list_is_refused(tmp_path):
    """Before: `in 'config': runner.host: the config holds no value of it to override` (the model preset gemma3 read
    as the runner)."""
    preset = tmp_path / "my" / "model" / "mine.yaml"
    preset.parent.mkdir(parents=True)
    preset.write_text("# @package _global_\ndefaults:\n  - override /runner: ../model/gemma3\n")
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "--config-dir", "my", "model=mine")) == refusal(
        f"in '{preset}': line 3, column 23: defaults: '../model/gemma3' is a path, where a preset's name belongs "
        "(shipped: local, ollama, openai; presets of your own: --config-dir DIR, with runner/NAME.yaml in it)")


def test_an_override_of_a_judges_option_not_held_is_said_as_a_runners_is(tmp_path):
    """Before: `Could not override 'judge.options.top_k'. To append to your config use +judge.options.top_k=1` (the
    key not named as the config's)."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "judge.options.top_k=1")) == refusal(
        "in 'config': judge.options.top_k: the config holds no value of it to override; add it with a '+': "
        "+judge.options.top_k=1")


def test_a_scorer_named_as_written_in_its_file_but_not_composed_as_python_reads_it_is_said_so(tmp_path):
    """Before: `unknown scorer 'café' (cafe\\u0301) (built-in: contains, exact_match; in custom_scorer.py: café)`."""
    files = {"tasks.yml": TASK + '  scorer: "cafe\\u0301"\n',
             "custom_scorer.py": "def cafe\u0301(response, reference):\n    return 1\n"}
    assert ended(dry_run(tmp_path, files)) == refusal(
        "in 'tasks.yml': task 't': tasks[0].scorer: unknown scorer 'cafe\u0301' (cafe\\u0301) (built-in: contains, "
        "exact_match; in custom_scorer.py: caf\u00e9 (caf\\xe9)): Python reads custom_scorer.py's names composed "
        "(NFKC), so it defines 'caf\u00e9': write it so")
