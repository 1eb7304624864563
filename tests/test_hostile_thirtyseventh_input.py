"""The thirty-seventh hostile pass of issue 19, the side of what goes in: the items the thirty-sixth pass left, then a
fresh pass. /work/notes/p37/result-input.md has the whole list, what held and what was left.

Fixed:
1. A sweep's function given a sweep among its arguments (`-m repeats=shuffle(1,choice(2,3))`, `sort(1,range(1,3))`,
   `str(glob(*))`) refused as a sweep inside another value (compose.sweepwords._sweep_in_function): Hydra's grammar
   said a bare AssertionError (`... cannot read it (AssertionError while evaluating '...':)`) or `Invalid arguments:
   (1, RangeSweep(tags=set(), ...))`. (cli.py's words for an override Hydra's grammar cannot read moved to
   compose.overridewords, for room.)
2. An override into an item of a list the list does not hold (`runner.options.stop.5=x` of two stops,
   `runner.options.stop.x=1`, `task.only.1=x`) said naming the list and its items (compose.listitems): it was
   `Error merging override runner.options.stop.5=x`, no reason, or `Hydra could not go on: ValueError: invalid
   literal for int() with base 10: 'x'`.
3. An override adding a key beneath a setting of one value (`+runner.options.temperature.x=1`, `++repeats.x=1`)
   refused as the same override without the '+' is (compose.valuekeys.refuse_added_into_one_value): pydantic said
   `runner.options.temperature: Input should be a valid number, not {"x": 1}`.
4. A sweep listing one number written two ways (`-m runner.options.temperature=0,0.0`, `+runner.options.top_p=1,1.0`,
   `runner.options={temperature: 0},{temperature: 0.0}`) refused naming the key (compose.sweptonce._as_equal): two
   jobs asking the server the same (JSON's 0 and 0.0 are one number to Ollama and llama.cpp) under two manifest ids.
   Options stay recorded as given (the lead's rule: archived runs' manifest ids do not change).
5. An IPv6 address's zone in a server's URL (core.serverurls.zone_read, _zone_unaskable): RFC 6874's `%25eth0` read
   as the socket reads it (`%eth0`: the clients passed `%25eth0` on, and the run said `the host name
   'fe80::1%25eth0' ... does not resolve`); a zone on an address that takes none (`[::1%lo]`, `[fd00::2%25eth0]`)
   or naming no interface of this machine refused in words for an address, as the config is read.
6. `${hydra:...}` in a value the run's (or sweep's) folder is named after (`runner.model=${hydra:job.name}`,
   `task.name=${hydra:runtime.cwd}`, a preset's `runner.model: ${hydra:job.name}`) said as that, naming those values
   (compose.config.unresolvable): it was `cannot resolve: ValueError
   raised while resolving interpolation: HydraConfig was not set`.
7. `${oc.env:V}` of a variable holding a key told by its prefix, with text run on before it (`task.system=x${oc.env:V}`,
   `runner.model=m${oc.env:V}`), refused as the variable's value is read (core.secrets.environment_read, a shared
   module, one line), and in a preset's value as written (compose.fromenv.read_credentials): the resolved text
   `xsk-proj-...` hid the key from the prefix's check, and the key went into the manifest's prompts.
8. An override Hydra reads but cannot keep as written among its own settings (`task.system="${oc.env:HOME,\\"x\\"}"`:
   OmegaConf reads the `${...}` of its raw text in hydra.overrides.task, the escaped quotes kept) said naming it and
   how to quote inside `${...}` (compose.overridewords.kept_unread): the line was `(mismatched input '"' expecting
   BRACE_CLOSE)`, naming nothing.
9. `--cfg job -p KEY` (`--package`) naming a key the config does not take (`-p nope`, `--package=runner.modle`) said as
   an override of it is, with the keys taken or the nearest (compose.commandline._refuse_unknown_package): Hydra wrote
   `package 'nope' not found in config`, without `benchrun: error:`, and exited 1.
10. The scorers and formats of custom_*.py listed beside an unknown one's name with their characters beyond ASCII
    escaped (compiler.plan._choices, by core.text.names_listed), as the name refused is: `unknown scorer 'sa' (...;
    in custom_scorer.py: sа)`, the Cyrillic `а` of the one defined unseen.
11. An override of Hydra's record of the command line (`hydra.overrides.task=["runner.model=gemma3"]`,
    `+hydra.overrides.task.5=x`, `~hydra.overrides`) refused (compose.commandline._refuse_kept_hydra_settings): the
    run (of llama3.2) listed `runner.model=gemma3` first among its overrides in run.json and .hydra/overrides.yaml.
12. A preset of the user's own not found, named beyond ASCII (`model='café'`, the file `cafe\u0301.yaml` of a copy from
    macOS), said with the name and the options escaped (cli.hydra_error, by core.text.names_listed): `Could not find
    'model/café' (options: café, gemma3, llama3.2)`, the two forms printed alike.
13. A judge's grades listed beyond ASCII escaped (compiler.judges, by core.text.names_listed): `scores: {sí: 1, no: 0}`
    (NFC) of a Literal['si\u0301', 'no'] (NFD) said `missing sí; not values of it: sí`, the two printed alike.
"""

