"""The thirty-fifth hostile pass of issue 19, the asking side.

1. a format check's detail quoted the values `unevaluatedItems` refuses (`Unevaluated items are not allowed (True, None
   were unexpected)`) and the schemas `oneOf` finds more than one of (`1 is valid under each of {'type': 'number'},
   {'type': 'integer'}`) mid-message in Python's words: each message is rebuilt from the error's own values, in JSON's
   words (`execute.formatcheck.LISTED`, `core.jsonwords.listed`); a value in JSON's words is said by one function for
   the format check and the compiler (`core.jsonwords.respelled`, which `compiler.schemas._json_spelled` and
   `execute.formatcheck.json_words` both use)
"""

from __future__ import annotations

import pytest

from tests.helpers.p35_asking import ONE_OF, UNEVALUATED_ITEMS


@pytest.mark.parametrize(("check", "answer", "detail"), [
    (UNEVALUATED_ITEMS, '[1, true, null]', "Unevaluated items are not allowed (true, null were unexpected)"),
    (UNEVALUATED_ITEMS, '[1, {"a": false}]', 'Unevaluated items are not allowed ({"a": false} was unexpected)'),
    (UNEVALUATED_ITEMS, '[1, "it\'s", "x, y"]', 'Unevaluated items are not allowed ("it\'s", "x, y" were unexpected)'),
    (ONE_OF, "1", '1 is valid under each of {"type": "number"}, {"type": "integer"}'),
    (ONE_OF, "true", 'true is valid under each of {"type": "boolean"}, {"const": true}'),
    (ONE_OF, '"x"', '"x" is valid under each of {"type": "string"}, {"enum": [null, "x"]}'),
])
def test_values_listed_mid_message_are_in_jsons_words(check, answer, detail):
    assert check.problem(answer) == detail
