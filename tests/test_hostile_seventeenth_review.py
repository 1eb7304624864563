r"""Hostile input, seventeenth pass, the review side: the code the sixteenth pass added, attacked; the cases found
bad, each with the rule it now obeys.

- `exact_match` on an answer that is a JSON number with a fraction or an exponent (`2.00000000000000001`,
  `1e-400`, `18446744073709551616.0`): the sixteenth pass compared numbers by their exact value, but the answer's JSON
  was read with floats first, so `2.00000000000000001` matched 2, `1e-999999999` matched 0, and the right answer
  `18446744073709551616.0` did not match 2**64. Now the answer's JSON numbers are read as written
  (`compiler.scoring.exact_match`, through `core.text.json_value(parse_float=)`)
"""

from __future__ import annotations

import json

import pytest

from benchrun.compiler.scoring import exact_match


@pytest.mark.parametrize(("response", "reference", "matched"), [
    ('{"answer": 2.00000000000000001}', 2, 0),
    ("1e-999999999", 0, 0),
    ("1e-999999999", "1e-999999999", 1),
    ("18446744073709551616.0", 2**64, 1),
    ('{"answer": 18446744073709551617.0}', 2**64, 0),
    ("1e999999999999999999999", "1e999999999999999999999", 1),
    ("1e999999999999999999999", 1, 0),
    (json.dumps({"answer": 1e16}), 10**16, 1),
    ('{"answer": 0.1}', "0.1", 1),
])
def test_exact_match_reads_an_answers_json_numbers_as_written(response, reference, matched):
    assert exact_match(response, reference) == matched
