"""The thirty-fourth hostile pass of issue 19, the side of what goes in: the items the thirty-third pass left, then a
fresh pass. /work/notes/p34/result-input.md has the whole list, what held and what was left.

Fixed:
1. A few-shot example's value the template never uses (`{values: {a: 2, zz: 3}}`) refused naming it, with the name
   it likely misspells (`did you mean 'a'?`) or the names the template uses (compiler.examplevalues): an example's
   values fill its template alone and are kept nowhere, where a sample's unused values are its metadata.
2. A task file's value of the wrong kind said in JSON's words (`sample.seed: true is not of type 'integer'`, not
   Python's `True`, `{'a': 1}`) where jsonschema's message starts with it (compiler.schemas._json_spelled).
"""

from __future__ import annotations

import pytest

from tests.helpers.p29_input import dry_run
from tests.helpers.p30_input import ended, refusal
from tests.helpers.p34_input import SHOT_TASK


@pytest.mark.parametrize(("values", "name", "hint"), [
    ("{a: 2, zz: 3}", "zz", "it uses a"),
    ("{aa: 2}", "aa", "did you mean 'a'?")])
def test_an_examples_value_the_template_never_uses_is_refused(tmp_path, values, name, hint):
    """Before: `{a: 2, zz: 3}` taken, zz kept nowhere; `{aa: 2}` said as `no value 'a', which the template uses`."""
    assert ended(dry_run(tmp_path, {"tasks.yml": SHOT_TASK.format(values=values)})) == refusal(
        f"in 'tasks.yml': task 't': tasks[0].fewshot[0].values: '{name}' is a value the template never uses "
        f"({hint}), and an example's values fill its template alone (kept nowhere else): leave it out")


def test_an_examples_values_the_template_uses_are_taken(tmp_path):
    done = dry_run(tmp_path, {"tasks.yml": SHOT_TASK.format(values="{a: 2}")})
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(("given", "said"), [
    ("true", "true"),
    ("false", "false"),
    ("{a: 1}", '{"a": 1}'),
    ("[1, x]", '[1, "x"]')])
def test_a_task_files_value_of_the_wrong_kind_is_said_in_jsons_words(tmp_path, given, said):
    """Before: `True is not of type 'integer'`, `{'a': 1} is not of type 'integer'` (Python's spelling)."""
    tasks = f"- name: t\n  template: say {{a}}\n  values: {{a: [1, 2]}}\n  reference: ['1', '2']\n" \
            f"  sample: {{n: 1, seed: {given}}}\n"
    assert ended(dry_run(tmp_path, {"tasks.yml": tasks})) == refusal(
        f"in 'tasks.yml': task 't': tasks[0].sample.seed: {said} is not of type 'integer'")
