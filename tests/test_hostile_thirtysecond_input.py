"""The thirty-second hostile pass of issue 19, the side of what goes in: the items the thirty-first pass left, then a
fresh pass. /work/notes/p32/result-input.md has the whole list, what held and what was left.

Fixed:
1. One Ollama model named in two cases (`llama3.2`, `llama3.2:LATEST`), in a sweep or a list, refused naming both
   (core.officialclient.ollama_model): Ollama looks a name's parts up by strings.EqualFold.
2. A runner option that counts (num_ctx, num_predict, num_batch, num_thread, num_gpu, num_keep, top_k, repeat_last_n)
   below the least Ollama gives a meaning, or a probability (top_p, typical_p, min_p) outside 0 to 1, refused, saying
   what its special values mean (core.optionbounds).
3. A stop string holding a control character (ESC, DEL, NUL, from a preset's escapes or a quoted override) refused
   naming the string and the character (core.settings.Options._stops).
4. A preset group given with a `+` (`+runner=openai`) said in benchrun's words, with what to write (`runner=openai`),
   not Hydra's words of a defaults list (compose.commandline._refuse_added_preset); one of null or a list said as
   such (`_refuse_no_one_preset`), not advised without the `+` and refused in turn.
5. A format whose JSON schema is past 1 MiB as JSON (an enum of a million values) refused naming its size
   (compiler.formats.MAX_SCHEMA_BYTES, checked in compiler.plan.format_spec).
6. A preset of a folder of hydra.searchpath (`hydra.searchpath=[file://DIR]`) read before Hydra with the checks of one
   of --config-dir (compose.userpresets._config_dirs).
7. A sweep of one Ollama judge model by two names (`-m judge.model=qwen2.5,qwen2.5:latest`) refused as one of the
   model under test is (compose.sweepsize.one_model_swept_twice, of MODEL_KEYS).
8. A control character unquoted in an override (`task.name=a<ESC>`) said as a control character to remove, not
   advised quoted with U+FFFD in its place (cli._unquoted_character).
9. A dry run's hydra.output_subdir (or hydra.job.name) checked as a run's is (callbacks._check_inside): a path there
   made Hydra write its copies (config.yaml) over an archived run's own, or outside the dry run's scratch directory.
10. A file handler of Hydra's own log (hydra.hydra_logging, a preset; the command line's overrides of it are refused
    before Hydra, `test_hostile_thirtysecond_main.py`) refused: Hydra appended its lines to any file named, an archived
    run's records too (compose.hydragiven._check_hydra_log_files).
11. A refusal of the cache's place that $XDG_CACHE_HOME (or $HOME) chose names the variable beside cache_dir
    (execute.cache.store_for), as one of OLLAMA_HOST's does.
12. One server listed twice in a list of servers by two spellings (`:09` and `:9`, `LOCALHOST`, `http://h` and
    `http://h:80`) refused as one listed twice (core.serverurls.one_server).
13. A dry run whose $TMPDIR is in a run's or a sweep's directory refused naming $TMPDIR (a sweep's was taken; a run's
    said of the scratch directory made there, with advice of hydra.run.dir) (callbacks._tmpdir_refusal).
"""

from __future__ import annotations

import tempfile

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from benchrun.compose.sweepsize import one_model_swept_twice
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.p29_asking import NUMBERED
from tests.helpers.p29_input import HOST, dry_run
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p31_input import CUSTOM_FORMAT, preset_run

ONE_MODEL = ("name one model as Ollama reads them, registry.ollama.ai/library/llama3.2:latest (a name is given the "
             "host, namespace and tag it leaves out: registry.ollama.ai, library, latest, and its case is not read); "
             "list each model once")


@pytest.mark.parametrize(("args", "said"), [
    (("-m", "runner.model=llama3.2,Llama3.2:LATEST"),
     "the sweep lists one model twice: 'llama3.2' and 'Llama3.2:LATEST'"),
    (("runner.model=[Registry.Ollama.AI/library/llama3.2,llama3.2]",),
     "'Registry.Ollama.AI/library/llama3.2' and 'llama3.2'")])
def test_one_ollama_model_by_two_cases_is_refused(tmp_path, args, said):
    """Before: taken, two jobs of one config asking one model (Ollama finds `LLAMA3.2` as llama3.2 by EqualFold)."""
    done = dry_run(tmp_path, {"tasks.yml": TASK}, *args)
    assert ended(done) == refusal(f"in 'config': runner.model: {said} {ONE_MODEL}")


