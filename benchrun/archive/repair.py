"""Checking an unfinished run's records before anything is appended to them (resume), and repairing them.

Every line must match its digest in records.sha256 and belong to the manifest: one response per answer (sample id
and repeat) at most, score lines only for recorded responses, each of a task's scorers once. What follows the last
digest is what was being recorded when the process died (a half-written line, or whole lines not yet committed: one
response, or the judge calls and score lines of the answers graded by then): it is cut off quietly when it looks like
exactly that, and those samples asked or graded again. Anything
else (an edited, duplicated, reordered or foreign line, a written line gone) is a problem: refused, or with `force`
dropped, the files rewritten from the lines that remain, and every dropped line named in the run's history.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Container, Iterable, Iterator

from benchrun.archive.atomic import write_atomic
from benchrun.archive.dirlock import own_file
from benchrun.archive.jsononce import python_json
from benchrun.archive.ledger import (
    Checked,
    Digests,
    Mismatch,
    aligned,
    check_file,
    digest_lines,
    lines_of,
    read_digests,
)
from benchrun.archive.lineagefields import Made
from benchrun.core.errors import writing
from benchrun.core.layout import DIGESTS, JUDGEMENTS, RESPONSES, SCORES
from benchrun.core.manifest import Manifest, TaskEntry
from benchrun.core.records import RunInfo, answer_name
from benchrun.core.text import NotJSON, once_each

Key = tuple[str, int]
"""An answer: (sample id, repeat)."""
NAMING = ("id", "repeat", "scorer", "judge", "judge_repeat")
"""What a record line names its answer, scorer and judge call by: never a JSON array or object, which no writer
writes there (and which no set of names can hold)."""
REPEATS = ("repeat", "judge_repeat")
"""The names of NAMING that are whole numbers."""


@dataclass
class Repair:
    """What checking the records found, and what repairing them does."""

    problems: list[Mismatch] = field(default_factory=list)
    digests: Digests = field(default_factory=Digests)
    checked: dict[str, Checked] = field(default_factory=dict)
    bad: dict[str, set[int]] = field(default_factory=dict)
    """Record file -> numbers of committed lines that do not belong (dropped by a forced repair)."""
    regrade: set[Key] = field(default_factory=set)
    """Answers with no score lines yet: graded again."""

    @property
    def cut(self) -> dict[str, int]:
        """Record file -> lines of the uncommitted tail cut off."""
        return {name: found.tail_lines for name, found in self.checked.items() if found.tail_lines}

    def note(self, dropped: dict[str, list[int]]) -> dict[str, Any]:
        """What resume records in run.json's history."""
        return {"tail_lines_cut": self.cut, "dropped_lines": dropped, "problems": [str(p) for p in self.problems],
                "regraded": [answer_name(*key) for key in sorted(self.regrade)]}


def check(run_dir: Path, manifest: Manifest, info: RunInfo, digests: Digests | None = None,
          checked: dict[str, Checked] | None = None) -> Repair:
    """Check the record files against records.sha256, the manifest and run.json's `info` (what the run was made from:
    `lineagefields`; see the module docstring); `digests` and `checked`, when given, are records.sha256 and the files
    already checked against it (not read again)."""
    digests = digests or read_digests(run_dir)
    repair = Repair(problems=list(digests.problems), digests=digests)
    for name in manifest.record_files:
        found = (checked or {}).get(name) or check_file(run_dir, name, digests.lines.get(name, []))
        repair.checked[name] = found
        repair.problems += found.problems
        if not left_by_a_writer(name, found, manifest):
            whole = found.tail_whole
            repair.problems.append(Mismatch(name, found.written + 1, f"{whole} line{'s' * (whole != 1)} "
                                                                     f"after line {found.written} not written by "
                                                                     "the run"))
    _check_meaning(repair, manifest, Made.of(info, manifest))
    return repair


