"""A task's data files: values from JSONL or CSV (`values_file:`, a folder's values.jsonl), few-shot examples from
JSONL (`fewshot: {file, n, seed}`), and the seeded draws of `sample:` and of examples."""

from __future__ import annotations

import hashlib
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from pydantic import BaseModel, ConfigDict

from benchrun.compiler import schemas
from benchrun.compiler.files import REFERENCE, Bounds, check_names, inside, present, read_csv, read_jsonl
from benchrun.core.errors import TaskError
from benchrun.core.manifest import Scalar, canonical_json
from benchrun.core.text import counted, name_said, names_listed
from benchrun.core.unicodeforms import other_form

JSONL = (".jsonl", ".ndjson")
CSV = (".csv",)


class Example(BaseModel):
    """A few-shot turn as written: the user's text, or values for the task's template; the assistant's answer; and
    where it was written (file and key), for errors."""

    model_config = ConfigDict(frozen=True)

    user: str | None = None
    values: dict[str, Scalar] | None = None
    assistant: str
    file: str
    key: str


class Draw(BaseModel):
    """`sample: {n, seed}`: n samples drawn with seed."""

    model_config = ConfigDict(frozen=True)

    n: int
    seed: int


Where = dict[str, str | None]
"""File, task and key of the setting that names a data file (`tasks[0].values_file` in tasks.yml)."""


def data_path(bench: Path, rel: str, named_at: Where) -> Path:
    """The data file `rel` (relative to the benchmark), refused when missing or outside the benchmark."""
    if Path(rel).is_absolute():
        raise TaskError(f"'{rel}' is an absolute path: name a file inside the benchmark, relative to it", **named_at)
    path = bench / rel
    if not present(bench, path):
        other = other_form(path)  # `café.jsonl` given, `cafe\u0301.jsonl` there: two names printed alike
        raise TaskError(f"file '{rel}' is missing (paths are relative to the benchmark directory"
                        f"{_unexpanded(rel) or _in_task_folder(bench, rel, named_at)})"
                        f"{f'; {other}' if other else ''}", **named_at)
    inside(bench, path)
    return path


