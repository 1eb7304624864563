"""A response class's JSON schema made alike at each import of its file. The schema is the manifest's (its id), so
one made otherwise each time (a random number in `json_schema_extra`, the time, a set's order, which differs from
process to process) gave each compile another manifest id, a dry run and a run of one benchmark apart, with nothing
said. The probe's import (compiler.importprobe.PROBE) makes each class's schema in a process of its own and writes its
digest; the compile's must hash alike."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from benchrun.core.errors import TaskError

MARK = "digest "
"""What the probe writes before the name and digest of each class's schema it made (a JSON pair), a line each."""
PROBED: dict[str, dict[str, str]] = {}
"""The digest of each class's schema the probe made, by class name, by the module name its file is imported under."""


def digest(schema: Any) -> str:
    """A schema's sha256, as the probe makes it: sorted keys (the manifest's canonical JSON sorts them)."""
    return hashlib.sha256(json.dumps(schema, sort_keys=True, default=repr).encode()).hexdigest()


def keep_probed(module: str, said: bytes) -> None:
    """Keep the digests the probe wrote (`said`) of the classes of the file imported as `module`."""
    lines = said.split(b"\n" + MARK.encode())[1:]
    PROBED[module] = dict(json.loads(line.split(b"\n", 1)[0]) for line in lines)


def refuse_made_otherwise(cls: type, name: str, schema: Any, file: str, task: str | None) -> None:
    """Refuse format `name` (the class `cls`) whose `schema`, made here, is not the one the probe made."""
    made = PROBED.get(cls.__module__, {}).get(name)
    if made is not None and made != digest(schema):
        raise TaskError(f"format '{name}': its JSON schema is made otherwise at each import of {file} (a random "
                        "number, the time, a set's order or the environment in it), so each compile would give the "
                        "run another manifest id (a dry run and a run of the benchmark apart); make it of the "
                        "file's text alone", file=file, task=task)