def left_by_a_writer(name: str, found: Checked, manifest: Manifest) -> bool:
    """Whether the lines of `name` beyond its last digest are what a writer leaves mid-commit, stopped there (killed)
    or writing now: none, a last line cut short, or whole lines a kill cuts off (`_cut_off`); never more than is
    held of them (a tail of millions of lines)."""
    whole = [line for line in found.tail if line.endswith(b"\n")]
    return found.tail_held and (not whole or _cut_off(name, whole, manifest))


def _cut_off(name: str, lines: list[bytes], manifest: Manifest) -> bool:
    """Whether uncommitted lines look like what a kill cut off: one response, or the judge calls or score lines of
    answers of the manifest (one write holds those of every grading done by then), each at most its task's."""
    tasks = {s.id: s.task for s in manifest.samples}
    records = []
    for line in lines:  # the first line no writer wrote ends the search
        if (record := _json(line)) is None or _key(record)[0] not in tasks:
            return False
        records.append(record)
    if name == RESPONSES:
        return len(records) == 1
    per_answer = Counter(_key(record) for record in records)
    return all(n <= _lines_per_answer(name, manifest.task(tasks[key[0]]), manifest)
               for key, n in per_answer.items())


def _lines_per_answer(name: str, task: TaskEntry, manifest: Manifest) -> int:
    return len(task.judges) * manifest.judge_calls if name == JUDGEMENTS else len(task.score_names)


def _check_meaning(repair: Repair, manifest: Manifest, made: Made) -> None:
    """Committed lines must belong: known samples, one response each, score lines (and judge calls) of recorded
    responses, each once, a sample's score lines complete, lineage fields the run's kind gives (`made`)."""
    tasks = {s.id: s.task for s in manifest.samples}
    expected = {t.name: set(t.score_names) for t in manifest.tasks}
    answered: dict[Key, int] = {}
    groups: dict[Key, dict[str, int]] = {}

    def response(number: int, record: dict[str, Any]) -> str | None:
        key = _key(record)
        if key[0] not in tasks:
            return f"names sample {key[0]!r}, which the manifest does not have"
        if key[1] not in range(manifest.k):
            return f"names repeat {key[1]!r} of {key[0]!r}; the run asks {manifest.k} per sample"
        if key in answered:
            return f"repeats the response to {answer_name(*key)!r} (line {answered[key]})"
        answered[key] = number
        return None

    def score(number: int, record: dict[str, Any]) -> str | None:
        key, scorer = _key(record), record.get("scorer")
        if key not in answered:
            return f"scores {answer_name(*key)!r}, which has no response"
        group = groups.setdefault(key, {})
        if scorer not in expected[tasks[key[0]]]:
            return f"has scorer {scorer!r}, not one of task {tasks[key[0]]!r}'s"
        if scorer in group:
            return f"repeats scorer {scorer!r} of {answer_name(*key)!r} (line {group[scorer]})"
        group[scorer] = number
        return None

    _vet(repair, RESPONSES, response, (tasks, made))
    _vet(repair, SCORES, score, (tasks, made))
    if manifest.judges:
        calls = JudgeCalls(manifest)
        _vet(repair, JUDGEMENTS, lambda number, record: calls.problem(
            number, _key(record), record.get("judge"), record.get("judge_repeat", 0), answered), (tasks, made))
    incomplete = {key for key, group in groups.items() if group.keys() != expected[tasks[key[0]]]}
    for key in sorted(incomplete, key=lambda k: min(groups[k].values())):
        _problem(repair, SCORES, min(groups[key].values()),
                 f"starts the incomplete score lines of {answer_name(*key)!r}")
        repair.bad[SCORES].update(groups[key].values())
    repair.regrade = (answered.keys() - groups.keys()) | incomplete


