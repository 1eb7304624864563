"""A value in JSON's words where a message of jsonschema's quotes it in Python's (`true`, not `True`; `{"a": null}`,
not `{'a': None}`): a format's check says an answer's values so, and the compiler a benchmark file's; and bytes a
message quotes (what a server or a scorer sent), as JSON text, not as Python's repr writes them (`b'zz\\r\\n'`)."""

from __future__ import annotations

import json
from typing import Any

from benchrun.core.written import WrittenFloat, WrittenInt


def in_json(value: Any) -> str:
    """`value` as JSON writes it, its text as it is (not escaped to ASCII), a number as its file wrote it
    (core.written: `1.10`, `1e3`, which JSON would write 1.1 and 1000.0), in a list or a mapping too."""
    if isinstance(value, (WrittenFloat, WrittenInt)):
        return str(value)
    if isinstance(value, list):
        return f"[{', '.join(map(in_json, value))}]"
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return f"{{{', '.join(f'{in_json(key)}: {in_json(item)}' for key, item in value.items())}}}"
    return json.dumps(value, ensure_ascii=False)


def respelled(message: str, value: Any) -> str:
    """`message` with `value` in JSON's words where it quotes it, as Python's repr writes it, at its start or end."""
    python = repr(value)
    if message.startswith(python):
        return in_json(value) + message[len(python):]
    if message.endswith(python):
        return message[:-len(python)] + in_json(value)
    return message


def listed(text: str, candidates: list[Any]) -> str | None:
    """`text`, values as Python's repr writes them joined by `, `, each the next of `candidates` it matches (in their
    order, some skipped), in JSON's words; None where `text` is not so made of them."""
    said, at = [], 0
    for candidate in candidates:
        python = repr(candidate)
        if at < len(text) and text.startswith(python, at) and text[at + len(python):at + len(python) + 2] in ("", ", "):
            said.append(in_json(candidate))
            at += len(python) + 2
    return ", ".join(said) if said and at == len(text) + 2 else None


def bytes_said(data: bytes) -> str:
    """`data` quoted as JSON text (`"zz\\r\\n"`), a byte that is no UTF-8 escaped (`\\xff`)."""
    return in_json(data.decode("utf-8", "backslashreplace"))
