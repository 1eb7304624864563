"""Writing small benchmarks into a test's tmp_path, and the config that compiles one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

RUNNER = {"type": "ollama", "model": "m", "options": {"temperature": 0, "seed": 0}}


def scorer(body: str) -> str:
    """A custom scorer `s` doing `body` (which returns its score)."""
    return "import sys\n\ndef s(response, values):\n" + "".join(f"    {line}\n" for line in body.splitlines())


def write_bench(root: Path, files: dict[str, str], name: str = "bench") -> Path:
    """A benchmark directory `root/name` holding `files` (relative path -> text)."""
    bench = root / name
    bench.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = bench / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return bench


def tasks_yml(*tasks: dict[str, Any]) -> str:
    """A list-style tasks.yml holding `tasks`, keys in the order given."""
    return yaml.safe_dump(list(tasks), sort_keys=False, allow_unicode=True)


def task(name: str = "t", **keys: Any) -> dict[str, Any]:
    """One list-style task: a one-field template over two samples with references, unless overridden."""
    return {"name": name, "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"], **keys}


def folder_task(name: str, template: str, values_csv: str, **extra: str) -> dict[str, str]:
    """The files of folder task `tasks/<name>/`: template.txt, values.csv and any `extra` (info_yml=...)."""
    files = {f"tasks/{name}/template.txt": template, f"tasks/{name}/values.csv": values_csv}
    files.update({f"tasks/{name}/{key.replace('_', '.')}": text for key, text in extra.items()})
    return files


def config(path: Path | str, only: list[str] | None = None, **runner: Any) -> dict[str, Any]:
    """A resolved config for the benchmark at `path`; `runner` keys replace the default runner's."""
    return {"task": {"path": str(path), "name": "b", "only": only}, "runner": {**RUNNER, **runner}}
