"""Reading a benchmark directory (list-style `tasks.yml`, folder-style `tasks/<name>/`) into task specs."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict

from benchrun.compiler import schemas
from benchrun.compiler.data import (
    REFERENCE,
    Draw,
    Example,
    Where,
    inline_examples,
    read_examples,
    read_once,
    read_values,
)
from benchrun.compiler.files import Bounds, inside, present, read_csv, read_text
from benchrun.compiler.lookalikes import refuse_lookalikes
from benchrun.compiler.tasksdir import TASKS_DIR, TASKS_FILE, TOP_FILES
from benchrun.core.errors import TaskError
from benchrun.core.manifest import PROMPT_ID, Combinations
from benchrun.core.text import name_said, undecoded
from benchrun.core.yamlfile import load_yaml

FOLDER_FILES = ("template.txt", "values.csv", "values.jsonl", "info.yml", "description.txt")
FOLDER_VALUES = ("values.csv", "values.jsonl")
TASK_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
"""A task name, as tasks.schema.json's $defs/name says (a folder task's folder name too)."""
MAX_TASK_NAME = 100
"""The most characters a task name has, as tasks.schema.json's $defs/name says (a folder task's folder name too)."""
Column = list[Any]
DEFAULT_COMBINATIONS = "tuple"
"""How a task's value lists make samples unless it says: zipped (`combinations`: every combination)."""


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
    values_file: str | None = None
    """The file the values came from (`values_file:`, a folder's values.csv or values.jsonl), if any."""
    system: str | None = None
    fewshot: tuple[Example, ...] = ()
    limit: int | None = None
    """Only the first `limit` samples."""
    sample: Draw | None = None
    """Only `sample.n` samples, drawn with `sample.seed`."""
    files: tuple[str, ...] = ()
    """The data files the task read besides its task files (values and examples), relative to the benchmark."""

    def where(self, key: str) -> dict[str, str | None]:
        """File, task and key path for an error about `key` (e.g. `name`, `template`, `values.id`, `scorer`)."""
        head, _, column = key.partition(".")
        if self.values_file and head in ("values", REFERENCE):
            named = column if head == "values" else REFERENCE
            return {"file": self.values_file, "task": self.name, "key": f"column '{named}'" if named else None}
        if self.key:
            return {"file": self.source, "task": self.name, "key": f"{self.key}.{key}"}
        file, folder_key = _folder_place(key)
        return {"file": self.source + file, "task": self.name, "key": folder_key}


def _folder_place(key: str) -> tuple[str, str | None]:
    """Where a folder task keeps the setting `key`: the file (under the folder) and the key in it."""
    if key == "name":  # a folder task is named by its folder
        return "", None
    if key == "template":
        return "/template.txt", None
    return "/info.yml", key


DEFAULT_SCORER = "exact_match"
DEFAULT_FORMAT = "StringAnswer"


def benchmark_files(bench: Path, data: Iterable[str] = ()) -> list[Path]:
    """Every file of the benchmark that benchrun reads, its task files first, then those of the `data` files its tasks
    name (values and examples) that are there inside it; each task file must resolve inside the benchmark directory
    (a link to a file or folder outside it is refused: a shared benchmark must not send /etc/passwd to a model), and
    one that is a link leading nowhere is refused too (`present`)."""
    paths, held = [bench / name for name in TOP_FILES], {bench}  # folders resolved inside it (bench is resolved)
    tasks_dir = bench / TASKS_DIR
    if present(bench, tasks_dir) and tasks_dir.is_dir():
        for folder in task_folders(tasks_dir):
            if present(bench, folder) and folder.is_dir():
                inside(bench, folder)
                paths += [folder / name for name in FOLDER_FILES]
                held.add(folder)
    found = [path for path in paths if present(bench, path)]
    extra = sorted({bench / rel for rel in data if not Path(rel).is_absolute()} - set(found))
    found += [path for path in extra if path.exists() and path.resolve().is_relative_to(bench)]
    for path in found:
        if path.parent not in held or path.is_symlink():  # a file that is no link, in a folder inside, is inside
            inside(bench, path)
    return found


def task_folders(tasks_dir: Path) -> list[Path]:
    """What the tasks/ folder holds, by name, but another tool's folder: a hidden one (Jupyter's
    `.ipynb_checkpoints`, `.git`) or Python's `__pycache__`, unless it holds a template.txt, which makes it a task."""
    return [path for path in sorted(tasks_dir.iterdir())
            if not (path.name.startswith(".") or path.name == "__pycache__") or (path / "template.txt").exists()]


