"""The format an --output's name says it holds (`rows.jsonl`, `report.pdf`), checked against the one a command writes:
a file named for another format is read as that by whatever opens it by its name, or refused by it."""

from __future__ import annotations

from pathlib import Path

from benchrun.core.errors import ConfigError

SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".html": "html", ".htm": "html", ".json": "JSON",
            ".tsv": "tab-separated", ".xlsx": "Excel", ".xls": "Excel", ".ods": "OpenDocument spreadsheet",
            ".parquet": "Parquet", ".pdf": "PDF", ".md": "Markdown"}
"""The formats a file's name says it holds, by suffix (in lower case): those the commands write, and others a program
opening the file by its name would read it as."""


def suffix_fits(output: Path, written: str, command: str, formats: tuple[str, ...] = (), option: str = "") -> None:
    """Refuse an --output of `command` whose name says another format than `written`, of the `formats` the command
    writes by `option` (`rows.jsonl` of a CSV export, --format forgotten; `rows.xlsx`, which a spreadsheet refuses to
    open as CSV); a name of no known suffix is written."""
    said = SUFFIXES.get(output.suffix.lower(), written)
    if said == written:
        return
    chosen = f" ({option} {written})" if option else ""
    fix = f"give {option} {said}, or" if said in formats else f"it writes {' or '.join(formats or (written,))}:"
    raise ConfigError(f"the name '{output.name}' says {said}, and the {command} is {written}{chosen}: {fix} name the "
                      f"file .{written}", key="--output")
