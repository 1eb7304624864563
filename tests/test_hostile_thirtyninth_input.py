"""The thirty-ninth hostile pass of issue 19, the side of what goes in: the item the thirty-eighth pass left, then a
fresh pass. /work/notes/p39/result-input.md has the whole list, what held and what was left.

Fixed:
1. `--info` (any of its kinds) with an override no config holds (compose.infocompose: the config is composed through
   Hydra's Compose API before Hydra's `--info` prints): Hydra printed its `Config search path` header (`--info all`:
   its plugins, search path and defaults tree) before benchrun's line, and `--info defaults`, `defaults-tree` and
   `plugins` printed on, exit 0.
2. An interpolation a preset writes in a key the run's folder is named after (`runner.model: ${nope.x}`, or a cycle
   through judge.model) that cannot be resolved, said naming that key (compose.unresolved): it was `hydra.run.dir:
   cannot resolve: ...`, naming neither.
3. Two samples of a task whose ids differ only in white space at their end (an id column's `q1` and `q1 `, values
   `x` and `x\u00a0`), refused as one id (compiler.sampleids, split from compiler.grid): both were asked, `show`
   printing `t:q1` twice.
4. A benchmark's YAML file declaring a YAML version other than 1.1 (`%YAML 1.2`, `%YAML 1.3`), refused
   (core.yamlfile): read as YAML 1.1 all the same, its `0o17` (YAML 1.2's int 15) was asked as the text `0o17`.
5. Two samples of a task asking one question (one prompt: a template that shows none of the values that tell them
   apart, `say hi`), refused naming both (compiler.grid._asked_once): the model was sent one chat twice, references
   `5` and `6` both scored against it. Prompts that differ only in white space (values `1` and `1 `) are two chats,
   and asked (found in review: the rule first read prompts as a reader would, and refused a benchmark of `\tcmd` and
   `\rcmd`).
6. A benchmark's name (task.name) that reads as another, Latin letters mixed with a look-alike script's (`tеst`) or a
   compatibility form (`ｔest`), refused for a new run as a model's name is (compose.fresh, by
   core.modelnames.reads_as_another): taken, a run's heading printing `tеst · ollama`, `list` and `compare` alike.
7. A data file (values_file, fewshot.file) named in one Unicode form and there in the other (`café.jsonl` given, a
   macOS copy's `cafe\u0301.jsonl` there): said to be there, in which form (compiler.data.data_path, by
   core.unicodeforms.other_form, as task.path's folder is): it was only `file 'café.jsonl' is missing`. So are a
   runner file (compose.runneryml) and a `--config-dir` folder (cli.hydra_error): `Additional config directory
   '.../prés' not found`.
8. A value `${oc.env:NAME,DEFAULT}` refused while NAME is unset is said to come from that default, given as text
   (compose.fromenv): `runner.options.seed (from $SEEDV): Input should be a valid integer, not "1"` named a variable
   that gave nothing.
9. A preset of the user's own whose `# @package` header a YAML directive (`%YAML 1.2`, `---`) comes before, refused
   as one a byte-order mark hides (compose.userpresets): Hydra read no header, `model: unknown key 'model'`.
"""

from __future__ import annotations

import pytest

from tests.helpers.benchfiles import write_bench
from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p39_input import info

UNKNOWN_MODLE = "in 'config': runner.modle: unknown key 'modle' (did you mean 'model'?)"


@pytest.mark.parametrize("asked", [("--info", "config"), ("--info", "all"), ("-i", "searchpath"),
                                   ("--info", "defaults"), ("--info=plugins",), ("--info",)])
def test_info_with_an_override_no_config_holds_prints_nothing_before_its_line(tmp_path, asked):
    """Before: `Config search path` and its stars on stdout, then the line; `defaults` and `plugins` printed, exit 0."""
    assert ended(info(tmp_path, *asked, "runner.modle=x")) == refusal(UNKNOWN_MODLE)


def test_info_composes_with_the_users_presets(tmp_path):
    write_bench(tmp_path, {"presets/model/mine.yaml": "# @package _global_\nrunner:\n  model: mm\n"})
    done = info(tmp_path, "--info", "config", "--config-dir", "bench/presets", "model=mine",
                "hydra.searchpath=[pkg://benchrun]")
    assert (done.returncode, done.stderr, done.stdout.count("\n  model: mm\n")) == (0, "", 1)
    assert ended(info(tmp_path, "--info", "config", "-cd", "bench/presets", "model=mine", "runner.modle=x")) == (
        refusal(UNKNOWN_MODLE))


