"""The thirty-fifth hostile pass of issue 19, the side of what goes in: the items the thirty-fourth pass left, then a
fresh pass. /work/notes/p35/result-input.md has the whole list, what held and what was left.

Fixed:
1. A number past its bound in the config or a task file said in benchrun's words by one rule (core.errors.BOUNDS,
   bound_said: pydantic's problems and jsonschema's keywords alike), with the value given: `repeats: 1000000000 is
   out of bounds: give at most 1000`, not pydantic's `Input should be less than or equal to 1000` nor jsonschema's
   `0 is less than the minimum of 1`; a list, a mapping or a text of too few or too many items said by one rule too
   (core.errors.sized_said, of pydantic's SIZED and jsonschema's JSONSCHEMA_SIZED): `an empty text, where one of at
   least 1 character is taken`, not `String should have at least 1 character` nor `[] should be non-empty`.
2. A judge's grade field of one Literal value (`grade: Literal["ok"]`, JSON Schema's `const`) read as an Enum of one
   value is (compiler.judges._grade_kind), so refused as one whose grades all score alike: it was taken as a free
   string grade, the judge's metric 1 whatever its model answered.
3. An override adding with a `+` a key the config holds already (`+repeats=2`) said in benchrun's words, with the
   override to give (compose.commandline.HELD_ALREADY), not Hydra's `Could not append to config. An item is already
   at 'repeats'. Either remove + prefix ... Or add a second + ...`.
4. `--cfg hydra --resolve` refused with what to give (compose.commandline._refuse_hydra_alone_resolved): Hydra resolves
   its settings apart from the job's config they are made of, and stopped on `in 'config': cannot resolve:
   Interpolation key 'dry_run' not found`, naming no key, though nothing given was wrong.
5. A file that is not UTF-8 (a values file saved as Latin-1) said where, by line and column, and by the byte
   (core.filebytes.not_utf8_said), in a benchmark's files, the archive's and a preset alike: `not UTF-8 text (invalid
   continuation byte)` named no place in a file of 100,000 rows, and a preset's `at byte 4` was another rule.
6. `outputs` of a leading `~` given quoted (`outputs='~/runs'`) or by a preset made the home directory, as task.path's,
   cache_dir's and runner_file's are (compose.rundirs.outputs_path, a resolver of hydra.run.dir and hydra.sweep.dir;
   compose.rundirs holds the dry run's scratch directories, out of compose/config.py): Hydra made a folder named `~` in
   the working directory and archived the run there; `~nosuchuser/x` is refused as task.path's is. A run's or a
   sweep's directory given so (`hydra.run.dir='~/rd'`, a dry run's too) refused (compose.hydranames.tilde_refusal,
   called by callbacks): Hydra's own key, taken as it is, made the folder `~` too.
7. A stop string listed twice (`+runner.options.stop=[a,a]`) refused (core.stops.checked_stops, out of
   core/settings.py): any one stop string ends the answer, so `[a,a]` asked as `[a]` under another manifest id; and a
   stop list given one text (`stop=abc`) said in benchrun's words (core.errors.TAKEN's `sequence_str`), not pydantic's
   `'str' instances are not allowed as a Sequence value`.
8. An override's mapping giving one key twice (`runner.options={temperature: 0, temperature: 1}`, at any depth, in a
   sweep's values too) refused (compose.commandline._refuse_keys_twice), as a YAML or JSONL mapping's is: Hydra's
   grammar kept the last value without a word.
9. A preset of the user's own whose UTF-8 byte-order mark stands before its `# @package _global_` header (Windows
   Notepad's UTF-8) refused naming the file (compose.userpresets._hidden_header): Hydra read no header, put its keys
   under the group's name and said `in 'config': model: unknown key 'model'`.
10. A server's URL of port 0 (`OLLAMA_HOST=h:0`, `runner.host=http://h:0`) refused as one past 65535 is
    (core.serverurls._well_formed): Ollama's client reads port 0 as none given and asks its default port (h:11434,
    http://h:80), while the run recorded h:0.
11. A scorer's dict whose metric names print alike (`x` and `x `, `a` and Cyrillic `а`, `é` composed and not, `ａ`
    and `a`) is that sample's scorer error (compiler.scoring._alike, by compiler.alike's rule of value names): two
    rows of the summary's table that read as one metric.
12. A list of Hydra's (a ListConfig) given for a key that takes text (`outputs=[a]`) said as the list it is, not as
    `a value, where text is taken` (core.errors._kind_given reads any Sequence as a list).
13. A benchmark given as `task.path=.` or through `..` (`b/sub/..`) named by the folder it is
    (compose.config.bench_name, of its absolute path): `.` named every benchmark `bench` and `b/sub/..` named it `..`,
    in the run directory's name, the manifest and benchrun-audit list.
"""

