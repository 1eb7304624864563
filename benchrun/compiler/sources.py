"""Reading a benchmark directory (list-style `tasks.yml`, folder-style `tasks/<name>/`) into task specs."""

from __future__ import annotations

import csv
import io
import math
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Literal

from pydantic import BaseModel, ConfigDict

from benchrun.compiler import schemas
from benchrun.core.errors import TaskError, reading
from benchrun.core.manifest import Combinations
from benchrun.core.yamlfile import MAX_INT, load_yaml

TASKS_FILE = "tasks.yml"
TASKS_DIR = "tasks"
TOP_FILES = (TASKS_FILE, "custom_scorer.py", "custom_response.py", "judges.yml")
FOLDER_FILES = ("template.txt", "values.csv", "info.yml", "description.txt")
TASK_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
"""A task name, as tasks.schema.json's $defs/name says (a folder task's folder name too)."""
Column = list[Any]
DEFAULT_COMBINATIONS = "tuple"
"""How a task's value lists make samples unless it says: zipped (`combinations`: every combination)."""
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")


class TaskSpec(BaseModel):
    """One task as written by the user, before expansion into samples."""

    model_config = ConfigDict(frozen=True)

    name: str
    source: str
    """The file (list-style) or folder (folder-style) it came from, relative to the benchmark."""
    key: str
    """Where in `source` the task sits, for error messages: `tasks[2]`, or '' for a folder."""
    template: str
    values: dict[str, Column]
    reference: Column | Literal["calculated"]
    value_combinations: Combinations = DEFAULT_COMBINATIONS
    scorers: tuple[str, ...]
    format: str
    description: str | None = None
    judges: tuple[str, ...] = ()
    """The judges (of judges.yml) that grade the task's answers."""

    def where(self, key: str) -> dict[str, str | None]:
        """File, task and key path for an error about `key` (e.g. `name`, `template`, `values.id`, `scorer`)."""
        if self.key:
            return {"file": self.source, "task": self.name, "key": f"{self.key}.{key}"}
        file, folder_key = _folder_place(key)
        return {"file": self.source + file, "task": self.name, "key": folder_key}


def _folder_place(key: str) -> tuple[str, str | None]:
    """Where a folder task keeps the setting `key`: the file (under the folder) and the key in it."""
    head, _, column = key.partition(".")
    if head == "name":  # a folder task is named by its folder
        return "", None
    if head == "template":
        return "/template.txt", None
    if head == "reference":
        return "/values.csv", "column 'reference'"
    if head == "values":
        return "/values.csv", f"column '{column}'" if column else None
    return "/info.yml", key


DEFAULT_SCORER = "exact_match"
DEFAULT_FORMAT = "StringAnswer"


def benchmark_files(bench: Path) -> list[Path]:
    """Every file of the benchmark that benchrun reads; each must resolve inside the benchmark directory (a link to
    a file or folder outside it is refused: a shared benchmark must not send /etc/passwd to a model)."""
    paths = [bench / name for name in TOP_FILES]
    tasks_dir = bench / TASKS_DIR
    if tasks_dir.is_dir():
        for folder in sorted(tasks_dir.iterdir()):
            if folder.is_dir():
                _inside(bench, folder)
                paths += [folder / name for name in FOLDER_FILES]
    found = [path for path in paths if path.is_file()]
    for path in found:
        _inside(bench, path)
    return found


def _inside(bench: Path, path: Path) -> None:
    if not path.resolve().is_relative_to(bench):
        raise TaskError(f"links outside the benchmark directory (to {path.resolve()}); benchrun reads only files "
                        "inside it", file=path.relative_to(bench).as_posix())


def read_tasks(bench: Path, max_cell: int) -> list[TaskSpec]:
    """Every task of the benchmark at `bench`, list-style first, then folders by name; a values.csv cell may hold
    `max_cell` characters (task.max_prompt_chars)."""
    benchmark_files(bench)
    specs = _list_tasks(bench) + _folder_tasks(bench, max_cell)
    if not specs:
        raise TaskError(f"no tasks found: expected {TASKS_FILE} or {TASKS_DIR}/<name>/template.txt",
                        file=str(bench))
    return specs


def _list_tasks(bench: Path) -> list[TaskSpec]:
    path = bench / TASKS_FILE
    if not path.is_file():
        return []
    raw = load_yaml(path, TASKS_FILE)
    schemas.check("tasks", raw, TaskError, file=TASKS_FILE, root="tasks",
                  task_of=lambda p: _name_at(raw, p))
    return [_list_task(item, i) for i, item in enumerate(raw)]


def _name_at(raw: Any, path: list) -> str | None:
    if isinstance(raw, list) and path and isinstance(path[0], int) and isinstance(raw[path[0]], dict):
        name = raw[path[0]].get("name")
        return name if isinstance(name, str) else None
    return None


def _list_task(item: dict, index: int) -> TaskSpec:
    return _checked(TaskSpec(
        name=item["name"], source=TASKS_FILE, key=f"tasks[{index}]", template=item["template"],
        values=item["values"], reference=item.get("reference", "calculated"),
        value_combinations=item.get("value_combinations", DEFAULT_COMBINATIONS),
        scorers=_as_tuple(item.get("scorer", DEFAULT_SCORER)),
        format=item.get("format", DEFAULT_FORMAT), description=item.get("description"),
        judges=_as_tuple(item.get("judge", ())),
    ))


