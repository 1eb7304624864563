"""The thirty-first hostile pass of issue 19, the side of what goes in: the items the thirtieth pass left, then a fresh
pass. /work/notes/p31/result-input.md has the whole list, what held and what was left.

Fixed:
1. A benchmark's file or a preset saved as UTF-16 or UTF-32 (by its byte-order mark, or by its pattern of NULs when it
   has none) said as what it is, with how to save it as UTF-8 (core.filebytes.wide_text), not `not UTF-8 text
   (invalid start byte)`.
2. A custom format's `$ref` looked up against the `$id` around it (compiler.plan._refs_held): a schema holding `$id`
   was left unchecked, its `$ref` to a part it lacks failing the run.
3. A runner option of a library's abstract type given another kind (`+runner.options.stop={a:1}`: the ollama
   client's `Sequence[str]`) said in benchrun's words (core.errors.INSTANCES_TAKEN), not `Input should be an instance
   of Sequence`.
4. runner.keep_alive beyond Go's int64 nanoseconds (`9999999999h`, which Ollama refuses, or 1e10 seconds, which it
   wraps around) refused (core.goduration.beyond_go).
5. A refusal of a value an environment variable gave (`OLLAMA_HOST`) names the variable as well as the key
   (compose.fromenv).
6. One Ollama model named twice (`llama3.2` and `llama3.2:latest`), in a sweep or a list, refused naming both
   (core.officialclient.one_model_named_twice): two jobs of one config asking one model.
7. A character a field's format code makes of a number (`{a:c}` of 27, 0, 65279, 55296) held to a text's rules, and a
   number that is no character's code (1114112, -1) said in benchrun's words, not a traceback (compiler.charcodes).
8. A preset of the user's own (--config-dir) read before Hydra: YAML aliases expanding past 100,000 values (a billion
   laughs, an alias inside itself) and a top holding no keys refused naming the file (compose.userpresets); a
   character PyYAML's reader takes in no file (a NUL of UTF-16 without its mark, ESC) one line, not a traceback
   (cli._unread_character).
9. A custom format whose schema the run's check (jsonschema-rs) cannot be built of (an `$id` that is no URI, a
   `$dynamicRef` to no anchor) refused as it is compiled (compiler.plan._built).
10. A server's URL that urlsplit refuses (`[::1`, `[a,b]:5`) said naming the URL (core.serverurls._splittable).
"""

from __future__ import annotations

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from benchrun import compile_plan
from benchrun.compose.sweepsize import one_model_swept_twice
from benchrun.core.settings import OpenAIConfig
from tests.helpers.benchfiles import config, write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.p29_input import HOST, dry_run
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p31_input import CUSTOM_FORMAT, dry_run_bytes, preset_run

SAVE = "where benchrun reads UTF-8; save it as UTF-8 (an editor's Save As, encoding UTF-8; or iconv -f {} -t UTF-8)"
FOLDER_TASK = {"tasks/t/template.txt": "say {a}\n", "tasks/t/values.csv": "a,reference\n1,1\n"}


@pytest.mark.parametrize(("files", "raw", "said"), [
    ({}, {"tasks.yml": TASK.encode("utf-16")},
     "in 'tasks.yml': UTF-16 text (its byte-order mark FF FE), " + SAVE.format("UTF-16LE")),
    ({"tasks/t/template.txt": "say {a}\n"}, {"tasks/t/values.csv": "a,reference\n1,1\n".encode("utf-16-le")},
     "in 'tasks/t/values.csv': task 't': UTF-16 text (a NUL byte after each ASCII character, and no byte-order "
     "mark), " + SAVE.format("UTF-16LE")),
    ({"tasks/t/values.csv": "a,reference\n1,1\n"}, {"tasks/t/template.txt": "\ufeffsay {a}\n".encode("utf-16-be")},
     "in 'tasks/t/template.txt': task 't': UTF-16 text (its byte-order mark FE FF), " + SAVE.format("UTF-16BE")),
    ({}, {"tasks.yml": TASK.encode("utf-32")},
     "in 'tasks.yml': UTF-32 text (its byte-order mark FF FE 00 00), " + SAVE.format("UTF-32LE"))])
def test_a_file_saved_as_utf16_is_said_so_with_how_to_save_it_as_utf8(tmp_path, files, raw, said):
    """Before: `not UTF-8 text (invalid start byte)`, and of a file without its mark `a NUL byte, which no text holds
    (a file saved as UTF-16, or not text?)`."""
    assert ended(dry_run_bytes(tmp_path, files, raw)) == refusal(said)


