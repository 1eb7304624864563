"""The fortieth hostile pass of issue 19, the side of what goes in: the item the thirty-ninth pass left, then a
fresh pass. /work/notes/p40/result-input.md has the whole list, what held and what was left.

Fixed:
1. Two runs whose benchmark names (task.name, or any config value) differ only in their Unicode form (`café` as one
   character and as `e` and a combining accent, a macOS folder's name) said apart by `compare` (audit.inputs): it
   printed `config task.name: "café" -> "café"`, a difference that reads as none.
"""

from __future__ import annotations

import pytest

from tests.helpers.p40_input import config_lines


@pytest.mark.parametrize(("baseline", "run", "said"), [
    ("caf\u00e9", "cafe\u0301", '"caf\\u00e9" -> "cafe\\u0301" (one text in two Unicode forms, which print alike)'),
    ("caf\u00e9", "cafe", '"caf\u00e9" -> "cafe"')])
def test_config_values_in_two_unicode_forms_are_told_apart_by_compare(baseline, run, said):
    """Before: `config task.name: "café" -> "café"`."""
    assert config_lines({"task.name": baseline}, {"task.name": run}) == [
        "inputs that differ:", f"  config task.name: {said}"]