from __future__ import annotations

import socket

import pytest

from benchrun.core.serverurls import DEFAULT_OLLAMA_HOST, servers
from tests.helpers.benchfiles import write_bench
from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import TASK, ended, refusal
from tests.helpers.p37_input import unset_hydra

NESTED = ("holds a sweep (a range, choice, interval or glob) inside another value (a list, a mapping or a sweep's "
          "values), where none is read: give the sweep as the override's whole value, with -m, or list the values it "
          "gives")


@pytest.mark.parametrize("value", ["shuffle(1,choice(2,3))", "sort(1,range(1,3))", "str(glob(*))"])
def test_a_sweep_among_a_sweep_functions_arguments_is_refused_as_a_sweep_inside_a_value(tmp_path, value):
    """Before: `Hydra's override grammar cannot read it (AssertionError while evaluating 'shuffle(1,choice(2,3))':)`,
    `(TypeError ...: Invalid arguments: (1, RangeSweep(tags=set(), start=1, stop=3, step=1, shuffle=False)))`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "-m", f"repeats={value}")) == refusal(
        f"in 'config': repeats: {value!r} {NESTED}")


@pytest.mark.parametrize(("args", "key", "listed", "items", "item"), [
    (("+runner.options.stop=[a,b]", "runner.options.stop.5=x"), "runner.options.stop.5", "runner.options.stop",
     "2 items (0 to 1)", "5"),
    (("+runner.options.stop=[a,b]", "runner.options.stop.x=1"), "runner.options.stop.x", "runner.options.stop",
     "2 items (0 to 1)", "x"),
    (("+runner.options.stop=[]", "runner.options.stop.0=x"), "runner.options.stop.0", "runner.options.stop",
     "no items", "0"),
    (("task.only=[t]", "task.only.1=x"), "task.only.1", "task.only", "1 item (0)", "1")])
def test_an_override_into_an_item_a_list_does_not_hold_names_the_list(tmp_path, args, key, listed, items, item):
    """Before: `Error merging override runner.options.stop.5=x` (OmegaConf's IndexError unsaid), `Hydra could not go
    on: ValueError: invalid literal for int() with base 10: 'x'`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, *args)) == refusal(
        f"in 'config': {key}: {listed} is a list of {items}, which holds no item '{item}': give the whole list "
        f"({listed}=[...])")


@pytest.mark.parametrize(("arg", "key", "one"), [
    ("+runner.options.temperature.x=1", "runner.options.temperature.x", "runner.options.temperature"),
    ("++repeats.x=1", "repeats.x", "repeats"), ("+runner.model.0=x", "runner.model.0", "runner.model")])
def test_a_key_added_beneath_a_setting_of_one_value_is_refused_as_an_override_into_it(tmp_path, arg, key, one):
    """Before: `runner.options.temperature: Input should be a valid number, not {"x": 1}` (pydantic's, of the
    mapping Hydra made)."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, arg)) == refusal(
        f"in 'config': {key}: '{one}' takes one value (a number, a text, or a list given whole), not keys or items "
        f"overridden one at a time: override it whole (++{one}=...)")


@pytest.mark.parametrize(("arg", "key", "one", "other"), [
    ("runner.options.temperature=0,0.0", "runner.options.temperature", "0", "0.0"),
    ("+runner.options.top_p=1,1.0", "runner.options.top_p", "1", "1.0"),
    ("runner.options={temperature: 0},{temperature: 0.0}", "runner.options", "{temperature:0}", "{temperature:0.0}")])
def test_a_sweep_listing_one_number_written_two_ways_is_refused(tmp_path, arg, key, one, other):
    """Before: two jobs, one request to the server, two manifest ids."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "-m", arg)) == refusal(
        f"in 'config': {key}: the sweep lists '{one}' and '{other}', one number written two ways (whole, and with a "
        "point or an exponent), which a server takes as one, so two of its jobs would ask the same; list each value "
        "once")


@pytest.mark.parametrize(("given", "host", "why"), [
    ("http://[::1%25lo]:11434", "::1%25lo", "gives a zone ('lo', after '%'), which only a link-local address "
                                            "(fe80::/10) takes: give the address without it"),
    ("http://[fd00::2%eth0]:11434", "fd00::2%eth0", "gives a zone ('eth0', after '%'), which only a link-local "
                                                    "address (fe80::/10) takes: give the address without it"),
    ("http://[fe80::1%25no-such-if]:11434", "fe80::1%25no-such-if",
     "gives a zone ('no-such-if', after '%') that names no network interface of this machine "
     f"({', '.join(name for _, name in socket.if_nameindex())})")])
def test_an_ipv6_zone_no_request_can_take_is_refused_in_words_for_an_address(tmp_path, given, host, why):
    """Before: the dry run took it, and a run said `the host name '::1%25lo' in runner.host=... does not resolve`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, f"runner.host='{given}'")) == refusal(
        f"in 'config': runner.host: '{given}' is not a server's URL: its host '{host}' {why}")


def test_an_ipv6_zone_written_as_rfc_6874_writes_it_is_asked_as_the_socket_reads_it():
    """Before: `http://[fe80::1%25lo]:11434`, which the clients passed on as a host name that does not resolve."""
    assert servers("http://[fe80::1%25lo]:11434", DEFAULT_OLLAMA_HOST) == "http://[fe80::1%lo]:11434"


HYDRA_READ = ("${hydra:...} in a value the run's or sweep's folder is named after (task.name, task.path, runner.model, "
              "runner_file, outputs, dry_run) reads Hydra's own settings, which are not yet set as Hydra names the "
              "folder; give the value itself")


@pytest.mark.parametrize(("args", "folder"), [(("runner.model=${hydra:job.name}",), "run"),
                                            (("task.name=${hydra:runtime.cwd}",), "run"),
                                            (("-m", "task.name=${hydra:job.name}"), "sweep")])
def test_hydras_own_settings_read_in_a_value_the_run_folder_is_named_after_is_said_as_that(tmp_path, monkeypatch,
                                                                                         args, folder):
    """Before: `cannot resolve: ValueError raised while resolving interpolation: HydraConfig was not set`."""
    unset_hydra(monkeypatch)
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, *args)) == refusal(
        f"in 'config': {args[-1].partition('=')[0]}: cannot resolve: {HYDRA_READ} (resolving hydra.{folder}.dir, from "
        f"the override '{args[-1]}')")