@pytest.mark.parametrize(("given", "said"), [
    ("num_ctx=-5", "-5 is no context's size (0 is the model's own): give 0 or more"),
    ("num_predict=-3", "-3 is no count of tokens to predict (-1 is no limit, -2 until the context is full): give -2 or "
                       "more"),
    ("num_batch=0", "0 is no batch's size (a batch holds one token at least): give 1 or more"),
    ("num_thread=-1", "-1 is no count of threads (0 lets the server choose): give 0 or more"),
    ("num_gpu=-2", "-2 is no count of layers to put on a GPU (-1 lets the server choose, 0 puts none): give -1 or "
                   "more"),
    ("num_keep=-2", "-2 is no count of the prompt's tokens to keep (-1 keeps them all): give -1 or more"),
    ("top_k=-1", "-1 is no count of the likeliest tokens to sample from (0 takes them all): give 0 or more"),
    ("repeat_last_n=-2", "-2 is no count of tokens to look back over (-1 is the whole context, 0 none): give -1 or "
                         "more"),
    ("top_p=2", "2.0 is no probability, which top_p is, the share of chance the likeliest tokens sampled from add up "
                "to (1 takes them all): give 0 to 1"),
    ("typical_p=-0.5", "-0.5 is no probability, which typical_p is, the share of chance of the typical tokens sampled "
                       "from (1 takes them all): give 0 to 1")])
def test_an_option_outside_the_bounds_ollama_reads_is_refused(tmp_path, given, said):
    """Before: taken, and sent (a context of -5 tokens passed on to the engine, a batch of 0 taken for the default, a
    top_p of 2 read as no cut)."""
    done = dry_run(tmp_path, {"tasks.yml": TASK}, f"+runner.options.{given}")
    assert ended(done) == refusal(f"in 'config': runner.options.{given.split('=')[0]}: {said}")


def test_options_at_their_bounds_are_taken(tmp_path):
    given = ["num_ctx=0", "num_predict=-2", "num_thread=0", "num_gpu=-1", "top_k=0", "repeat_last_n=-1", "num_keep=-1",
             "num_batch=1", "top_p=1", "typical_p=0"]
    done = dry_run(tmp_path, {"tasks.yml": TASK}, *(f"+runner.options.{option}" for option in given))
    assert (done.returncode, done.stderr) == (0, "")


CONTROL = ("a control character, which no text asks (it would be sent as written, and a terminal showing it takes it "
           "as a command); remove it (a tab, a line break or a form feed is kept)")


def test_a_stop_string_of_a_control_character_in_a_quoted_override_is_refused(tmp_path):
    """Before: taken, ESC sent as a stop string and written raw into config.yaml and the manifest."""
    done = dry_run(tmp_path, {"tasks.yml": TASK}, "+runner.options.stop=['\\n','a\x1b']")
    assert ended(done) == refusal(f"in 'config': runner.options.stop: the stop string 'a\\x1b': '\\x1b', {CONTROL}")


@pytest.mark.parametrize(("stop", "said"), [
    ('"\\e"', f"the stop string '\\x1b': '\\x1b', {CONTROL}"),
    ('"\\x7f"', f"the stop string '\\x7f': '\\x7f', {CONTROL}"),
    ('"\\0"', "the stop string '\\x00': an escape writes a NUL character (\\0, \\x00, \\u0000), which no text holds, "
              "as a file's NUL byte is refused (a server reading text as C does ends the prompt there); leave it out")])
def test_a_stop_string_a_presets_escape_makes_a_control_character_is_refused(tmp_path, stop, said):
    done = preset_run(tmp_path, f"defaults:\n  - ollama\n  - _self_\nmodel: m\noptions:\n  stop: [{stop}]\n".encode())
    assert ended(done) == refusal(f"in 'config': runner.options.stop: {said}")


def test_a_stop_string_of_a_line_break_or_a_tab_is_taken(tmp_path):
    done = preset_run(tmp_path, b'defaults:\n  - ollama\n  - _self_\nmodel: m\noptions:\n  stop: ["\\n\\n", "\\t"]\n')
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("given", ["+runner=openai", "+model=gemma3", "+task=folderbench"])
def test_a_preset_group_added_with_a_plus_is_said_in_benchruns_words(tmp_path, given):
    """Before: `Multiple values for runner. To override a value use 'override runner: openai'`, a defaults list's
    words, where the command line chooses a preset by `runner=openai`."""
    group = given[1:].partition("=")[0]
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, given)) == refusal(
        f"in 'config': {group}: the override '{given}' adds the group {group} again, where benchrun's config holds it "
        f"already (its defaults list); choose the preset without the '+': {given[1:]}")