class JudgeCalls:
    """The judge calls that belong to a grading with `manifest`: a call of one of the task's judges, one of the
    judge model's repeats, on an answer graded, each once (a run's, vetted by `check`; a rejudged rescore's, by
    verify)."""

    def __init__(self, manifest: Manifest):
        self.tasks = {s.id: s.task for s in manifest.samples}
        self.judges = {t.name: set(t.judges) for t in manifest.tasks}
        self.repeats = manifest.judge_calls
        self.made: dict[tuple[Key, Any, Any], int] = {}

    def problem(self, number: int, key: Key, judge: Any, j: Any, answered: Container[Key]) -> str | None:
        """Why line `number`, judge `judge`'s call `j` on answer `key`, does not belong; None when it does."""
        if key not in answered:
            return f"judges {answer_name(*key)!r}, which has no response"
        if judge not in self.judges[self.tasks[key[0]]] or j not in range(self.repeats):
            return f"is judge {judge!r}'s call {j!r}, not one of task {self.tasks[key[0]]!r}'s"
        if (key, judge, j) in self.made:
            return f"repeats judge {judge!r}'s call {j} on {answer_name(*key)!r} (line {self.made[key, judge, j]})"
        self.made[key, judge, j] = number
        return None


def _vet(repair: Repair, name: str, problem_of: Callable[[int, dict[str, Any]], str | None],
         run: tuple[dict[str, str], Made]) -> None:
    """Each committed line of record file `name` through `problem_of`; a line it faults, one giving another task than
    its sample's (`tasks`: sample id -> task), or a lineage field its run's kind does not give (`made`), is a problem,
    and bad."""
    tasks, made = run
    bad = repair.bad.setdefault(name, set())
    for number, (record, why) in _committed(repair.checked[name], repair.digests.lines.get(name, [])):
        what = problem_of(number, record)  # of every line: it keeps count of what the file holds
        what = why or _other_task(record, tasks) or made.fault(name, number, record) or what
        if what is not None:
            _problem(repair, name, number, what)
            bad.add(number)


def _other_task(record: dict[str, Any], tasks: dict[str, str]) -> str | None:
    """Why a line of a sample of the manifest is not that sample's: it gives another task (which readers tally it
    under, as the summary's lines are)."""
    sample = record.get("id")
    if not isinstance(sample, str) or sample not in tasks or (task := record.get("task")) == tasks[sample]:
        return None
    return f"gives task {task!r}, where its sample {sample!r} is of task {tasks[sample]!r}"


def _problem(repair: Repair, name: str, number: int, what: str) -> None:
    repair.problems.append(Mismatch(name, number, f"line {number} {what}"))


def _committed(found: Checked, digests: list[str]) -> Iterator[tuple[int, tuple[dict[str, Any], str | None]]]:
    """(number, (record, why readers read it otherwise)) of the lines that stay: the committed ones, or with problems
    those that follow the written sequence."""
    if found.problems:
        numbered: Iterable[tuple[int, bytes]] = aligned(found.path, digests)
    else:
        numbered = zip(range(1, found.committed + 1), lines_of(found.path))
    for number, line in numbered:
        yield number, _once(line)


def _once(line: bytes) -> tuple[dict[str, Any], str | None]:
    """A committed line's JSON object as Python reads it ({} when it is none), and why readers may each read it as
    another or not at all: it gives a key twice in one object (`{"closeness": 0, "closeness": 1}`: Python keeps the
    last), or it is no JSON object (what a planted line of 100,000 `[` is to Python's reader too)."""
    try:
        data, why = python_json(line, object_pairs_hook=once_each), None
    except NotJSON as err:
        data, why = python_json(line), f"reads two ways: {err}"
    except ValueError as err:
        return {}, f"is not JSON: {err}"
    if not isinstance(data, dict):
        return {}, "is no JSON object"
    return ({}, misnamed) if (misnamed := _misnamed(data)) else (data, why)


def _key(record: dict[str, Any]) -> Key:
    """The answer a record line belongs to (a line from before repeats has none: repeat 0)."""
    return record.get("id"), record.get("repeat", 0)