def read_tasks(bench: Path, bounds: Bounds) -> list[TaskSpec]:
    """Every task of the benchmark at `bench`, list-style first, then folders by name; each data file held to
    `bounds`."""
    benchmark_files(bench)
    tasks_dir = bench / TASKS_DIR
    refuse_lookalikes(bench, (*TOP_FILES, TASKS_DIR), [folder for folder in task_folders(tasks_dir) if folder.is_dir()]
                      if tasks_dir.is_dir() else [], FOLDER_FILES)
    with read_once():
        specs = _list_tasks(bench, bounds) + _folder_tasks(bench, bounds)
    if not specs:
        raise TaskError(f"no tasks found: expected {TASKS_FILE} or {TASKS_DIR}/<name>/template.txt",
                        file=str(bench))
    return specs


def _list_tasks(bench: Path, bounds: Bounds) -> list[TaskSpec]:
    path = bench / TASKS_FILE
    if not path.exists():
        return []
    raw = load_yaml(path, TASKS_FILE, written=True)
    schemas.check("tasks", raw, TaskError, file=TASKS_FILE, root="tasks",
                  task_of=lambda p: _name_at(raw, p))
    return [_list_task(bench, item, i, bounds) for i, item in enumerate(raw)]


def _name_at(raw: Any, path: list) -> str | None:
    if isinstance(raw, list) and path and isinstance(path[0], int) and isinstance(raw[path[0]], dict):
        name = raw[path[0]].get("name")
        return name if isinstance(name, str) else None
    return None


def _list_task(bench: Path, item: dict, index: int, bounds: Bounds) -> TaskSpec:
    key = f"tasks[{index}]"
    values, reference, values_file = item.get("values"), item.get("reference", "calculated"), item.get("values_file")
    if values_file is not None:
        named_at = {"file": TASKS_FILE, "task": item["name"], "key": f"{key}.values_file"}
        if item.get("value_combinations") == "combinations":
            raise TaskError("'combinations' crosses value lists, but a values file gives one sample per record "
                            "(crossed, its columns made questions no record holds, each asked again for every other "
                            "column's value); leave value_combinations out",
                            **{**named_at, "key": f"{key}.value_combinations"})
        values = read_values(bench, values_file, named_at, bounds)
        reference = _file_reference(values, item.get("reference"), {**named_at, "key": f"{key}.reference"})
    elif REFERENCE in values:
        raise TaskError("a value named 'reference' is kept as a value of each sample (in its id, its values), not as "
                        "its reference, as a values file's reference column is; give the references with the task's "
                        "reference key, or rename the value", file=TASKS_FILE, task=item["name"],
                        key=f"{key}.values.{REFERENCE}")
    return _checked(TaskSpec(
        name=item["name"], source=TASKS_FILE, key=key, template=item["template"],
        values=values, reference=reference, values_file=values_file,
        value_combinations=item.get("value_combinations", DEFAULT_COMBINATIONS),
        scorers=_as_tuple(item.get("scorer", DEFAULT_SCORER)),
        format=item.get("format", DEFAULT_FORMAT), description=item.get("description"),
        judges=_as_tuple(item.get("judge", ())),
        **_chat(bench, item, TASKS_FILE, item["name"], f"{key}.", bounds),
        files=_data_files(item)))


def _file_reference(columns: dict[str, Column], given: Any, named_at: Where) -> Column | Literal["calculated"]:
    """A values file's reference column (taken out of its values), or `calculated` without one; `given` is the
    task's own `reference:` (None when absent)."""
    if given not in (None, "calculated"):
        raise TaskError("a task with values_file takes its references from the file's reference column; give "
                        "none here, or reference: calculated", **named_at)
    found = columns.pop(REFERENCE, None)
    if found is not None and given == "calculated":
        raise TaskError("reference is 'calculated' but the values file has a reference column", **named_at)
    return "calculated" if found is None else found


def _chat(bench: Path, raw: dict, file: str, task: str, prefix: str, bounds: Bounds) -> dict[str, Any]:
    """A task's system prompt, few-shot examples, `limit` and `sample` (of tasks.yml, its keys under `prefix`, or of
    a folder's info.yml)."""
    def at(key: str) -> Where:
        return {"file": file, "task": task, "key": prefix + key}

    fewshot = raw.get("fewshot", [])
    examples = inline_examples(fewshot, at("fewshot")) if isinstance(fewshot, list) \
        else read_examples(bench, fewshot, at("fewshot"), bounds)
    if "limit" in raw and "sample" in raw:
        raise TaskError("limit and sample are both given: take the first N (limit) or draw N (sample)", **at("sample"))
    draw = Draw(**raw["sample"]) if "sample" in raw else None
    return {"system": raw.get("system"), "fewshot": examples, "limit": raw.get("limit"), "sample": draw}


def _data_files(raw: dict) -> tuple[str, ...]:
    """The data files a task's settings name."""
    fewshot = raw.get("fewshot")
    named = [raw.get("values_file"), fewshot.get("file") if isinstance(fewshot, dict) else None]
    return tuple(name for name in named if name is not None)