def test_hydras_own_settings_read_in_a_presets_value_the_run_folder_is_named_after_is_said_as_that(tmp_path,
                                                                                                 monkeypatch):
    """Before: `hydra.run.dir: cannot resolve: ValueError raised while resolving interpolation: HydraConfig was not
    set`."""
    unset_hydra(monkeypatch)
    write_bench(tmp_path, {"presets/model/mine.yaml": "# @package _global_\nrunner:\n  model: ${hydra:job.name}\n"})
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "--config-dir", "bench/presets", "model=mine")) == refusal(
        f"in 'config': runner.model: cannot resolve: {HYDRA_READ} (resolving hydra.run.dir)")


KEY = "sk-proj-abcdefABCDEF1234567890abcdef"
"""A key told by its prefix, as a dashboard shows one."""


@pytest.mark.parametrize("arg", ["task.system=x${oc.env:P37_VALUE}", "runner.model=m${oc.env:P37_VALUE}"])
def test_a_variable_holding_a_key_read_with_text_run_on_before_it_is_refused(tmp_path, monkeypatch, arg):
    """Before: the dry run took it (exit 0): `xsk-proj-...` is no key by its prefix's check, which a key must begin."""
    monkeypatch.setenv("P37_VALUE", KEY)
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, arg)) == refusal(
        f"in 'config': {arg.partition('=')[0]}: secrets are never taken from the config, where they would be archived "
        "(${oc.env:P37_VALUE}, which reads the credential in $P37_VALUE); put an API key in an environment variable "
        "and name it with runner.api_key_env, and give URLs without user names or passwords")


@pytest.mark.parametrize(("arg", "kept", "quote"), [
    ('task.system="${oc.env:HOME,\\"x\\"}"', "task", '"'), ("task.system='${oc.env:HOME,\\'x\\'}'", "task", "'"),
    ('hydra.job.name="${oc.env:HOME,\\"x\\"}"', "hydra", '"')])