from __future__ import annotations

import re

import pytest

from benchrun.compiler.scoring import metrics
from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p34_input import JUDGED_TASK
from tests.helpers.p35_input import ONE_GRADE, SAMPLED_TASK, VALUES_FILE_TASK


@pytest.mark.parametrize(("arg", "said"), [
    ("repeats=1000000000", "repeats: 1000000000 is out of bounds: give at most 1000"),
    ("repeats=0", "repeats: 0 is out of bounds: give at least 1"),
    ("runner.timeout_s=-1.5", "runner.timeout_s: -1.5 is out of bounds: give more than 0"),
    ("task.name=''", "task.name: an empty text, where one of at least 1 character is taken")])
def test_a_configs_value_past_its_bound_is_said_in_benchruns_words(tmp_path, arg, said):
    """Before: `Input should be less than or equal to 1000`, `String should have at least 1 character`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, arg)) == refusal(f"in 'config': {said}")


def test_a_task_files_value_past_its_bound_is_said_as_a_configs_is(tmp_path):
    """Before: `tasks[0].sample.n: 0 is less than the minimum of 1` (jsonschema's words)."""
    assert ended(dry_run(tmp_path, {"tasks.yml": SAMPLED_TASK.format(sample="{n: 0, seed: 1}")})) == refusal(
        "in 'tasks.yml': task 't': tasks[0].sample.n: 0 is out of bounds: give at least 1")


def test_a_task_files_list_of_too_few_items_is_said_as_a_configs_is(tmp_path):
    """Before: `tasks[0].values.a: [] should be non-empty` (jsonschema's words)."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK.replace("[1]", "[]")})) == refusal(
        "in 'tasks.yml': task 't': tasks[0].values.a: an empty list, where one of at least 1 item is taken")


def test_a_judges_grade_of_one_literal_value_is_refused_as_one_enum_values_is(tmp_path):
    """Before: taken (a Literal's schema is its `const`, read as a free string grade), the metric 1 whatever was
    answered; an Enum of one value was refused."""
    files = {"tasks.yml": JUDGED_TASK, "custom_response.py": ONE_GRADE,
             "judges.yml": "- name: j\n  rubric: 'grade {response}'\n  format: Graded\n  score: grade\n"
                           "  scores: {ok: 1}\n"}
    assert ended(dry_run(tmp_path, files, "judge.model=j")) == refusal(
        "in 'judges.yml': judges[0].scores: every grade of field 'grade' (ok) is scored 1, so the judge's metric "
        "would be that whatever its model answers: give its grades different numbers")


@pytest.mark.parametrize(("arg", "key", "instead"), [
    ("+repeats=2", "repeats", "repeats=2"),
    ("+runner.options.seed=7", "runner.options.seed", "runner.options.seed=7")])
def test_a_key_the_config_holds_added_with_a_plus_is_said_in_benchruns_words(tmp_path, arg, key, instead):
    """Before: Hydra's three sentences, `Could not append to config. An item is already at 'repeats'. ...`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, arg)) == refusal(
        f"in 'config': {key}: the config holds a value of it already, and a '+' adds only a key it holds none of: "
        f"override it without the '+': {instead}")


@pytest.mark.parametrize("flags", [
    ("--cfg", "hydra", "--resolve"), ("--resolve", "-c", "hydra"), ("--cfg=hydra", "--resolve"),
    ("--cf", "hydra", "--res")])
def test_hydras_settings_printed_resolved_alone_are_refused_with_what_to_give(tmp_path, flags):
    """Before: `in 'config': cannot resolve: Interpolation key 'dry_run' not found`, exit 2."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, *flags)) == refusal(
        "--cfg hydra --resolve: Hydra's settings here are made of the job's config (hydra.run.dir of dry_run, "
        "task.name and runner.model), which Hydra leaves out of what it resolves them in: give --cfg all --resolve, "
        "or --cfg hydra without --resolve")


def test_a_values_file_that_is_not_utf8_is_said_where(tmp_path):
    """Before: `in 'v.csv': task 't': not UTF-8 text (invalid continuation byte)`, of no line."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "v.csv").write_bytes("a,reference\ncafé,1\n".encode("latin-1"))
    assert ended(dry_run(tmp_path, {"tasks.yml": VALUES_FILE_TASK})) == refusal(
        "in 'v.csv': task 't': line 2, column 4: not UTF-8 text (invalid continuation byte, 0xe9); save it as UTF-8")


def test_outputs_given_quoted_with_a_tilde_is_in_the_home_directory(tmp_path, monkeypatch):
    """Before: `dir: ~/runs/...`, the run archived in ./~/runs/..., a folder named `~` made in the working
    directory."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    done = call_benchrun("outputs='~/runs'", "--cfg", "all", "--resolve", "-p", "hydra.run", cwd=tmp_path)
    made = re.escape(str(tmp_path / "home" / "runs"))
    when = r"\d{4}-\d\d-\d\d/\d\d-\d\d-\d\d\.\d{6}"
    assert done.returncode == EXIT["ok"] and re.fullmatch(
        rf"# @package hydra.run\ndir: {made}/{when}_listbench_llama3\.2\n", done.stdout)


def test_outputs_of_a_tilde_naming_no_user_is_refused_as_task_paths_is(tmp_path):
    """Before: taken (a dry run); a run made a folder named `~nosuchuser` in the working directory."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "outputs='~nosuchuser/x'")) == refusal(
        "outputs: '~nosuchuser/x': ~nosuchuser is the home directory of user 'nosuchuser', and this system has no such "
        "user; give the path itself")