def test_a_preset_group_added_as_null_is_said_as_null_not_as_added(tmp_path):
    """Before (with the `+` said first): advised `model=null`, which is refused in turn."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "+model=null")) == refusal(
        "in 'config': model: one preset's name belongs here (shipped: gemma3, llama3.2), not null; none is the "
        "default: leave model= out")


def test_a_format_of_a_schema_past_a_mebibyte_is_refused(tmp_path):
    """Before: taken (an enum of a million values: seconds of compiling, then its schema sent with every request and
    the server making a grammar of it each time)."""
    schema = '{"type": "object", "properties": {"answer": {"enum": [f"label-{i:06}" for i in range(100_000)]}}}'
    done = dry_run(tmp_path, {"tasks.yml": TASK.replace("['1']", "[label-000001]") + "  format: F\n",
                              "custom_response.py": CUSTOM_FORMAT.replace("{schema!r}", schema)})
    assert ended(done) == refusal(
        "in 'custom_response.py': task 't': format 'F': its JSON schema is 1,600,056 bytes as JSON, more than a "
        "format's (1,048,576: it is sent with every request, the server making a grammar of it each time); hold the "
        "answer to fewer values, and check it against a long list in a scorer")


@pytest.mark.parametrize(("preset", "said"), [
    ("- a\n- b\n", "it holds a list, where a preset holds keys (as `model: llama3.2`)"),
    ("type: ollama\nx: &a [*a]\n", "its YAML aliases expand to more than 100,000 values, more than a preset holds, "
                                   "which Hydra would build one by one for minutes; write the values out, or use fewer "
                                   "aliases")])
def test_a_preset_of_a_search_path_folder_is_read_before_hydra_as_one_of_config_dir(tmp_path, preset, said):
    """Before: only --config-dir's presets were read first: a list, `Hydra could not go on: ValueError: invalid
    literal for int() with base 10: 'host'`; an alias inside itself, exit 1."""
    write_bench(tmp_path, {"tasks.yml": TASK, "../mine/runner/mine.yaml": preset})
    done = call_benchrun("hydra.searchpath=[pkg://benchrun,'file://mine']", "runner=mine", "task.path=bench", HOST,
                         "dry_run=true", cwd=tmp_path)
    assert ended(done) == refusal(f"in '{tmp_path / 'mine' / 'runner' / 'mine.yaml'}': {said}")


def test_a_sweep_of_one_ollama_judge_model_by_two_names_is_refused(tmp_path):
    """Before: taken, two jobs of one config whose every answer one judge model graded (only runner.model was read)."""
    done = dry_run(tmp_path, NUMBERED, "-m", "judge.model=qwen2.5,QWEN2.5:latest")
    assert ended(done) == refusal("in 'config': judge.model: the sweep lists one model twice: 'qwen2.5' and "
                                  "'QWEN2.5:latest' " + ONE_MODEL.replace("llama3.2", "qwen2.5"))


def test_a_sweep_of_one_judge_model_by_two_names_of_another_runner_is_two_jobs():
    swept = OverridesParser.create().parse_override("judge.model=qwen2.5,qwen2.5:latest")
    assert (one_model_swept_twice(swept, "openai"), one_model_swept_twice(swept, "ollama") is not None) == (None, True)


@pytest.mark.parametrize(("given", "at"), [("task.name=a\x1b", 12), ("+runner.options.stop=[a\x7f]", 24)])
def test_a_control_character_unquoted_in_an_override_is_said_to_be_removed_not_quoted(tmp_path, given, at):
    """Before: `Hydra's override grammar takes '\\x1b' (character 12) only inside quotes; quote it: task.name='a�'`,
    advice of another value (U+FFFD), and one refused once quoted."""
    char = repr(given[at - 1])
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, given)) == refusal(
        f"the override {given!r}: character {at}: {char}, {CONTROL}")


@pytest.mark.parametrize("multirun", [(), ("-m",)])
def test_a_dry_run_puts_hydras_copies_in_no_other_directory(tmp_path, multirun):
    """Before: a dry run took hydra.output_subdir of a path (only a run checked it): Hydra wrote its config.yaml over
    that of the run named, an archived run's file rewritten (verify then failed), or beside the scratch dir (`..`)."""
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "config.yaml").write_text("kept\n")
    done = dry_run(tmp_path, {"tasks.yml": TASK}, *multirun, f"hydra.output_subdir={tmp_path / 'old'}")
    assert (ended(done), sorted(p.name for p in (tmp_path / "old").iterdir()),
            (tmp_path / "old" / "config.yaml").read_text()) == (refusal(
                f"hydra.output_subdir={tmp_path / 'old'}: a name in the run's directory (no '/', not '.' or '..'), "
                "where its files are kept; leave it out (.hydra)"), ["config.yaml"], "kept\n")