def _json(line: bytes) -> dict[str, Any] | None:
    try:
        data = python_json(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) and not _misnamed(data) else None


def _misnamed(data: dict[str, Any]) -> str | None:
    """Why a record line names no answer, scorer or judge call as a writer does (`NAMING`); None when it does. A
    repeat is a whole number as written (`0.0` and `true` name repeats 0 and 1 to Python, and no writer writes them)."""
    found = next((key for key in NAMING if isinstance(data.get(key), (list, dict))), None)
    if found is not None:
        kind = "array" if isinstance(data[found], list) else "object"
        return f"gives its {found} as a JSON {kind}, which names nothing"
    counted = next((key for key in REPEATS if key in data and type(data[key]) is not int), None)
    if counted is None:
        return None
    return f"gives its {counted} as {json.dumps(data[counted])}, where a writer gives a whole number"


def apply(run_dir: Path, repair: Repair, manifest: Manifest,
          ready: Callable[[], None] | None = None) -> dict[str, list[int]]:
    """Make the files hold only what belongs; the numbers of the committed lines dropped, by file.

    Without problems only uncommitted tails go: the files are cut short, which a kill cannot leave half done.
    With problems (a forced resume) the files are rewritten, with new digests, from the lines that follow the
    written sequence and belong, less the score lines of samples left incomplete (graded again). `ready` is called
    just before the files are cut, and before each is renamed over when rewritten: the check of a lock's holder that
    the run is still its own (a resume stopped past its lease since it checked the records, its run taken over and
    appended to meanwhile, would cut the new writer's lines off)."""
    for path in (*(found.path for found in repair.checked.values()), run_dir / DIGESTS):
        own_file(path)  # each of them, before any is cut
    if not repair.problems:
        if ready is not None:
            ready()
        for found in repair.checked.values():
            _truncate(found.path, found.committed_size)
        _truncate(run_dir / DIGESTS, read_digests(run_dir).committed_size)
        return {}
    good = {name: [(n, line) for n, line in aligned(run_dir / name, repair.digests.lines.get(name, []))
                   if n not in repair.bad.get(name, set())] for name in manifest.record_files}
    answered = {_key(_json(line) or {}) for _, line in good[RESPONSES]}
    good[SCORES] = _complete_groups(good[SCORES], answered, manifest)
    _rewrite(run_dir, {name: [line for _, line in lines] for name, lines in good.items()}, ready)
    dropped = {}
    for name, lines in good.items():
        kept = {n for n, _ in lines}
        written = repair.checked[name].written
        dropped[name] = [n for n in range(1, written + 1) if n not in kept]
    return {name: numbers for name, numbers in dropped.items() if numbers}


def _complete_groups(lines: list[tuple[int, bytes]], answered: set[Key],
                     manifest: Manifest) -> list[tuple[int, bytes]]:
    """The score lines of the answers whose every scorer has exactly one line."""
    tasks = {s.id: s.task for s in manifest.samples}
    expected = {t.name: sorted(t.score_names) for t in manifest.tasks}
    groups: dict[Key, list[str]] = {}
    for _, line in lines:
        record = _json(line) or {}
        groups.setdefault(_key(record), []).append(record.get("scorer"))
    complete = {key for key, scorers in groups.items()
                if key in answered and sorted(scorers) == expected[tasks[key[0]]]}
    return [(n, line) for n, line in lines if _key(_json(line) or {}) in complete]


def _truncate(path: Path, size: int) -> None:
    if path.is_file() and path.stat().st_size != size:
        with writing(path):
            os.truncate(path, size)


def _rewrite(run_dir: Path, keep: dict[str, list[bytes]], ready: Callable[[], None] | None) -> None:
    digests = [digest_lines(name, keep[name]) for name in keep]
    for name in keep:
        write_atomic(run_dir / name, b"".join(keep[name]), ready=ready)
    write_atomic(run_dir / DIGESTS, b"".join(digests), ready=ready)
