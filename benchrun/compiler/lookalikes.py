"""A benchmark's file named as one benchrun reads but for its letters' case or `.yaml` or `.json` for `.yml`
(`info.yaml`, `judges.json`, `Template.txt`, a folder `Tasks/`): benchrun reads files by their exact names, so such a
file was read by nothing, its task run with the defaults (an info.yaml's scorer and format) or its judges never asked,
without a word. Refused naming it and the name benchrun reads; so is a task folder's file named as one the benchmark's
top holds (its own judges.yml), which nothing reads either."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from benchrun.core.errors import TaskError
from benchrun.core.text import name_said


def refuse_lookalikes(bench: Path, read: Iterable[str], folders: Iterable[Path], folder_read: Iterable[str]) -> None:
    """Refuse a name in `bench` that reads as one of `read` (the names benchrun reads there) but is not one of them,
    and the same in each task folder of `folders` against `folder_read`; and a task folder's file named as one of
    `read` (a folder's own judges.yml), which benchrun reads at the benchmark's top alone."""
    read = tuple(read)
    _refuse_in(bench, bench, read, None)
    for folder in folders:
        _refuse_in(bench, folder, tuple(folder_read), folder.name)
        if top := next((name for name in sorted(os.listdir(folder)) if name in read and (folder / name).is_file()),
                       None):
            raise TaskError(f"{top} is read at the benchmark's top alone ({top}, beside tasks/), so a task folder's is "
                            "read by nothing, and its task run without it: move it to the benchmark's folder, or "
                            "its content into the one there", file=(folder / top).relative_to(bench).as_posix(),
                            task=folder.name)


def _refuse_in(bench: Path, folder: Path, read: tuple[str, ...], task: str | None) -> None:
    meant = {_spelling(name): name for name in read}
    for name in sorted(os.listdir(folder)):
        if name not in read and (which := meant.get(_spelling(name))) is not None:
            raise TaskError(f"{name_said(name)} is a name benchrun does not read (it reads {which}, by that exact "
                            f"name), so the file would be ignored: rename it {which}",
                            file=(folder / name).relative_to(bench).as_posix(), task=task)


def _spelling(name: str) -> str:
    """A name as it reads: its case folded, `.yaml` and `.json` (YAML's subset, as other tools write such a file) as
    `.yml`."""
    folded = name.casefold()
    stem, dot, suffix = folded.rpartition(".")
    return f"{stem}.yml" if dot and suffix in ("yaml", "json") else folded
