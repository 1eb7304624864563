"""How far a judge can be trusted, as figures a user can quote: its agreement with itself over its repeats (the share
of answers whose grades all agree, and Fleiss' kappa), and with each 0/1 scorer of the tasks it grades (the share of
answers on which they agree, and Cohen's kappa), accumulated from the records as they are committed.

The kappas are written here: scipy has none, and statsmodels or scikit-learn would be a heavy dependency for a
formula of a few lines (Fleiss 1971; Cohen 1960). They are worked out in fractions, made a float once: in floats a
kappa of exactly chance agreement came out as -3.3e-16, shown `-0.000`, worse than chance."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Iterable

from benchrun.archive.tally import zero_or_one
from benchrun.core.judgeagreement import JudgeAgreement, ScorerAgreement
from benchrun.core.layout import FORMAT_VALID
from benchrun.core.manifest import Manifest
from benchrun.core.records import JudgementRecord, ScoreRecord

Answer = tuple[str, int]
"""(sample id, repeat)"""


def fleiss_kappa(ratings: list[list[float]]) -> float | None:
    """Fleiss' kappa of subjects each rated by the same number of raters (at least two); None when it is undefined
    (fewer than two raters, or every rating in one category)."""
    if not ratings or len(ratings[0]) < 2:
        return None
    n, counts = len(ratings[0]), [Counter(subject) for subject in ratings]
    total = Counter()
    for count in counts:
        total.update(count)
    shares = [Fraction(c, len(ratings) * n) for c in total.values()]
    expected = sum(p * p for p in shares)
    observed = sum(Fraction(sum(c * (c - 1) for c in count.values()), n * (n - 1)) for count in counts) / len(counts)
    return None if expected == 1 else float((observed - expected) / (1 - expected))


def cohen_kappa(pairs: list[tuple[int, int]]) -> float | None:
    """Cohen's kappa of two raters' 0/1 ratings; None when it is undefined (no pairs, or chance agreement 1)."""
    if not pairs:
        return None
    observed = Fraction(sum(a == b for a, b in pairs), len(pairs))
    first, second = Fraction(sum(a for a, _ in pairs), len(pairs)), Fraction(sum(b for _, b in pairs), len(pairs))
    expected = first * second + (1 - first) * (1 - second)
    return None if expected == 1 else float((observed - expected) / (1 - expected))


class Agreement:
    """The judges' grades and the 0/1 scorers' values of the answers they grade, by answer, as records come."""

    def __init__(self, manifest: Manifest):
        self.repeats = manifest.judge.repeats if manifest.judge else 1
        self._judged = {t.name: t.judges for t in manifest.tasks if t.judges}
        self._grades: dict[str, dict[Answer, list[float]]] = {judge.name: {} for judge in manifest.judges}
        self._values: dict[str, dict[str, dict[Answer, float]]] = {judge.name: {} for judge in manifest.judges}
        self._not_binary: set[tuple[str, str]] = set()
        """(judge, metric): a metric not 0/1 on an answer that judge grades (another judge's tasks have no say)."""

    def calls(self, calls: Iterable[JudgementRecord]) -> None:
        for call in calls:
            if call.value is not None:
                self._grades[call.judge].setdefault((call.id, call.repeat), []).append(call.value)

    def score(self, record: ScoreRecord) -> None:
        for judge in self._judged.get(record.task, ()):
            if record.scorer in self._grades:  # a judge's own score: the grades it comes from are counted
                continue
            for metric, value in (record.metrics or {}).items():
                if metric == FORMAT_VALID:  # whether the answer parses, not whether it is right
                    continue
                if not zero_or_one(value):
                    self._not_binary.add((judge, metric))
                self._values[judge].setdefault(metric, {})[record.id, record.repeat] = value

    def summaries(self) -> dict[str, JudgeAgreement]:
        return {judge: self._summary(judge) for judge in self._grades}

    def _summary(self, judge: str) -> JudgeAgreement:
        full = [grades for grades in self._grades[judge].values() if len(grades) == self.repeats]
        repeated = self.repeats > 1 and bool(full)
        verdicts = {answer: _verdict(grades) for answer, grades in self._grades[judge].items()
                    if len(grades) == self.repeats}
        scorers = {metric: _against(verdicts, values) for metric, values in self._values[judge].items()
                   if (judge, metric) not in self._not_binary and None not in verdicts.values()}
        return JudgeAgreement(
            repeats=self.repeats, answers=len(full),
            self_agreement=sum(len(set(g)) == 1 for g in full) / len(full) if repeated else None,
            kappa=fleiss_kappa(full) if repeated else None,
            with_scorers={metric: found for metric, found in scorers.items() if found is not None})


def _verdict(grades: list[float]) -> int | None:
    """A judge's 0/1 verdict on an answer: the majority of its 0/1 grades (a tie is 0); None for grades not 0/1."""
    if not all(zero_or_one(grade) for grade in grades):
        return None
    return int(2 * sum(grades) > len(grades))


def _against(verdicts: dict[Answer, int | None], values: dict[Answer, float]) -> ScorerAgreement | None:
    """A judge's verdicts against a 0/1 scorer's values on the answers both graded."""
    pairs = [(int(verdicts[answer]), int(value)) for answer, value in values.items() if answer in verdicts]
    if not pairs:
        return None
    return ScorerAgreement(answers=len(pairs), agreement=sum(a == b for a, b in pairs) / len(pairs),
                           kappa=cohen_kappa(pairs))