UNEXPANDED = ((re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://"), "benchrun fetches no URL: download the file into it"),
              (re.compile(r"~"), "~ is not expanded, and a file of the home directory is outside the benchmark"),
              (re.compile(r".*\$\{?[A-Za-z_]"), "environment variables are not expanded: name the file as it is"))
"""What a data file's path may be written as that is read as it is written, relative to the benchmark: a URL, a home
directory's `~/`, a `$VAR`, each said as what it is where the file is missing (`~/d.jsonl` was only `missing`)."""


def _unexpanded(rel: str) -> str:
    """Why `rel`, a missing data file's path, is not read as it may have been meant; empty when it reads as a path."""
    return next((f": {why}" for form, why in UNEXPANDED if form.match(rel)), "")


def _in_task_folder(bench: Path, rel: str, named_at: Where) -> str:
    """Of a missing data file named by a folder task's info.yml, the path to give where the task's folder holds it
    (`shots.jsonl` beside info.yml is `tasks/t/shots.jsonl`); empty otherwise."""
    folder = Path(named_at.get("file") or ".").parent
    beside = folder / rel
    return f": give '{beside.as_posix()}', the file in the task's folder" if folder != Path(".") and \
        present(bench, bench / beside) else ""


_READ: dict[tuple[str, str, Bounds], Any] | None = None
"""While a benchmark's tasks are read (`read_once`): what each data file gave, by file, so a file many tasks name is
read once (a 1 KB tasks.yml naming one 18 MB file 20 times took 70 s and 1.2 GB before it was refused)."""


@contextmanager
def read_once() -> Iterator[None]:
    """Within the block, each data file is parsed once however many tasks name it."""
    global _READ
    _READ = {}
    try:
        yield
    finally:
        _READ = None


def _once(kind: str, path: Path, bounds: Bounds, read: Callable[[], Any]) -> Any:
    """What `read()` gives for the data file `path`, read once within `read_once` (`kind`: values or examples)."""
    if _READ is None:
        return read()
    key = (kind, str(path.resolve()), bounds)
    if key not in _READ:
        _READ[key] = read()
    return _READ[key]


def read_values(bench: Path, rel: str, named_at: Where, bounds: Bounds) -> dict[str, list[Any]]:
    """The columns of a values file (JSONL by its suffix .jsonl or .ndjson, CSV by .csv), the reference column
    among them; every record has the same keys. Each call has a mapping of its own (its task takes the reference
    column out), the columns shared."""
    path, task = data_path(bench, rel, named_at), named_at["task"] or ""
    if not rel.endswith((*CSV, *JSONL)):
        raise TaskError(f"not a values file: name it .jsonl, .ndjson or .csv ('{rel}')", **named_at)
    return dict(_once("values", path, bounds, lambda: _columns(path, rel, task, bounds)))


def _columns(path: Path, rel: str, task: str, bounds: Bounds) -> dict[str, list[Any]]:
    if rel.endswith(CSV):
        header, rows = read_csv(path, rel, task, bounds)
        if len(rows) > bounds.records:
            raise TaskError(f"more than {counted(bounds.records, 'record')} (task.max_samples)", file=rel, task=task)
        return {name: [row[i] for row in rows] for i, name in enumerate(header)}
    columns: dict[str, list[Any]] = {}
    for number, record in read_jsonl(path, rel, task, bounds):
        _add_record(columns, record, rel, task, number, bounds.cell)
    if not columns:
        raise TaskError("empty values: no records", file=rel, task=task)
    return columns


def _add_record(columns: dict[str, list[Any]], record: Any, rel: str, task: str, number: int, max_cell: int) -> None:
    where = {"file": rel, "task": task, "key": f"line {number}"}
    if not isinstance(record, dict) or not record:
        raise TaskError("a record must be a JSON object of values, as {\"a\": 2, \"reference\": 5}", **where)
    if not columns:
        check_names(list(record), rel, task, number)
        columns.update({name: [] for name in record})
    missing = [name for name in columns if name not in record]
    extra = [name for name in record if name not in columns]
    if missing or extra:
        told = f"no {name_said(missing[0])}" if missing else f"{name_said(extra[0])} is not a column"
        raise TaskError(f"{told} (the first record's keys: {names_listed(columns)})", **where)
    for name, value in record.items():
        _check_value(name, value, max_cell, where)
        columns[name].append(value)


def _check_value(name: str, value: Any, max_cell: int, where: dict[str, str]) -> None:
    """A record's value: a number, a string or a bool, or for the reference a list of them, one at least (`[]` and
    `[[1]]` were said to be 'a list', which the reference may be)."""
    listed = name == REFERENCE and isinstance(value, list)
    if listed and not value:
        raise TaskError(f"'{name}' is an empty list: a list of acceptable answers holds one at least", **where)
    for item in value if listed else [value]:
        if not isinstance(item, (str, int, float)):  # bool is an int
            said = f"'{name}' holds {_json_type(item)}" if listed else f"'{name}' is {_json_type(item)}"
            raise TaskError(f"{said}: a value must be a number, a string or a bool"
                            + (" (a reference may be a list of them)" if name == REFERENCE else ""), **where)
        if isinstance(item, str) and len(item) > max_cell:
            raise TaskError(f"'{name}' is longer than task.max_prompt_chars ({max_cell:,} characters)", **where)


def _json_type(value: Any) -> str:
    return {type(None): "null", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def draw(keys: Sequence[str], n: int, seed: int) -> list[int]:
    """The indices of `n` of `keys`, in order: those whose sha256 of seed and key ranks lowest (the same seed draws
    the same keys on any machine, and a key added to the list leaves the others' ranks alone)."""
    ranked = sorted(range(len(keys)), key=lambda i: (hashlib.sha256(f"{seed}\0{keys[i]}".encode()).digest(), i))
    return sorted(ranked[:n])


def read_examples(bench: Path, spec: dict[str, Any], named_at: Where, bounds: Bounds) -> tuple[Example, ...]:
    """`fewshot: {file, n, seed}` (`named_at` the `fewshot` key): n examples of a JSONL file, the first n (seed
    null or absent) or n drawn with the seed; every example when n is absent."""
    rel, task = spec["file"], named_at["task"] or ""
    key = named_at["key"]
    path = data_path(bench, rel, {**named_at, "key": f"{key}.file"})
    if not rel.endswith(JSONL):
        raise TaskError(f"not an examples file: name it .jsonl or .ndjson ('{rel}')", **named_at)
    lines = _once("examples", path, bounds, lambda: list(read_jsonl(path, rel, task, bounds)))
    if not lines:
        raise TaskError("no examples: a turn per line, as {\"user\": ..., \"assistant\": ...}", file=rel, task=task)
    for number, line in lines:
        schemas.check("tasks.schema.json#/$defs/turn", line, TaskError, file=rel, root=f"line {number}",
                      task_of=lambda _: task)
    n, seed = spec.get("n", len(lines)), spec.get("seed")
    if n > len(lines):
        raise TaskError(f"n is {n:,} but '{rel}' has {counted(len(lines), 'example')}", **{**named_at, "key": f"{key}.n"})
    chosen = range(n) if seed is None else draw([canonical_json(line).decode() for _, line in lines], n, seed)
    return tuple(Example(**lines[i][1], file=rel, key=f"line {lines[i][0]}") for i in chosen)


def inline_examples(turns: list[dict[str, Any]], named_at: Where) -> tuple[Example, ...]:
    """`fewshot: [{user, assistant}, ...]` as written in a task (checked by the schema)."""
    return tuple(Example(**turn, file=named_at["file"] or "", key=f"{named_at['key']}[{i}]")
                 for i, turn in enumerate(turns))