@pytest.mark.parametrize(("preset", "said"), [
    ("runner:\n  model: ${nope.x}\n", "Interpolation key 'nope.x' not found"),
    ("runner:\n  model: ${judge.model}\njudge:\n  model: ${runner.model}\n", "Recursive interpolation detected")])
def test_an_interpolation_a_preset_writes_that_cannot_be_resolved_names_its_key(tmp_path, preset, said):
    """Before: `in 'config': hydra.run.dir: cannot resolve: ...`, the key the preset wrote not named."""
    write_bench(tmp_path, {"presets/model/mine.yaml": "# @package _global_\n" + preset})
    done = info(tmp_path, "--config-dir", "bench/presets", "model=mine", "dry_run=true")
    assert ended(done) == refusal(f"in 'config': runner.model: cannot resolve: {said} (resolving hydra.run.dir)")


WHITE_END = "one id but for the white space {} it ends with, which prints as nothing"


@pytest.mark.parametrize(("values", "key", "said"), [
    ('{a: [1, 2], id: ["q1", "q1 "]}', "values.id",
     "duplicate sample id 't:q1 ' (samples 1 and 2: 't:q1' and 't:q1 ', " + WHITE_END.format("' '") + "); make the "
     "ids unique"),
    ('{a: ["x\\u00a0", "x"]}', "values",
     "duplicate sample id 't:a=x' (samples 1 and 2: 't:a=x ' and 't:a=x', " + WHITE_END.format("'\\xa0'") +
     "); make the values unique or add an 'id' column")])
def test_sample_ids_that_differ_only_in_white_space_at_their_end_are_one(tmp_path, values, key, said):
    """Before: both samples asked; `show --samples` headed both `t:q1`."""
    files = {"tasks.yml": f"- name: t\n  template: say {{a}}\n  values: {values}\n  reference: ['1', '2']\n"}
    assert ended(dry_run(tmp_path, files)) == refusal(f"in 'tasks.yml': task 't': tasks[0].{key}: {said}")


@pytest.mark.parametrize("version", ["1.2", "1.3"])
def test_a_yaml_version_other_than_the_one_read_is_refused(tmp_path, version):
    """Before: taken, `0o17` asked as written, which YAML 1.2 reads as the int 15."""
    files = {"tasks.yml": f"%YAML {version}\n---\n- name: t\n  template: say {{a}}\n  values: {{a: [0o17]}}\n"
                          "  reference: ['1']\n"}
    assert ended(dry_run(tmp_path, files)) == refusal(
        f"in 'tasks.yml': line 1, column 1: %YAML {version} asks for YAML {version}, and benchrun reads YAML 1.1, "
        "whose values read otherwise (YAML 1.2 reads 0o17 as the int 15, yes as text); remove the directive, or write "
        "%YAML 1.1")


def test_a_yaml_1_1_directive_is_taken(tmp_path):
    done = dry_run(tmp_path, {"tasks.yml": "%YAML 1.1\n---\n" + TASK})
    assert (done.returncode, done.stderr) == (0, "")


ONE_QUESTION = ("samples 't:{}' and 't:{}' ask one question (\"{}\"), and the model would be sent one chat twice; make "
                "each sample's prompt its own (a template field of the value that tells them apart), or ask again with "
                "repeats=N")


@pytest.mark.parametrize(("template", "values", "said"), [
    ("say hi", "{a: [1, 2]}", ONE_QUESTION.format("a=1", "a=2", "say hi")),
    ("say {a}", "{a: [1, 1], b: [5, 6]}", ONE_QUESTION.format("a=1,b=5", "a=1,b=6", "say 1")),
    ("say {a}", '{a: [1, "1 "], id: [x, y]}', None)])
def test_two_samples_asking_one_question_are_refused(tmp_path, template, values, said):
    """Before: both asked, one chat sent twice, its one answer scored against references 5 and 6."""
    files = {"tasks.yml": f"- name: t\n  template: {template}\n  values: {values}\n  reference: ['5', '6']\n"}
    done = dry_run(tmp_path, files)
    assert (done.returncode, done.stderr) == (0, "") if said is None else ended(done) == refusal(
        f"in 'tasks.yml': task 't': tasks[0].values: {said}")


