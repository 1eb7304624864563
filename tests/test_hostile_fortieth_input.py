"""The fortieth hostile pass of issue 19, the side of what goes in: the item the thirty-ninth pass left, then a
fresh pass. /work/notes/p40/result-input.md has the whole list, what held and what was left.

Fixed:
1. Two runs whose benchmark names (task.name, or any config value) differ only in their Unicode form (`café` as one
   character and as `e` and a combining accent, a macOS folder's name) said apart by `compare` (audit.inputs): it
   printed `config task.name: "café" -> "café"`, a difference that reads as none; so are a benchmark's file and a
   sample's id in another form, each only in one run (`file café.jsonl: only in the baseline` and `... only in the
   compared run`, printed alike).
2. A preset of the user's own holding a value YAML tags as no JSON value, or as read otherwise than written, refused
   naming its file, line and column, as a benchmark's file is (compose.userpresets, its YAML now resolved as OmegaConf
   resolves it): `!!timestamp 2024-01-01` was `benchrun: error: (Value 'date' is not a supported primitive type)`, as
   a key Hydra's bare `ConfigCompositionException`; `!!python/object/apply:pathlib.Path [m]` a Python path, said as
   `runner.model: "m" is not valid here`; a quoted value tagged `!!int '0x2'`, `!!bool 'on'`, `!!int '1:30'` taken
   as 2, true and 90, where a benchmark's file refuses them.
3. A sweep listing two values whose jobs' labels print alike, one text in two Unicode forms (`task.name='café',
   'cafe\u0301'`) or but for white space at its end (`task.system=x,'x '`), refused (compose.sweptonce): two jobs
   labelled `café · ...` alike in the sweep's table, report and exports.
4. A sweep listing a number and its text (`repeats=2,'2'`), which the config reads as one value, refused as
   `repeats=10,010` is (compose.sweptonce): two jobs of one config (one manifest id) ran, the check skipping two values
   shown alike.
5. A sweep listing a value its job's config refuses (`-m runner.options.seed=1,x`, `repeats=1,x`, a strict option's
   text `runner.options.temperature=0,'0.5'`) refused before any job starts (compose.sweptvalues), exit 2, as the job
   would say it: job 0 ran whole (a real sweep: every sample asked), then job 1 ended the sweep, exit 1.
"""

from __future__ import annotations

import pytest

from benchrun.audit.inputs import PromptDiff, diff
from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p40_input import compare_lines


@pytest.mark.parametrize(("baseline", "run", "said"), [
    ("caf\u00e9", "cafe\u0301", '"caf\\u00e9" -> "cafe\\u0301" (one text in two Unicode forms, which print alike)'),
    ("caf\u00e9", "cafe", '"caf\u00e9" -> "cafe"')])
def test_config_values_in_two_unicode_forms_are_told_apart_by_compare(baseline, run, said):
    """Before: `config task.name: "café" -> "café"`."""
    assert compare_lines(config=diff({"task.name": baseline}, {"task.name": run})) == [
        "inputs that differ:", f"  config task.name: {said}"]


def test_files_and_sample_ids_in_two_unicode_forms_are_told_apart_by_compare():
    """Before: `file café.jsonl` only in each run, and `1 only in the baseline (t:a=café); 1 only in the compared run
    (t:a=café)`."""
    files = diff({"caf\u00e9.jsonl": "a" * 64}, {"cafe\u0301.jsonl": "a" * 64})
    prompts = PromptDiff(changed=(), only_baseline=("t:a=caf\u00e9",), only_run=("t:a=cafe\u0301",))
    assert compare_lines(files=files, prompts=prompts) == [
        "inputs that differ:", '  file cafe\\u0301.jsonl: only in the compared run ("aaaaaaaaaaaa")',
        '  file caf\u00e9.jsonl: only in the baseline ("aaaaaaaaaaaa")',
        "  prompts: 0 samples asked differently; 1 only in the baseline (t:a=caf\u00e9); 1 only in the compared run "
        "(t:a=cafe\\u0301)"]


NO_JSON = ("a value tagged {}, which makes no JSON value (OmegaConf makes a Python path of "
           "!!python/object/apply:pathlib.Path), and a preset's value cannot be: write it as text, a number, a list or "
           "a mapping")
A_DATE = "2024-01-01 is read by YAML as a date, not as written; quote it ('2024-01-01') to keep it as text"


