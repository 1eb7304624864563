"""The shape of a manifest's plain JSON data that its fast readers take (`Run.manifest_data`: export, show's
samples), checked without validating the whole manifest."""

from __future__ import annotations

from typing import Any

from benchrun.core.layout import MANIFEST_VERSION, is_version, unknown_version


def not_a_manifest(data: Any) -> str | None:
    """What of a manifest's plain JSON data is not of the shape its readers take (`Run.manifest_data`): a list of
    tasks, each a mapping with its name (and its few-shot turns, if any, a list of mappings), and a list of samples,
    each a mapping with its id, task and prompt as text and its values as a mapping, of the schema version this
    benchrun knows; None when it is."""
    if not (isinstance(data, dict) and isinstance(data.get("samples"), list) and isinstance(data.get("tasks"), list)):
        return "no samples list and tasks list"
    if not is_version(version := data.get("schema_version", MANIFEST_VERSION), MANIFEST_VERSION):  # a newer benchrun's, whose
        return f"schema_version: {unknown_version(version, MANIFEST_VERSION)}"  # fields may mean otherwise
    for number, task in enumerate(data["tasks"]):
        turns = (task.get("fewshot") or []) if isinstance(task, dict) else None
        if not (isinstance(task, dict) and isinstance(task.get("name"), str) and isinstance(turns, list)
                and all(isinstance(turn, dict) for turn in turns)):
            return f"tasks[{number}] is not a task (a mapping with its name, and its few-shot turns as a list)"
    for number, sample in enumerate(data["samples"]):
        if not (isinstance(sample, dict) and all(isinstance(sample.get(key), str) for key in ("id", "task", "prompt"))
                and isinstance(sample.get("values"), dict)):
            return f"samples[{number}] is not a sample (a mapping with its id, task, prompt and values)"
    return None