@pytest.mark.parametrize(("name", "said"), [
    ("t\u0435st", "'t\u0435st' (t\\u0435st) mixes Latin letters with Cyrillic ones drawn alike, so it prints as "
                  "another name: write it in one script"),
    ("\uff54est", "'\uff54est' (\\uff54est) holds a character in a compatibility form (fullwidth, a ligature), which "
                  "prints as another name: write it as 'test'")])
def test_a_benchmark_name_that_reads_as_another_is_refused(tmp_path, name, said):
    """Before: taken, the run's heading `t\u0435st · ollama · llama3.2`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, f"task.name='{name}'")) == refusal(
        f"in 'config': task.name: {said}")


@pytest.mark.parametrize(("key", "line"), [("values_file", "values_file: caf\u00e9.jsonl"),
                                           ("fewshot.file", "fewshot: {file: caf\u00e9.jsonl, n: 1, seed: 0}")])
def test_a_data_file_there_in_another_unicode_form_is_said_to_be(tmp_path, key, line):
    """Before: `file 'café.jsonl' is missing (paths are relative to the benchmark directory)`, and `ls` showed it."""
    write_bench(tmp_path, {"cafe\u0301.jsonl": '{"a": 1, "reference": "1"}\n'})
    files = {"tasks.yml": f"- name: t\n  template: say {{a}}\n  {line}\n" + (
        "  values: {a: [2]}\n  reference: ['2']\n" if key == "fewshot.file" else "")}
    there = tmp_path / "bench" / "cafe\u0301.jsonl"
    assert ended(dry_run(tmp_path, files)) == refusal(
        f"in 'tasks.yml': task 't': tasks[0].{key}: file 'caf\u00e9.jsonl' is missing (paths are relative to the "
        f"benchmark directory); {there} is there, its name in another Unicode form (NFD, as a copy from macOS names "
        "files), which prints alike but is another name here: rename it in the form given (NFC)")


THERE = ("is there, its name in another Unicode form (NFD, as a copy from macOS names files), which prints alike but "
         "is another name here: rename it in the form given (NFC)")


def test_a_runner_file_there_in_another_unicode_form_is_said_to_be(tmp_path):
    """Before: `runner file 'r\u00e9.yml' not found (looked in ...)`."""
    given, there = "r\u00e9.yml", tmp_path / "re\u0301.yml"
    there.write_text("runner_type: ollama\nmodel: m\n")
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, f"runner_file='{given}'")) == refusal(
        f"runner_file: runner file '{given}' not found (looked in {tmp_path / given}, {tmp_path / 'bench' / given}); "
        f"{there} {THERE}")


def test_a_config_dir_there_in_another_unicode_form_is_said_to_be(tmp_path):
    """Before: `Additional config directory '.../pr\u00e9s' not found`."""
    given, there = "pr\u00e9s", tmp_path / "pre\u0301s"
    there.mkdir()
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "--config-dir", given)) == refusal(
        f"--config-dir: '{tmp_path / given}' is not there; {there} {THERE}")


def test_a_refused_value_an_unset_variables_default_gave_is_said_so(tmp_path, monkeypatch):
    """Before: `runner.options.seed (from $SEEDV): Input should be a valid integer, not "1"`, $SEEDV unset."""
    monkeypatch.delenv("SEEDV", raising=False)
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "runner.options.seed=${oc.env:SEEDV,1}")) == refusal(
        "in 'config': runner.options.seed (from the default of ${oc.env:SEEDV,1}, $SEEDV unset: oc.env gives its "
        'default as text): Input should be a valid integer, not "1"')


def test_a_preset_whose_header_a_yaml_directive_comes_before_is_refused(tmp_path):
    """Before: `in 'config': model: unknown key 'model' (allowed: task, runner, ...)`."""
    write_bench(tmp_path, {"presets/model/mine.yaml": "%YAML 1.1\n---\n# @package _global_\nrunner:\n  model: m\n"})
    done = dry_run(tmp_path, {"tasks.yml": TASK}, "--config-dir", "bench/presets", "model=mine")
    assert ended(done) == refusal(
        f"in '{tmp_path / 'bench/presets/model/mine.yaml'}': a YAML directive (%YAML, %TAG) before its `# @package` "
        "header, which Hydra then does not read as one (the preset's keys would go under its group's name): leave the "
        "directive out")
