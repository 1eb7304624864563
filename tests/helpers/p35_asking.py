"""Helpers for the thirty-fifth hostile pass of the asking side."""

from __future__ import annotations

from benchrun.execute.formatcheck import FormatCheck

UNEVALUATED_ITEMS = FormatCheck({"type": "array", "prefixItems": [{"type": "integer"}], "unevaluatedItems": False})
"""A format of one number and nothing after it, closed by unevaluatedItems."""
ONE_OF = FormatCheck({"oneOf": [{"type": "integer"}, {"type": "number"}, {"const": True}, {"type": "boolean"}, {"enum": [None, "x"]},
                                {"type": "string"}]})
"""A format of exactly one of several alternatives, some of which take the same values."""