@pytest.mark.parametrize(("args", "key"), [
    (("hydra.run.dir='~/rd'",), "hydra.run.dir"),
    (("-m", "hydra.sweep.dir='~/rd'"), "hydra.sweep.dir")])
def test_a_run_directory_given_with_a_tilde_hydra_takes_as_it_is_is_refused(tmp_path, args, key):
    """Before: taken, Hydra's files of the dry run (and a run's records) in ./~/rd."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, *args)) == refusal(
        f"in 'config': {key}: '~/rd' starts with '~', which Hydra takes as a folder named so in the working directory: "
        "give the home directory's path, or outputs=~/... for runs beneath it")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bench"]


@pytest.mark.parametrize(("given", "said"), [
    ("[a,a]", "the stop string 'a' is listed twice; any one stop string ends the answer, so the list asks what it asks "
              "with it once, under another manifest id: list it once"),
    ("abc", "'abc' is text, where a list is taken")])
def test_a_stop_list_of_one_string_twice_or_of_one_text_is_refused(tmp_path, given, said):
    """Before: `[a,a]` taken under a manifest id of its own; `abc` said `'str' instances are not allowed as a Sequence
    value`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, f"+runner.options.stop={given}")) == refusal(
        f"in 'config': runner.options.stop: {said}")


@pytest.mark.parametrize("args", [
    ("runner.options={temperature: 0, temperature: 1}",),
    ("-m", "runner.options={seed: 1},{temperature: 0, temperature: 1}")])
