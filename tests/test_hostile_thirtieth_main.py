"""The thirtieth hostile pass, the lead's part.

- A list of servers (or models) holding an item that is no text (`runner.host=[URL,null]`, `judge.host=[URL,5]`,
  `runner.model=[llama3.2,null]`) was said of the whole key, `["http://...", null] is not valid here (...)`, naming
  neither the item nor what belongs there, and the key's description quoted began `The Ollama server (conf/ takes
  it from $OLLAMA_HOST ...)`, a path cut short. The item at fault is named (`compose.config._list_item`), and the
  descriptions name the preset (conf/runner/ollama.yaml, conf/runner/openai.yaml).
- `runner.keep_alive=5x` (or `'300'`, `''`, a judge's `+judge.keep_alive=5y`) passed the dry run, and real Ollama,
  which reads a text keep_alive with Go's time.ParseDuration, refuses every request of such a run (HTTP 400: time:
  unknown unit "x" in duration "5x"). It is refused at compile, as what Ollama reads (`core.goduration.GO_DURATION`).
- A folder holding a symbolic link that cannot be followed (into another user's private folder: permission denied;
  a target name too long) was refused as a run's directory (`hydra.run.dir=d`: `file name too long: d/away`), and
  `verify d`, `merge d` said the same of it, the link taken for the folder at fault. Whether a folder's entry is a
  directory, or holds a run's files, is asked as os.path.isdir and lexists ask, an entry that cannot be followed
  being none (`archive.claims.holds_run`, `holds_sweep`, `archive.lookup._folders`). A run directory said as not
  made said it was `made of outputs=` when hydra.run.dir was given: `made of outputs= unless given`. In a benchmark,
  where such a link is refused, it was said by the OS alone (`file name too long: /.../tasks/away`), where a link
  that leads nowhere is said of the file (`compiler.files.present`). `task.path=` such a link named no key (`file
  name too long: /.../away`): `task.path: '...' cannot be reached: file name too long (looked in ...)`
  (`core.resources.bench_dir`).
- A preset group given null (`runner=null`, `task=null`, `model=null`) was Hydra's `ValueError: Config group override
  must be a string or a list. Got NoneType`, and given a list (`runner=[ollama,local]`) the presets were merged into a
  config no runner has (`runner.host: unknown key 'host'`): one line naming the group, its shipped presets and the
  sweep that runs each (`compose.commandline._refuse_no_one_preset`); null as one of a sweep's values
  (`-m runner=null,ollama`) too, found in the review.
- `judge=null` (or `judge=5`) was said as `Input should be a valid dictionary or instance of JudgeSettings`, a class
  no user knows, and `judge=[a]` (or `runner.options=[1]`) as `Error merging override judge=[a]`, nothing more: the
  keys that belong there (`compose.config.describe_validation`), and what the key holds (`cli._why`).
- A server's host name holding a character no host name holds (`OLLAMA_HOST='a b'`, `runner.host=http://a$b:1`)
  passed the dry run, to be said at the preflight as a name that does not resolve: it is no server's URL
  (`core.serverurls.NO_HOST_CHARACTER`).
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import folder_task, write_bench
from tests.helpers.commands import call_benchrun

LIST_ITEMS = [
    (["runner.host=[http://127.0.0.1:9,null]"], "runner.host[1]: Input should be a valid string, not null"),
    (["runner.model=[llama3.2,null]"], "runner.model[1]: Input should be a valid string, not null"),
    (["runner.model=[a,[b]]"], "runner.model[1]: Input should be a valid string, not [\"b\"]"),
    (["runner=openai", "runner.model=m", "runner.base_url=[http://127.0.0.1:9/v1,7]"],
     "runner.base_url[1]: Input should be a valid string, not 7"),
    (["judge.model=m", "judge.host=[5,http://127.0.0.1:9]"], "judge.host[0]: Input should be a valid string, not 5"),
]


@pytest.mark.parametrize(("args", "message"), LIST_ITEMS, ids=[" ".join(row[0]) for row in LIST_ITEMS])
def test_a_list_of_servers_or_models_names_the_item_that_is_no_text(tmp_path, args, message):
    result = call_benchrun("dry_run=true", *args, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: in 'config': {message}\n")


def test_a_value_no_branch_takes_quotes_the_keys_description_with_its_preset(tmp_path):
    result = call_benchrun("dry_run=true", "runner.host={a:1}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'config': runner.host: {\"a\": 1} is not valid here (The Ollama server "
        "(conf/runner/ollama.yaml takes it from $OLLAMA_HOST when set); empty means the default, as for Ollama. A "
        "list of servers spreads the run over them: each must serve the model by the same digest, `concurrency` "
        "requests go to each, every request to the one with the fewest outstanding, and a server lost mid-run leaves "
        "its work to the rest.)\n"))


DURATIONS = [("runner.keep_alive=5x", "runner.keep_alive", "5x"),
             ("runner.keep_alive='300'", "runner.keep_alive", "300"),
             ("runner.keep_alive=''", "runner.keep_alive", ""), ("+judge.keep_alive=5y", "judge.keep_alive", "5y")]


@pytest.mark.parametrize(("override", "key", "given"), DURATIONS, ids=[row[0] for row in DURATIONS])
def test_a_keep_alive_ollama_cannot_read_is_refused_at_compile(tmp_path, override, key, given):
    result = call_benchrun("dry_run=true", "judge.model=qwen2.5", override, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}: \"{given}\" is not a duration Ollama reads: a number of seconds, or "
        "text such as 30s, 5m or 1h30m (a negative one keeps the model loaded for ever)\n"))


@pytest.mark.parametrize("given", ["-5m", "1h30m", "0", ".5h", "'5\u00b5s'", "300", "-1"])
def test_every_duration_ollama_reads_is_taken(tmp_path, given):
    result = call_benchrun("dry_run=true", f"runner.keep_alive={given}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")


def _unfollowable_link(folder):
    """`folder` holding a symbolic link whose target no stat can reach (a name past 255 bytes), as one into another
    user's private folder is for any but root."""
    folder.mkdir()
    (folder / "away").symlink_to("/" + "x" * 300)
    return folder


