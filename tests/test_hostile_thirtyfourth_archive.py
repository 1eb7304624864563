"""Hostile input, thirty-fourth pass, the archive and audit side (what the thirty-third left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

1. an exported cell beginning with white space (a space, a tab after it, a line break, a no-break space) before
   `=`, `+`, `-` or `@`, or with a full-width `＝`, `＋`, `－`, `＠` (what an East Asian input method types): written
   as it was, where Excel, Sheets and Numbers skip the white space and an East Asian spreadsheet takes the full-width
   sign for a formula's; a cell whose first character past white space is a formula's sign in its compatibility form
   (NFKC) is written after a ' (`audit.export.formula_like`)
"""
from __future__ import annotations

import pytest

from tests.helpers.archives import synthetic_run
from tests.helpers.p34_archive import exported_references

# -- what the thirty-third pass left -----------------------------------------------------------------------------------


@pytest.mark.parametrize("reference", [" =1+1", " \t@SUM(A1)", "\n=1+1", "\u00a0+1", "\u3000-1+2", "＝1+1", "＋1",
                                       "－1", "＠SUM(A1)", " ＝1+1", "﹦1+1"])
def test_an_exported_cell_a_spreadsheet_reads_as_a_formula_past_white_space_or_in_full_width_is_escaped(
        tmp_path, reference):
    synthetic_run(tmp_path / "r", [1], reference=reference)
    assert exported_references(tmp_path, "r") == ["'" + reference] * 2


@pytest.mark.parametrize("reference", ["a =1", " a", "x\n=1+1", "'=1", "1-2"])
def test_an_exported_cell_no_spreadsheet_reads_as_a_formula_is_written_as_it_is(tmp_path, reference):
    synthetic_run(tmp_path / "r", [1], reference=reference)
    assert exported_references(tmp_path, "r") == [reference] * 2