@pytest.mark.parametrize(("encoding", "how"), [
    ("utf-16", "its byte-order mark FF FE"),
    ("utf-16-le", "a NUL byte after each ASCII character, and no byte-order mark")])
def test_a_preset_saved_as_utf16_is_said_so(tmp_path, encoding, how):
    """Before: `not UTF-8 text (invalid start byte at byte 0); save it as UTF-8`, of a file that is UTF-16; without
    its mark, a traceback (PyYAML's ReaderError `unacceptable character #x0000`)."""
    done = preset_run(tmp_path, "type: ollama\nmodel: m\n".encode(encoding))
    assert ended(done) == refusal(f"in '{tmp_path / 'conf' / 'runner' / 'mine.yaml'}': UTF-16 text ({how}), "
                                  + SAVE.format("UTF-16LE"))


def test_a_text_of_a_nul_at_odd_places_that_is_not_utf16_keeps_its_words(tmp_path):
    done = dry_run_bytes(tmp_path, {"tasks/t/template.txt": "say {a}\n"},
                         {"tasks/t/values.csv": b"a,reference\n1,1\0\n\0\n"})
    assert ended(done) == refusal("in 'tasks/t/values.csv': task 't': line 2, column 4: a NUL byte, which no text "
                                  "holds (a file saved as UTF-16, or not text?); save it as UTF-8")


def test_a_formats_ref_read_against_its_id_is_taken(tmp_path):
    schema = {"$id": "urn:mine:f", "type": "object", "properties": {"answer": {"$ref": "#/$defs/A"}},
              "required": ["answer"], "$defs": {"A": {"type": "string"}}}
    bench = write_bench(tmp_path, {"tasks.yml": TASK + "  format: F\n",
                                   "custom_response.py": CUSTOM_FORMAT.format(schema=schema)})
    assert compile_plan(config(bench)).manifest.tasks[0].format.json_schema == schema


@pytest.mark.parametrize("schema", [
    {"$id": "urn:mine:f", "type": "object", "properties": {"answer": {"$ref": "#/$defs/Nope"}}},
    {"type": "object", "properties": {"answer": {"$id": "urn:mine:a", "$ref": "#/$defs/Nope"}},
     "$defs": {"Nope": {"type": "string"}}}])
def test_a_formats_ref_to_a_part_the_schema_around_it_lacks_is_refused_with_an_id_too(tmp_path, schema):
    """Before: a dry run took it (a schema holding `$id` went unchecked); the run failed at once, exit 4, blaming its
    manifest. The second's `$defs` are the top's, not those of the subschema whose `$id` its `$ref` is read against."""
    done = dry_run(tmp_path, {"tasks.yml": TASK + "  format: F\n",
                              "custom_response.py": CUSTOM_FORMAT.format(schema=schema)})
    assert ended(done) == refusal(
        "in 'custom_response.py': format 'F': its JSON schema refers to '#/$defs/Nope' ($ref), which it does not hold, "
        "and the format check cannot be made without it; define it (in $defs), or let pydantic make the schema from "
        "the class's fields")


@pytest.mark.parametrize(("given", "said"), [
    ("+runner.options.stop={a:1}", "a mapping, where a list is taken"),
    ("+runner.options.stop=5", "5 is a number, where a list is taken")])