def test_a_folder_holding_a_link_that_cannot_be_followed_takes_a_run(tmp_path):
    folder = _unfollowable_link(tmp_path / "d")
    result = call_benchrun("dry_run=true", f"hydra.run.dir={folder}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert "18 samples -> 18 model calls (dry run: no model was called)" in result.stdout


def test_verify_and_merge_of_a_folder_holding_such_a_link_say_it_holds_no_run(tmp_path):
    _unfollowable_link(tmp_path / "d")
    said = [audit(tmp_path, *args) for args in (["verify", "d"], ["merge", "d", "--into", "m"])]
    assert [(done.returncode, done.stderr) for done in said] == [
        (EXIT["archive"], "benchrun: error: in 'd': not a run directory (no run.json)\n"),
        (EXIT["archive"], "benchrun: error: in 'd': neither a run nor a sweep directory (no run.json in it or the "
                          "folders directly in it)\n")]


def test_a_benchmarks_link_that_cannot_be_followed_is_said_of_the_file(tmp_path):
    bench = write_bench(tmp_path, folder_task("t", "say {a}\n", "a,reference\n1,1\n"))
    (bench / "tasks" / "away").symlink_to("/" + "x" * 300)
    result = call_benchrun("dry_run=true", f"task.path={bench}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'tasks/away': a symbolic link that cannot be followed (to '/{'x' * 300}': file name too "
        "long); mend the link, or remove it\n"))


def test_a_task_path_that_cannot_be_reached_names_the_key(tmp_path):
    away = _unfollowable_link(tmp_path / "d") / "away"
    result = call_benchrun("dry_run=true", f"task.path={away}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: task.path: '{away}' cannot be reached: file name too long (looked in {away})\n"))


PRESETS = "one preset's name belongs here (shipped: "
NO_ONE_PRESET = [
    ("runner=null", f"runner: {PRESETS}local, ollama, openai), not null"),
    ("task=null", f"task: {PRESETS}folderbench, listbench), not null"),
    ("model=null", f"model: {PRESETS}gemma3, llama3.2), not null; none is the default: leave model= out"),
    ("-m runner=null,ollama", f"runner: {PRESETS}local, ollama, openai), not null"),
    ("runner=[ollama,local]", f"runner: {PRESETS}local, ollama, openai), not a list; to run each, sweep them: -m "
                              "runner=ollama,local"),
]


@pytest.mark.parametrize(("override", "message"), NO_ONE_PRESET, ids=[row[0] for row in NO_ONE_PRESET])
def test_a_preset_group_given_null_or_a_list_is_one_line(tmp_path, override, message):
    result = call_benchrun("dry_run=true", *override.split(" "), cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: in 'config': {message}\n")


KINDS = [("judge=null", "in 'config': judge: keys belong here (runner, model, host, base_url, options, repeats, "
                        "allow_self), not null"),
         ("judge=5", "in 'config': judge: keys belong here (runner, model, host, base_url, options, repeats, "
                     "allow_self), not 5"),
         ("judge=[a]", "Error merging override judge=[a] (it holds keys, not a list)"),
         ("runner.options=[1]", "Error merging override runner.options=[1] (it holds keys, not a list)")]


@pytest.mark.parametrize(("override", "message"), KINDS, ids=[row[0] for row in KINDS])
def test_a_value_of_another_kind_than_keys_says_what_belongs(tmp_path, override, message):
    result = call_benchrun("dry_run=true", override, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {message}\n")


@pytest.mark.parametrize(("given", "url", "host", "character"), [
    ("OLLAMA_HOST=a b", "a b:11434", "a b", " "), ("runner.host='http://a$b:1'", "http://a$b:1", "a$b", "$")])
def test_a_host_name_holding_a_character_no_host_name_holds_is_refused_at_compile(tmp_path, given, url, host,
                                                                                  character):
    env = dict([given.split("=", 1)]) if given.startswith("OLLAMA_HOST") else None
    args = [given] if env is None else []
    result = call_benchrun("dry_run=true", *args, cwd=tmp_path, env=env)
    key = "runner.host" if env is None else "runner.host (from $OLLAMA_HOST)"
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': {key}: '{url}' is not a server's URL: its host '{host}' is not a host "
        f"name that can be asked: it holds '{character}', which no host name does (letters, digits, '-', '_' and "
        "'.')\n"))


@pytest.mark.parametrize("host", ["http://gpu_1:11434", "http://gpu-1.lan:11434", "http://b\u00fccher.de:1"])
def test_host_names_of_letters_digits_hyphens_underscores_and_dots_are_taken(tmp_path, host):
    result = call_benchrun("dry_run=true", f"runner.host='{host}'", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
