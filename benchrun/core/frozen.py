"""The base of every archived record and compiled object: immutable, no unknown fields."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Base of every archived record: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)