def test_a_runner_option_of_the_clients_abstract_type_given_another_kind_is_said_in_benchruns_words(tmp_path, given,
                                                                                                     said):
    """Before: `runner.options.stop: Input should be an instance of Sequence`, the ollama client's type."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, given)) == refusal(f"in 'config': runner.options.stop: {said}")


BEYOND_GO = ("is longer than a duration Ollama reads (Go counts one in nanoseconds, at most 2562047h47m16.854775807s, "
             "about 292 years; a text beyond is refused by every request, a number wraps around); for a model kept "
             "loaded for ever give -1")


@pytest.mark.parametrize(("given", "shown"), [("9999999999h", '"9999999999h"'), ("2562047h47m16.854775808s",
                                                                                "\"2562047h47m16.854775808s\""),
                                             ("'-2562047h47m16.854775809s'", '"-2562047h47m16.854775809s"'),
                                             ("9223372037", "9223372037.0"), ("1e30", "1e+30")])
def test_a_keep_alive_beyond_gos_durations_is_refused(tmp_path, given, shown):
    """Before: taken, Ollama refusing every request of a text (`time: invalid duration`), and taking a number of
    seconds as `int(t) * int(time.Second)`, which wraps around."""
    done = dry_run(tmp_path, {"tasks.yml": TASK}, f"+runner.keep_alive={given}")
    assert ended(done) == refusal(f"in 'config': runner.keep_alive: {shown} {BEYOND_GO}")


@pytest.mark.parametrize("given", ["2562047h47m16.854775807s", "'-2562047h47m16.854775808s'", "9223372036", "-1e30"])
def test_a_keep_alive_at_gos_bounds_is_taken(tmp_path, given):
    done = dry_run(tmp_path, {"tasks.yml": TASK}, f"+runner.keep_alive={given}")
    assert (done.returncode, done.stderr) == (0, "")


def test_a_refusal_of_a_value_an_environment_variable_gave_names_the_variable(tmp_path):
    """Before: `in 'config': runner.host: ...`, a key the user never wrote, the variable unnamed."""
    write_bench(tmp_path, {"tasks.yml": TASK})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path, env={"OLLAMA_HOST": "http://h:1/?a=1"})
    assert ended(done) == refusal(
        "in 'config': runner.host (from $OLLAMA_HOST): 'http://h:1/?a=1' is not a server's URL: a query (?...) or a "
        "fragment (#...) has no place in it, for benchrun adds the API's paths to it (the query sent as part of the "
        "path, or dropped); give http://host:port and the path of the API's root")


def test_a_refusal_of_a_value_given_on_the_command_line_names_no_variable(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASK})
    done = call_benchrun("task.path=bench", "dry_run=true", "runner.host='http://h:1/?a=1'", cwd=tmp_path,
                         env={"OLLAMA_HOST": "http://h:1"})
    assert ended(done)[2].startswith("benchrun: error: in 'config': runner.host: 'http://h:1/?a=1' is not a server's")


ONE_MODEL = ("'llama3.2' and 'llama3.2:latest' name one model as Ollama reads them, registry.ollama.ai/library/"
             "llama3.2:latest (a name is given the host, namespace and tag it leaves out: registry.ollama.ai, library, "
             "latest, and its case is not read); list each model once")


def test_a_sweep_of_one_ollama_model_by_two_names_is_refused(tmp_path):
    """Before: taken, two jobs (`llama3.2`, `llama3.2_latest`) of one config asking one model."""
    write_bench(tmp_path, {"tasks.yml": TASK})
    done = call_benchrun("-m", "task.path=bench", HOST, "dry_run=true", "runner.model=llama3.2,llama3.2:latest",
                         cwd=tmp_path)
    assert ended(done) == refusal(f"in 'config': runner.model: the sweep lists one model twice: {ONE_MODEL}")


def test_a_list_of_one_ollama_model_by_two_names_is_refused(tmp_path):
    done = dry_run(tmp_path, {"tasks.yml": TASK}, "runner.model=[llama3.2,gemma3,library/llama3.2:latest]")
    assert ended(done) == refusal("in 'config': runner.model: " + ONE_MODEL.replace(
        "'llama3.2:latest'", "'library/llama3.2:latest'"))


def test_one_name_by_its_tag_of_another_runner_is_two_models():
    """An OpenAI-compatible server names its models as it likes: `a` and `a:latest` may be two, in a list or a sweep."""
    swept = OverridesParser.create().parse_override("runner.model=a,a:latest")
    assert (OpenAIConfig.model_validate({"model": ["a", "a:latest"]}).model, one_model_swept_twice(swept, "openai"),
            one_model_swept_twice(swept, "ollama") is not None) == (["a", "a:latest"], None, True)


MADE = ("which no prompt holds (a control character, a byte-order mark or half a surrogate pair); give the code of a "
        "character that prints")


@pytest.mark.parametrize(("code", "said"), [
    (27, f"field {{a:c}} makes 27 the character '\\x1b', {MADE}"),
    (0, f"field {{a:c}} makes 0 the character '\\x00', {MADE}"),
    (65279, f"field {{a:c}} makes 65279 the character '\\ufeff', {MADE}"),
    (55296, f"field {{a:c}} makes 55296 the character '\\ud800', {MADE}"),
    (1114112, "field {a:c} makes no character of 1114112: a character's code is 0 to 1,114,111 (U+10FFFF)"),
    (-1, "field {a:c} makes no character of -1: a character's code is 0 to 1,114,111 (U+10FFFF)")])
def test_a_character_a_fields_format_code_makes_of_a_number_is_held_to_a_texts_rules(tmp_path, code, said):
    """Before: ESC, NUL or a byte-order mark asked in the prompt, where each was refused in any file's text; a code
    past Unicode's last a traceback (`OverflowError: %c arg not in range(0x110000)`), half a surrogate pair one
    (`UnicodeEncodeError`) as the manifest was written."""
    done = dry_run(tmp_path, {"tasks/t/template.txt": "say {a:c}\n", "tasks/t/values.csv": f"a,reference\n{code},1\n"})
    assert ended(done) == refusal(f"in 'tasks/t/template.txt': task 't': cannot render sample 't:a={code}': {said}")


def test_a_character_a_fields_format_code_makes_that_prints_is_asked(tmp_path):
    bench = write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'option {i:c}'\n  values: {i: [65, 66]}\n"
                                                "  reference: ['1', '2']\n"})
    assert [s.prompt for s in compile_plan(config(bench)).manifest.samples] == ["option A", "option B"]


LAUGHS = "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 10) if prev else ', '.join(['x'] * 10)}]\n"
                 for prev, name in zip(["", *"abcdef"], "abcdefg"))
"""Seven lines of ten aliases each: ten million values, written out."""


@pytest.mark.parametrize(("preset", "said"), [
    (LAUGHS, "its YAML aliases expand to more than 100,000 values, more than a preset holds, which Hydra would build "
             "one by one for minutes; write the values out, or use fewer aliases"),
    ("type: ollama\nx: &a [*a]\n", "its YAML aliases expand to more than 100,000 values, more than a preset holds, "
                                   "which Hydra would build one by one for minutes; write the values out, or use fewer "
                                   "aliases"),
    ("- a\n- b\n", "it holds a list, where a preset holds keys (as `model: llama3.2`)"),
    ("type: ollama\nmodel: a\x1bb\n", "character 22: '\\x1b', a control character, which no text asks (it would be "
                                      "sent as written, and a terminal showing it takes it as a command); remove it (a "
                                      "tab, a line break or a form feed is kept)")])
def test_a_preset_hydra_could_not_read_in_time_or_at_all_is_refused_naming_it(tmp_path, preset, said):
    """Before: ten million values built by OmegaConf for many minutes (no end seen in two); a list, `Hydra could not go
    on: ValueError: invalid literal for int() with base 10: 'host'`; ESC, a traceback (PyYAML's ReaderError)."""
    done = preset_run(tmp_path, preset.encode())
    assert ended(done) == refusal(f"in '{tmp_path / 'conf' / 'runner' / 'mine.yaml'}': {said}")


def test_a_preset_of_a_few_aliases_is_taken(tmp_path):
    done = preset_run(tmp_path, b"defaults:\n  - ollama\n  - _self_\nmodel: &m gemma3\nkeep_alive: 5m\n")
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(("schema", "said"), [
    ({"$id": "::not a uri::", "type": "object", "properties": {"answer": {"type": "string"}}},
     "Invalid URI reference '::not a uri::': unexpected character at index 0"),
    ({"type": "object", "properties": {"answer": {"$dynamicRef": "#nope"}}}, "Anchor 'nope' does not exist")])
def test_a_format_the_runs_check_cannot_be_built_of_is_refused_before_the_run(tmp_path, schema, said):
    """Before: a dry run took it; the run failed at once, exit 4, `in 'manifest.json': a format's JSON schema is not a
    JSON Schema (...); the compiler writes none such`."""
    done = dry_run(tmp_path, {"tasks.yml": TASK + "  format: F\n",
                              "custom_response.py": CUSTOM_FORMAT.format(schema=schema)})
    assert ended(done) == refusal(f"in 'custom_response.py': format 'F': its JSON schema cannot be read by the format "
                                  f"check ({said}); let pydantic make the schema from the class's fields")


@pytest.mark.parametrize("host", ["[::1", "[a,b]:5"])
def test_a_server_url_whose_brackets_hold_no_ipv6_address_is_said_so(tmp_path, host):
    """Before: urlsplit's words alone, the URL unnamed: `Invalid IPv6 URL`, `'a,b' does not appear to be an IPv4 or
    IPv6 address`."""
    write_bench(tmp_path, {"tasks.yml": TASK})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path, env={"OLLAMA_HOST": host})
    assert ended(done) == refusal(
        f"in 'config': runner.host (from $OLLAMA_HOST): '{host}' is not a server's URL: its brackets do not close "
        "round an IPv6 address (a host in brackets is one, as http://[::1]:11434)")