@pytest.mark.parametrize(("preset", "said"), [
    ("task:\n  system: !!timestamp 2024-01-01\n", "line 3, column 11: " + A_DATE),
    ("runner:\n  stop: [!!timestamp 2024-01-01 10:00:00]\n", "line 3, column 10: 2024-01-01 10:00:00 is read by "
     "YAML as a date, not as written; quote it ('2024-01-01 10:00:00') to keep it as text"),
    ("task:\n  !!timestamp 2024-01-01: x\n", "line 3, column 3: the key 2024-01-01 is read by YAML as a date, not as "
     "a name; quote it ('2024-01-01')"),
    ("runner:\n  model: !!python/object/apply:pathlib.Path [m]\n",
     "line 3, column 10: " + NO_JSON.format("!!python/object/apply:pathlib.Path")),
    ("task:\n  system: !mine x\n", "line 3, column 11: " + NO_JSON.format("!mine")),
    ("repeats: !!int '0x2'\n", "line 2, column 10: 0x2 is read by YAML as the int 2, not as written; quote it ('0x2') "
     "to keep it as text, or write 2"),
    ("dry_run: !!bool 'on'\n", "line 2, column 10: on is read by YAML as the bool true, not as written; quote it "
     "('on') to keep it as text, or write true"),
    ("task:\n  max_samples: !!int '1:30'\n", "line 3, column 16: 1:30 is read by YAML as the int 90, not as "
     "written; quote it ('1:30') to keep it as text, or write 90")])
def test_a_preset_value_tagged_as_no_json_value_or_read_otherwise_is_refused_naming_its_place(tmp_path, preset, said):
    """Before: `(Value 'date' is not a supported primitive type)`, `ConfigCompositionException`, `runner.model: "m"
    is not valid here`; `!!int '0x2'` asked twice, `!!bool 'on'` a dry run, `!!int '1:30'` 90 samples at most."""
    files = {"tasks.yml": TASK, "presets/model/mine.yaml": "# @package _global_\n" + preset}
    done = dry_run(tmp_path, files, "--config-dir", "bench/presets", "model=mine")
    assert ended(done) == refusal(f"in '{tmp_path / 'bench/presets/model/mine.yaml'}': {said}")


@pytest.mark.parametrize("value", ["2024-01-01 10:00:00", "!!str 010"])
def test_a_preset_value_read_as_written_is_taken(tmp_path, value):
    files = {"tasks.yml": TASK, "presets/model/mine.yaml": f"# @package _global_\ntask:\n  system: {value}\n"}
    done = dry_run(tmp_path, files, "--config-dir", "bench/presets", "model=mine")
    assert (done.returncode, done.stderr) == (0, "")


ALIKE = ("in 'config': {}: the sweep lists {} and {}, one text {}, which print alike, so two of its jobs would have "
         "labels read as one; list one of them")


@pytest.mark.parametrize(("swept", "said"), [
    ("task.name='caf\u00e9','cafe\u0301'",
     ALIKE.format("task.name", "'caf\\xe9'", "'cafe\\u0301'", "in two Unicode forms")),
    ("task.system=x,'x '", ALIKE.format("task.system", "'x'", "'x '", "but for the white space ' ' it ends with")),
    ("repeats=2,'2'", "in 'config': repeats: the sweep lists '2' and '\"2\"', which the config reads as one value (2), "
                      "so two of its jobs would run one config; list each value once")])
def test_a_sweep_of_two_values_read_or_printed_as_one_is_refused(tmp_path, swept, said):
    """Before: both jobs launched, labelled alike (`café`, `x`), or run of one config (`2` and `'2'`)."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "-m", swept)) == refusal(said)


@pytest.mark.parametrize(("swept", "said"), [
    ("runner.options.seed=1,x", 'runner.options.seed: Input should be a valid integer, not "x"'),
    ("runner.options.seed=x,y", 'runner.options.seed: Input should be a valid integer, not "x"'),
    ("repeats=1,x", 'repeats: Input should be a valid integer, not "x"'),
    ("+runner.options.num_ctx=1,x", 'runner.options.num_ctx: Input should be a valid integer, not "x"'),
    ("runner.options.temperature=0,'0.5'", 'runner.options.temperature: Input should be a valid number, not "0.5"')])
def test_a_sweep_listing_a_value_its_job_refuses_is_refused_before_any_job(tmp_path, swept, said):
    """Before: `Launching 2 jobs locally`, job 0 done, then job 1's line, exit 1."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "-m", swept)) == refusal(f"in 'config': {said}")
