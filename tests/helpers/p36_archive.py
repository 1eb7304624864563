"""Runs for the thirty-sixth hostile pass of the archive side."""

from __future__ import annotations