def test_an_override_hydra_cannot_keep_as_written_is_named(tmp_path, arg, kept, quote):
    """Before: `benchrun: error: (mismatched input '"' expecting BRACE_CLOSE)`, naming no override."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, arg)) == refusal(
        f"the override {arg!r}: Hydra keeps it as written among its own settings (hydra.overrides.{kept}), where "
        f"OmegaConf cannot read the interpolation it holds (mismatched input '{quote}' expecting BRACE_CLOSE); inside "
        "${...}, quote a text with the quote the value is not written in, not an escaped one")


def test_a_presets_value_reading_a_key_with_text_run_on_before_it_is_refused(tmp_path, monkeypatch):
    """Before: the dry run took `task.system: x${oc.env:P37_VALUE}` of a preset (exit 0)."""
    monkeypatch.setenv("P37_VALUE", KEY)
    write_bench(tmp_path, {"presets/model/mine.yaml": "# @package _global_\nrunner:\n  model: m\n"
                                                       "task:\n  system: x${oc.env:P37_VALUE}\n"})
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "--config-dir", "bench/presets", "model=mine")) == refusal(
        "in 'config': task.system: secrets are never taken from the config, where they would be archived "
        "(${oc.env:P37_VALUE}, which reads the credential in $P37_VALUE); put an API key in an environment variable "
        "and name it with runner.api_key_env, and give URLs without user names or passwords")


@pytest.mark.parametrize(("args", "said"), [
    (("-p", "nope"), "nope: unknown key 'nope' (allowed: task, runner, model_preset, dry_run, runner_file, outputs, "
                     "scorer_timeout_s, judge, repeats, repeat_seeds, cache, cache_dir, shard)"),
    (("--package=runner.modle",), "runner.modle: unknown key 'modle' (did you mean 'model'?)")])
def test_a_package_shown_that_the_config_does_not_take_is_said_as_an_unknown_key(tmp_path, args, said):
    """Before: `package 'nope' not found in config` (Hydra's, no `benchrun: error:`), exit 1."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, "--cfg", "job", *args)) == refusal(f"in 'config': {said}")


def test_a_custom_scorer_listed_beside_an_unknown_name_shows_its_characters_beyond_ascii(tmp_path):
    """Before: `unknown scorer 'sa' (built-in: contains, exact_match; in custom_scorer.py: s\u0430)`, shown as `sа`."""
    files = {"tasks.yml": TASK + "  scorer: sa\n",
             "custom_scorer.py": "def s\u0430(response, reference):\n    return 1\n"}
    assert ended(dry_run(tmp_path, files)) == refusal(
        "in 'tasks.yml': task 't': tasks[0].scorer: unknown scorer 'sa' (built-in: contains, exact_match; in "
        "custom_scorer.py: s\u0430 (s\\u0430))")


@pytest.mark.parametrize("arg", ['hydra.overrides.task=["runner.model=gemma3"]', "+hydra.overrides.task.5=x",
                                 "~hydra.overrides"])
def test_an_override_of_hydras_record_of_the_command_line_is_refused(tmp_path, arg):
    """Before: taken, its values recorded in run.json as overrides given (or `... is a list of no items`)."""
    assert ended(dry_run(tmp_path, {"tasks.yml": TASK}, arg)) == refusal(
        f"{arg}: Hydra records there the overrides the command line gives (run.json and .hydra/overrides.yaml list "
        "them), where a value given would be recorded as given on the command line, and never was; leave it out")


def test_a_preset_not_found_beside_one_named_in_another_unicode_form_tells_them_apart(tmp_path):
    """Before: `Could not find 'model/caf\u00e9' (options: cafe\u0301, gemma3, llama3.2)`, both printed `café`."""
    write_bench(tmp_path, {"presets/model/cafe\u0301.yaml": "# @package _global_\nrunner:\n  model: m\n"})
    done = dry_run(tmp_path, {"tasks.yml": TASK}, "--config-dir", "bench/presets", "model='caf\u00e9'")
    assert ended(done) == refusal("In 'config': Could not find 'model/caf\u00e9' (model/caf\\xe9) (options: "
                                  "cafe\u0301 (cafe\\u0301), gemma3, llama3.2)")


VERDICT = "from typing import Literal\n\nfrom pydantic import BaseModel\n\n\nclass Verdict(BaseModel):\n" \
          "    grade: Literal['si\u0301', 'no']\n"
"""A judge's response class whose grade `sí` is written decomposed (NFD)."""


def test_a_judges_grades_listed_beside_scores_in_another_unicode_form_tell_them_apart(tmp_path):
    """Before: `scores must give each value of field 'grade' (no, sí) a number: missing sí; not values of it: sí`."""
    files = {"tasks.yml": TASK + "  judge: v\n", "custom_response.py": VERDICT,
             "judges.yml": "- name: v\n  rubric: 'grade {response}'\n  format: Verdict\n  score: grade\n"
                           "  scores: {s\u00ed: 1, 'no': 0}\n"}
    assert ended(dry_run(tmp_path, files, "judge.model=j")) == refusal(
        "in 'judges.yml': judges[0].scores: scores must give each value of field 'grade' (si\u0301 (si\\u0301), no) "
        "a number: missing si\u0301 (si\\u0301); not values of it: s\u00ed (s\\xed)")
