"""How large a run's manifest.json can be, from what its run recorded: a planted file of gigabytes in its place is
refused by its size, before a byte of it is hashed."""

from __future__ import annotations

from typing import Any

from benchrun.core.filebytes import MAX_FILE_BYTES
from benchrun.core.tasksettings import TaskConfig

JSON_BYTES_PER_CHAR = 6
"""The most JSON spends on one character (`\\u001f`)."""
SAMPLE_BYTES = 64 * 2**10
"""What a sample holds besides its prompt, as generously as no real benchmark's comes near: its id, task, keys, and
values and reference the prompt does not show."""


def manifest_ceiling(samples: int, config: dict[str, Any]) -> int:
    """The most bytes a manifest of `samples` samples (run.json's count) compiled under `config` (config.yaml) holds:
    the benchmark's own text (its task files, at most MAX_FILE_BYTES each of tasks.yml and a template, as JSON), its
    prompts (task.max_total_chars characters in all) twice over (values and references that echo them), and
    SAMPLE_BYTES a sample."""
    task = config.get("task")
    chars = task.get("max_total_chars") if isinstance(task, dict) else None
    if not isinstance(chars, int) or isinstance(chars, bool) or chars < 1:
        chars = TaskConfig.model_fields["max_total_chars"].default
    return JSON_BYTES_PER_CHAR * (2 * MAX_FILE_BYTES + 2 * chars) + samples * SAMPLE_BYTES


MANIFEST_CEILING = ("64 KiB a sample of run.json's, and 6 bytes a character of twice config.yaml's task.max_total_chars "
                    "and of two files of 256 MiB")
"""`manifest_ceiling`, as a refusal says it."""
