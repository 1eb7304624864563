"""The names a run's answers gave their model, as verify's one pass reads them, against run.json's `answers_as` (the
name the server answered the preflight's probe as, or the run's answers did): a model no answer came from is said."""

from __future__ import annotations

from benchrun.archive.reader import Run
from benchrun.core.layout import RUN
from benchrun.core.records import ResponseRecord
from benchrun.core.recordvalues import Served, same_model_name
from benchrun.core.text import one_line

SHOWN = 3
"""How many of the answers' names a finding shows."""


class AnswerNames:
    """The model names the answers a run asked itself gave (one carried over by a retry, or taken from the response
    cache, was asked by another run)."""

    def __init__(self) -> None:
        self.served = Served()

    def response(self, response: ResponseRecord) -> None:
        if response.carried_from is None and response.cached_from is None:
            self.served.note(response)

    def contradiction(self, run: Run) -> tuple[str, str] | None:
        """run.json's `answers_as` where no answer the run asked gave that name (and some gave one), as (file, why)."""
        said, names = run.info.identity.get("answers_as"), sorted(self.served.names)
        if not isinstance(said, str) or not names or any(same_model_name(said, name) for name in names):
            return None
        shown = " or ".join(repr(one_line(name, 80)) for name in names[:SHOWN])
        more = f" (and {len(names) - SHOWN} other names)" if len(names) > SHOWN else ""
        return RUN, (f"answers_as is {one_line(said, 80)!r}, but every answer of the run names its model {shown}"
                     f"{more}: the model that answered is not the one run.json names")