def _checked(spec: TaskSpec) -> TaskSpec:
    """A task whose values and references are finite numbers, strings or bools (a .nan has no JSON and no id)."""
    columns = {f"values.{name}": column for name, column in spec.values.items()}
    if spec.reference != "calculated":
        columns["reference"] = spec.reference
    for key, column in columns.items():
        for number, value in enumerate(column, start=1):
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, float) and not math.isfinite(item):
                    raise TaskError(f"item {number} is {item!r}: a value must be a finite number, a string or a "
                                    "bool", **spec.where(key))
    return spec


def _as_tuple(names: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """A `scorer:` or `judge:` given as one name or a list."""
    return (names,) if isinstance(names, str) else tuple(names)


def _folder_tasks(bench: Path, max_cell: int) -> list[TaskSpec]:
    root = bench / TASKS_DIR
    if not root.is_dir():
        return []
    folders = [d for d in sorted(root.iterdir()) if d.is_dir()]
    for folder in folders:
        if not TASK_NAME.fullmatch(folder.name):
            raise TaskError(f"'{folder.name}' is not a task name (letters, digits, _ . - ; not starting with . or -): "
                            "rename the folder", file=f"{TASKS_DIR}/{folder.name}")
    return [_folder_task(d, f"{TASKS_DIR}/{d.name}", max_cell) for d in folders]


def _folder_task(folder: Path, rel: str, max_cell: int) -> TaskSpec:
    template = _read_text(folder / "template.txt", f"{rel}/template.txt", folder.name)
    info = _read_info(folder, rel)
    header, rows = read_csv(folder / "values.csv", f"{rel}/values.csv", folder.name, max_cell)
    columns = {name: [row[i] for row in rows] for i, name in enumerate(header)}
    reference = columns.pop("reference", None)
    if reference is not None and info.get("reference") == "calculated":
        raise TaskError("reference is 'calculated' but values.csv has a reference column",
                        file=f"{rel}/info.yml", task=folder.name, key="reference")
    description_file = folder / "description.txt"
    description = info.get("description")
    if description_file.is_file():
        description = _read_text(description_file, f"{rel}/description.txt", folder.name).strip()
    return _checked(TaskSpec(
        name=folder.name, source=rel, key="", template=template.rstrip("\n"), values=columns,
        reference=reference if reference is not None else "calculated",
        scorers=_as_tuple(info.get("scorer", DEFAULT_SCORER)),
        format=info.get("format", DEFAULT_FORMAT), description=description,
        judges=_as_tuple(info.get("judge", ())),
    ))


def _read_text(path: Path, rel: str, task: str) -> str:
    if not path.is_file():
        raise TaskError("file is missing", file=rel, task=task)
    try:
        with reading(rel, TaskError, task=task):
            return path.read_text(encoding="utf-8-sig")  # a byte-order mark (Excel's CSV default) is not text
    except UnicodeDecodeError as err:
        raise TaskError(f"not UTF-8 text ({err.reason})", file=rel, task=task) from None


def _read_info(folder: Path, rel: str) -> dict:
    path = folder / "info.yml"
    if not path.is_file():
        return {}
    info = load_yaml(path, f"{rel}/info.yml")
    info = {} if info is None else info
    schemas.check("info", info, TaskError, file=f"{rel}/info.yml", task_of=lambda _: folder.name)
    return info


def read_csv(path: Path, rel: str, task: str, max_cell: int) -> tuple[list[str], list[list[Any]]]:
    """Header and typed rows of a values.csv; cells stripped, numbers typed, blank lines skipped; a cell over
    `max_cell` characters (task.max_prompt_chars) refused."""
    reader = csv.reader(io.StringIO(_read_text(path, rel, task), newline=""))
    try:
        with _field_limit(max_cell):
            lines = [(reader.line_num, row) for row in reader if any(cell.strip() for cell in row)]
    except csv.Error as err:
        why = f"a cell longer than task.max_prompt_chars ({max_cell:,} characters)" \
            if str(err).startswith("field larger than field limit") else f"not CSV: {err}"
        raise TaskError(why, file=rel, task=task, key=f"line {reader.line_num}") from None
    if not lines:
        raise TaskError("empty values: no header and no rows", file=rel, task=task)
    header = [cell.strip() for cell in lines[0][1]]
    _check_header(header, rel, task)
    if len(lines) < 2:
        raise TaskError("empty values: a header but no rows", file=rel, task=task)
    for number, row in lines[1:]:
        if len(row) != len(header):
            raise TaskError(f"malformed row: {len(row)} cells where the header has {len(header)}",
                            file=rel, task=task, key=f"line {number}")
    return header, [[typed(cell.strip()) for cell in row] for _, row in lines[1:]]


def _check_header(header: list[str], rel: str, task: str) -> None:
    for i, name in enumerate(header):
        if not name.isidentifier():
            raise TaskError(f"column {i + 1} has an invalid name {name!r}", file=rel, task=task, key="header")
        if header.index(name) != i:
            raise TaskError(f"column '{name}' appears twice", file=rel, task=task, key="header")


@contextmanager
def _field_limit(chars: int) -> Iterator[None]:
    """The csv module's bound on a cell (131,072 characters unless set) as `chars` while a file is read."""
    before = csv.field_size_limit(chars)
    try:
        yield
    finally:
        csv.field_size_limit(before)


def typed(cell: str) -> int | float | str:
    """'2' -> 2, '2.5' -> 2.5, anything else stays a string; so does an integer outside ±MAX_INT (what every JSON
    reader keeps exactly), as the text it is."""
    if _INT.fullmatch(cell):
        digits = cell.lstrip("+-").lstrip("0") or "0"
        if len(digits) > len(str(MAX_INT)) or int(digits) > MAX_INT:
            return cell
        return -int(digits) if cell.startswith("-") else int(digits)
    if _FLOAT.fullmatch(cell):
        return float(cell)
    return cell
