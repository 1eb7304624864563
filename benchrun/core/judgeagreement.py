"""What summary.json says of a run's judges: how each agrees with itself over its repeats and with the 0/1
scorers."""

from __future__ import annotations

from pydantic import Field

from benchrun.core.frozen import Frozen
from benchrun.core.metrictypes import Tally


class ScorerAgreement(Frozen):
    """A judge against a 0/1 scorer, on the answers both graded (the judge's verdict: the majority of its grades)."""

    answers: Tally
    agreement: float
    """The share of answers on which the judge's verdict and the scorer's value agree."""
    kappa: float | None
    """Cohen's kappa: the agreement beyond chance; None when chance alone agrees on every answer."""


class JudgeAgreement(Frozen):
    """How a judge agrees with itself over its repeats and with the 0/1 scorers of the tasks it grades."""

    repeats: Tally
    answers: Tally
    """Answers with a grade from every repeat."""
    self_agreement: float | None
    """With repeats: the share of answers whose grades all agree; None with one call per answer."""
    kappa: float | None
    """With repeats: Fleiss' kappa of the grades over the repeats; None with one call, or when undefined."""
    with_scorers: dict[str, ScorerAgreement] = Field(default_factory=dict)
    """Each 0/1 metric of the tasks the judge grades -> the agreement with it (a judge of 0/1 grades only)."""
