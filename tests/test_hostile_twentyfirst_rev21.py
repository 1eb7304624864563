"""The twenty-first hostile pass against this pass's own merged code (compiler.scoring's numbers, bounds, patterns,
the cache key, summaries' new counts, execute2's preflight).

Found and fixed:
- A number written with the minus sign as typeset (U+2212, `−5`, as Wikipedia and many models write it): contains
  found the reference 5 in the answer `it is −5 degrees` (the `5` after a sign it did not know), and exact_match and
  contains scored the answer `−5` 0 against the reference -5 (and `-5` against a values file's `−5`). The typeset minus
  is read as `-` wherever scoring reads a number (compiler.scoring's number_value, NUMERAL). An IntAnswer task's
  reference `−5` was so refused at compile as no integer (compiler.answerable reads it through number_value).
- A number written with a thousands separator (`it costs 1,500 dollars`): contains found the references 500 and 1 in
  it (each group read as a number of its own), a wrong answer scored 1. A number in groups of three digits is one
  number, which contains does not read (a thousands separator or a decimal comma: exact_match does not read it
  either); `1,2,3` still writes three numbers (compiler.scoring's NUMERAL, `_numeral`).
- A text reference beginning or ending with a number (`5 km`, `5%`, `Apollo 1`): contains found it in `about 15 km`,
  `it rose -5%`, `Apollo 11` (a text searched as any text), a wrong answer scored 1, where a number reference is found
  only as a whole number since this pass. The number at its edge is not part of a longer one there, as NUMERAL reads
  numbers (compiler.scoring's Held.holds, `_whole_numbers`)."""

from __future__ import annotations

from benchrun.core.errors import EXIT
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.scoredruns import TEXT, scored


def test_a_typeset_minus_is_a_minus(tmp_path):
    rows = ['{"q": "cold", "reference": -5}', '{"q": "warm", "reference": 5}', '{"q": "typeset", "reference": "−5"}']
    files = {"tasks.yml": "- name: t\n  template: 'say {q}'\n  values_file: v.jsonl\n  format: Text\n"
                          "  scorer: [exact_match, contains]\n",
             "v.jsonl": "\n".join(rows) + "\n", "custom_response.py": TEXT}
    assert scored(tmp_path, files, {"cold": "−5", "warm": "it is −5 degrees", "typeset": "-5"}) == [
        ("t:q=cold", {"exact_match": 1}), ("t:q=cold", {"contains": 1}),
        ("t:q=warm", {"exact_match": 0}), ("t:q=warm", {"contains": 0}),
        ("t:q=typeset", {"exact_match": 1}), ("t:q=typeset", {"contains": 1})]


def test_a_typeset_minus_reference_of_an_integer_format_is_taken(tmp_path):
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {q}'\n  values_file: v.jsonl\n"
                                        "  format: IntAnswer\n", "v.jsonl": '{"q": "cold", "reference": "−5"}\n'})
    result = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")


def test_a_number_in_groups_of_three_digits_holds_none_of_its_groups(tmp_path):
    rows = ['{"q": "grouped", "reference": 500}', '{"q": "first", "reference": 1}', '{"q": "listed", "reference": 2}']
    files = {"tasks.yml": "- name: t\n  template: 'say {q}'\n  values_file: v.jsonl\n  format: Text\n"
                          "  scorer: contains\n",
             "v.jsonl": "\n".join(rows) + "\n", "custom_response.py": TEXT}
    answers = {"grouped": "it costs 1,500 dollars", "first": "1,500", "listed": "1,2,3"}
    assert scored(tmp_path, files, answers) == [
        ("t:q=grouped", {"contains": 0}), ("t:q=first", {"contains": 0}), ("t:q=listed", {"contains": 1})]


def test_a_text_reference_ending_in_a_number_is_not_found_in_a_longer_number(tmp_path):
    rows = ['{"q": "far", "reference": "5 km"}', '{"q": "rise", "reference": "5%"}',
            '{"q": "mission", "reference": "Apollo 1"}', '{"q": "near", "reference": "5 km"}']
    files = {"tasks.yml": "- name: t\n  template: 'say {q}'\n  values_file: v.jsonl\n  format: Text\n"
                          "  scorer: contains\n",
             "v.jsonl": "\n".join(rows) + "\n", "custom_response.py": TEXT}
    answers = {"far": "about 15 km", "rise": "it rose -5%", "mission": "Apollo 11", "near": "about 5 km."}
    assert scored(tmp_path, files, answers) == [
        ("t:q=far", {"contains": 0}), ("t:q=rise", {"contains": 0}), ("t:q=mission", {"contains": 0}),
        ("t:q=near", {"contains": 1})]