def _checked(spec: TaskSpec) -> TaskSpec:
    """A task whose values and references are finite numbers, strings or bools (a .nan has no JSON and no id), and
    whose scorers get each value as written (a value named `prompt_id`, with a calculated reference, would not)."""
    if spec.reference == "calculated" and PROMPT_ID in spec.values:
        raise TaskError(f"a value named '{PROMPT_ID}', which a calculated reference gives its scorers as the sample's "
                        "id, in place of the value: rename the value", **spec.where(f"values.{PROMPT_ID}"))
    columns = {f"values.{name}": column for name, column in spec.values.items()}
    if spec.reference != "calculated":
        columns[REFERENCE] = spec.reference
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


def _folder_tasks(bench: Path, bounds: Bounds) -> list[TaskSpec]:
    root = bench / TASKS_DIR
    if not root.is_dir():
        return []
    folders = [d for d in task_folders(root) if d.is_dir()]
    for folder in folders:
        if not TASK_NAME.fullmatch(folder.name):
            shown = undecoded(folder.name) or folder.name  # a name's bytes that are not UTF-8 escaped, not U+FFFD
            raise TaskError(f"{name_said(shown)} is not a task name (ASCII letters, digits, _ . - ; not starting with . "
                            "or -): rename the folder", file=f"{TASKS_DIR}/{shown}")
        if len(folder.name) > MAX_TASK_NAME:
            raise TaskError(f"a task name of {len(folder.name)} characters, more than a task name has "
                            f"({MAX_TASK_NAME}, as in tasks.yml): rename the folder", file=f"{TASKS_DIR}/{folder.name}")
    return [_folder_task(bench, d, f"{TASKS_DIR}/{d.name}", bounds) for d in folders]


def _folder_task(bench: Path, folder: Path, rel: str, bounds: Bounds) -> TaskSpec:
    template = read_text(folder / "template.txt", f"{rel}/template.txt", folder.name)
    if not template.strip():  # as tasks.yml's template must be non-empty
        raise TaskError("empty: a task's template is the prompt it asks", file=f"{rel}/template.txt", task=folder.name)
    info = _read_info(folder, rel)
    values_file, columns = _folder_values(bench, folder, rel, bounds)
    reference = columns.pop(REFERENCE, None)
    if reference is not None and info.get("reference") == "calculated":
        raise TaskError(f"reference is 'calculated' but {values_file.rsplit('/', 1)[-1]} has a reference column",
                        file=f"{rel}/info.yml", task=folder.name, key="reference")
    return _checked(TaskSpec(
        name=folder.name, source=rel, key="", template=template.rstrip("\n"), values=columns,
        reference=reference if reference is not None else "calculated", values_file=values_file,
        scorers=_as_tuple(info.get("scorer", DEFAULT_SCORER)),
        format=info.get("format", DEFAULT_FORMAT), description=_folder_description(folder, rel, info),
        judges=_as_tuple(info.get("judge", ())),
        **_chat(bench, info, f"{rel}/info.yml", folder.name, "", bounds),
        files=_data_files(info)))


def _folder_description(folder: Path, rel: str, info: dict) -> str | None:
    """A folder task's description: its description.txt, or info.yml's `description`; both given are refused (the
    file's took the place of info.yml's unsaid)."""
    if not (folder / "description.txt").exists():
        return info.get("description")
    if "description" in info:
        raise TaskError("description.txt and info.yml's description are both here: keep one", file=rel,
                        task=folder.name)
    return read_text(folder / "description.txt", f"{rel}/description.txt", folder.name).strip()


def _folder_values(bench: Path, folder: Path, rel: str, bounds: Bounds) -> tuple[str, dict[str, Column]]:
    """A folder task's values file (values.csv, or values.jsonl) and its columns."""
    csv_file, jsonl_file = (f"{rel}/{name}" for name in FOLDER_VALUES)
    if (folder / "values.jsonl").exists():
        if (folder / "values.csv").exists():
            raise TaskError("values.csv and values.jsonl are both here: keep one", file=rel, task=folder.name)
        named_at = {"file": jsonl_file, "task": folder.name, "key": None}
        return jsonl_file, read_values(bench, jsonl_file, named_at, bounds)
    if not (folder / "values.csv").exists():  # a values.ndjson, values.json or values.tsv is read by nothing
        raise TaskError(f"no values file: a task folder's values are read from {' or '.join(FOLDER_VALUES)}, by that "
                        "exact name", file=rel, task=folder.name)
    header, rows = read_csv(folder / "values.csv", csv_file, folder.name, bounds)
    return csv_file, {name: [row[i] for row in rows] for i, name in enumerate(header)}


def _read_info(folder: Path, rel: str) -> dict:
    path = folder / "info.yml"
    if not path.exists():
        return {}
    info = load_yaml(path, f"{rel}/info.yml", written=True)
    info = {} if info is None else info
    schemas.check("info", info, TaskError, file=f"{rel}/info.yml", task_of=lambda _: folder.name)
    return info