def test_an_overrides_mapping_giving_a_key_twice_is_refused(tmp_path, args):
    """Before: taken, temperature 1 asked (Hydra keeps the last), without a word."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, *args)) == refusal(
        "in 'config': runner.options: the key 'temperature' is given twice in one mapping of the override (which one "
        "is meant, Hydra's grammar does not say: it keeps the last); give each key once")


def test_a_presets_header_behind_a_byte_order_mark_is_refused(tmp_path):
    """Before: `in 'config': model: unknown key 'model' (allowed: task, runner, ...)`."""
    preset = tmp_path / "my" / "model" / "mine.yaml"
    preset.parent.mkdir(parents=True)
    preset.write_bytes(b"\xef\xbb\xbf# @package _global_\nrunner:\n  model: m\n")
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "--config-dir", "my", "model=mine")) == refusal(
        f"in '{preset}': a byte-order mark before its `# @package` header, which Hydra then does not read as one (the "
        "preset's keys would go under its group's name): save it as UTF-8 without a byte-order mark")


@pytest.mark.parametrize("host", ["h:0", "http://h:0"])
def test_a_servers_url_of_port_0_is_refused(tmp_path, monkeypatch, host):
    """Before: taken; Ollama's client asks h:11434 (http://h:80) for it, the run recording h:0."""
    monkeypatch.setenv("OLLAMA_HOST", host)
    write_bench(tmp_path, {"tasks.yml": TASK})
    assert ended(call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)) == refusal(
        f"in 'config': runner.host (from $OLLAMA_HOST): '{host}' is not a server's URL: its port is not a number from "
        "1 to 65535")


@pytest.mark.parametrize(("result", "said"), [
    ({"x ": 1, "x": 2}, "'s.x ' and 's.x': they differ only in white space around them, invisible characters or how a "
                        "letter is composed"),
    ({"\u00e9": 1, "e\u0301": 2}, "'s.\u00e9' and 's.e\u0301': they differ only in white space around them, invisible "
                                   "characters or how a letter is composed"),
    ({"a": 1, "\u0430": 2}, "'s.a' and 's.\u0430': they differ only in letters of other scripts (Latin 'a', Cyrillic "
                            "'\u0430' at character 3)")])
def test_a_scorers_metrics_whose_names_print_alike_are_its_error(result, said):
    """Before: taken, two rows of the summary that read as one metric."""
    with pytest.raises(TypeError) as caught:
        metrics("s", result)
    assert str(caught.value) == f"scorer result s gives metrics whose names print alike: {said}; name them apart"


def test_a_list_given_where_text_is_taken_is_said_as_a_list(tmp_path):
    """Before: `outputs: a value, where text is taken` (Hydra's ListConfig is no `list`), checked as the run starts."""
    write_bench(tmp_path, {"tasks.yml": TASK})
    assert ended(call_benchrun("task.path=bench", "runner.host=http://127.0.0.1:9", "outputs=[a]", cwd=tmp_path)) == \
        refusal("in 'config': outputs: a list, where text is taken")


@pytest.mark.parametrize(("path", "where"), [(".", "mybench"), ("mybench/sub/..", "")])
def test_a_benchmark_given_as_dot_or_through_dot_dot_is_named_by_its_folder(tmp_path, path, where):
    """Before: `name: bench` for `.`, `name: ..` for `mybench/sub/..`."""
    write_bench(tmp_path, {"tasks.yml": TASK, "sub/.keep": ""}, name="mybench")
    done = call_benchrun(f"task.path={path}", "-p", "task.name", "--cfg", "job", "--resolve", cwd=tmp_path / where)
    assert ended(done) == (EXIT["ok"], "mybench\n", "")