def test_a_file_handler_of_hydras_own_log_is_refused_before_it_writes(tmp_path):
    """Before: taken, Hydra appending `Launching 1 jobs locally` and the job's overrides to the file named (an archived
    run's responses.jsonl, which verify then failed)."""
    kept = tmp_path / "records.jsonl"
    kept.write_text("kept\n")
    (tmp_path / "presets" / "hydra" / "hydra_logging").mkdir(parents=True)
    (tmp_path / "presets" / "hydra" / "hydra_logging" / "tofile.yaml").write_text(
        f"version: 1\nhandlers:\n  f: {{class: logging.FileHandler, filename: {kept}}}\nroot: {{handlers: [f]}}\n")
    done = dry_run(tmp_path, {"tasks.yml": TASK}, "-m", "--config-dir", str(tmp_path / "presets"),
                   "hydra/hydra_logging=tofile")
    assert (ended(done), kept.read_text()) == (refusal(
        f"hydra.hydra_logging.handlers.f.filename={kept}: Hydra's own log goes to the console alone: a file of it is "
        "appended to wherever it is told, an archived run's records too, and masks no credential; leave "
        "hydra.hydra_logging's handlers out"), "kept\n")


def test_a_cache_place_an_environment_variable_chose_names_the_variable(tmp_path):
    """Before: `in 'config': cache_dir: ...`, a key the user never wrote, $XDG_CACHE_HOME unnamed."""
    write_bench(tmp_path, {"tasks.yml": TASK, "../sweep/multirun.yaml": ""})
    with FakeOllama(models=["m"], responder=lambda req: '{"answer": "1"}') as server:
        done = call_benchrun("task.path=bench", f"runner.host={server.url}", "runner.model=m", cwd=tmp_path,
                             env={"XDG_CACHE_HOME": str(tmp_path / "sweep")})
    assert ended(done) == refusal(
        f"in 'config': cache_dir (from $XDG_CACHE_HOME): {tmp_path / 'sweep' / 'benchrun'} is inside a sweep's "
        f"directory ({tmp_path / 'sweep'}), which holds that sweep's files alone; put the cache elsewhere "
        "(cache_dir=DIR), or cache=false")


@pytest.mark.parametrize(("hosts", "twice", "first"), [
    ("[http://127.0.0.1:9,http://127.0.0.1:09]", "http://127.0.0.1:09", "http://127.0.0.1:9"),
    ("[http://localhost:11434,HTTP://LOCALHOST:11434]", "HTTP://LOCALHOST:11434", "http://localhost:11434"),
    ("[http://h:80,http://h]", "http://h", "http://h:80")])
def test_one_server_by_two_spellings_is_listed_twice(tmp_path, hosts, twice, first):
    """Before: taken, the run sending twice runner.concurrency requests at once to one server (its port with a leading
    zero, its host or scheme in capitals, its scheme's own port written out or not)."""
    done = dry_run(tmp_path, {"tasks.yml": TASK}, f"runner.host={hosts}")
    assert ended(done) == refusal(f"in 'config': runner.host: '{twice}' is listed twice (as '{first}'): list each "
                                  "server once")


def test_a_tmpdir_inside_a_sweeps_directory_is_said_of_the_variable(tmp_path, monkeypatch):
    """Before: taken, the dry run's own directory made among a sweep's files; of a run's directory, refused as
    `.../benchrun-dry-run-xyz is inside the run directory ...; pick a new directory (hydra.run.dir=...)`, a directory
    the user never named, with advice of a key that was not at fault."""
    write_bench(tmp_path, {"tasks.yml": TASK, "../sweep/multirun.yaml": ""})
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "sweep"))  # $TMPDIR, as tempfile read it
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert ended(done) == refusal(
        f"$TMPDIR ({tmp_path / 'sweep'}) is a sweep's directory, which holds that sweep's files alone, and a dry run "
        "makes its own directory there; set TMPDIR to another folder")
