"""`task`: the typed keys choosing a benchmark and its tasks, and the limits its task files are held to."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from benchrun.core.filebytes import MAX_FILE_BYTES, UNASKED, unasked_said
from benchrun.core.settingsbase import Settings
from benchrun.core.text import no_control_character, says_nothing


def _some_text(text: str) -> str:
    """A system prompt that says something: one of only whitespace or invisible characters is refused, as an empty
    one is (min_length); so is one holding a character no text asks (UNASKED), as a file's is."""
    if (found := UNASKED.search(text)) is not None:
        raise ValueError(unasked_said(found[0]))
    if says_nothing(text):
        raise ValueError("only whitespace and invisible characters, which say nothing: give the system prompt's text, "
                         "or leave task.system out for the tasks' own")
    return text


def _a_name(name: str) -> str:
    if not name.strip():  # the run directory's name said `model` for it, run.json and `list` a blank
        raise ValueError("only spaces: name the benchmark (its name is in the run directory's name and in "
                         "benchrun-audit list)")
    if name != name.strip():  # ' b ' printed as benchmark b in every heading and list, under another manifest id
        raise ValueError(f"{name!r} has white space around it, so it prints as {name.strip()!r} (a run's heading, "
                         "benchrun-audit list), a name it is not: name the benchmark without it")
    return no_control_character(name, "a benchmark's name printed on the console (a run's heading, its row in "
                                      "benchrun-audit list) cannot hold: name the benchmark without one")


class TaskConfig(Settings):
    """`task`: which benchmark, which of its tasks, and the limits its task files are held to."""

    path: str = Field(min_length=1)
    """The benchmark directory (relative to the working directory), or demo:<name> for a shipped one."""
    name: Annotated[str, AfterValidator(_a_name)] = Field(min_length=1)
    """The benchmark's name in run directory names and records (the directory's name by default)."""
    only: list[str] | None = Field(None, min_length=1)
    """Task names to run; null runs every task."""
    system: Annotated[str, Field(min_length=1), AfterValidator(_some_text)] | None = None
    """A system prompt sent first to every sample of every task, in place of the tasks' own `system:`; null keeps
    theirs."""
    max_samples: int = Field(1_000_000, ge=1)
    """Refuse a benchmark whose value grids expand to more samples than this (counted before expanding)."""
    max_prompt_chars: int = Field(100_000, ge=1)
    """Refuse a rendered prompt (or a template format width or precision) longer than this."""
    max_total_chars: int = Field(100_000_000, ge=1)
    """Refuse a benchmark whose prompts come to more characters than this in all (counted as they are rendered):
    the two limits above hold one by one, not together (a million prompts of 100,000 characters)."""
    max_file_bytes: int = Field(MAX_FILE_BYTES, ge=1)
    """Refuse a data file (values_file, a folder's values.csv or values.jsonl, a few-shot examples file) larger than
    this, before it is read: it is read whole, at several times its size in memory."""
