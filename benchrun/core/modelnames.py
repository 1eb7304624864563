"""What a model's name may be: one a command can ask (a name, listed once, of no control character, no whitespace at
an end), and for a new run one that reads as itself: a name printed like another (`gеmma3`, its `е` Cyrillic) is
refused, and an Ollama model's name is ASCII, as Ollama's own names are (compose.fresh: resume and retry read an older
run's model as it was asked)."""

from __future__ import annotations

import unicodedata

from benchrun.core.text import name_said, no_control_character

MAX_MODELS = 10_000
"""The most models one command asks (a runner file's list, `runner.model=[...]`): as many as a sweep runs jobs."""
LOOK_ALIKE_SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC")
"""Scripts with letters drawn as Latin ones are (Cyrillic `е` and `а`, Greek `ο`): a name mixing one of them with
Latin letters reads as another name (Unicode's mixed-script confusables, UTS #39)."""


def checked_models(model: str | list[str]) -> str | list[str]:
    """`model` (a name, or a list of names), refused (ValueError) where a command could not ask it."""
    names = [model] if isinstance(model, str) else model
    if len(names) > MAX_MODELS:
        raise ValueError(f"{len(names):,} models, more than one command runs ({MAX_MODELS:,}, one after another, a "
                         "run directory each, as a sweep's jobs); list fewer, or split the list")
    if isinstance(model, str) and not model.strip():  # a judge's model, never a list, was told a list would do
        raise ValueError(f"{name_said(model)}, where a model's name is taken: give the model's name")
    if not names or any(not name.strip() for name in names) or len(set(names)) != len(names):
        raise ValueError("a model name, or a list of different model names")
    for name in names:
        no_control_character(name, "a model's name printed on the console (a run's heading, its tables, "
                                   "benchrun-audit list) cannot hold: name the model without one")
        _trimmed(name)
    return model


def unlike_itself(runner: str, model: str | list[str] | None) -> str | None:
    """Why a new run's `model` of `runner` (its type) is refused: a name that reads as another (`reads_as_another`),
    or for Ollama one beyond ASCII, which no name of its models holds; None for names that read as themselves."""
    for name in [model] if isinstance(model, str) else model or []:
        if runner == "ollama" and not name.isascii():
            return (f"{name_said(name)} holds a character beyond ASCII, which no name of an Ollama model holds (Ollama "
                    "takes ASCII letters, digits, '_', '-', '.', ':' and '/' only): write the model's name as `ollama "
                    "list` shows it")
        if (why := reads_as_another(name)) is not None:
            return why
    return None


def _trimmed(name: str) -> None:
    """Refuses a model name with whitespace at an end (a quoting slip): Ollama's names hold none, and a server
    looked such a name up as another model's (`model ' gemma3' is not pulled`, advising `ollama pull gemma3 `)."""
    if name != name.strip():
        end = "start" if name[:1].isspace() else "end"
        raise ValueError(f"{name!r} has whitespace at its {end}, which no model's name has: give {name.strip()!r}")


def reads_as_another(name: str) -> str | None:
    """Why a name printed like another is refused: Latin letters mixed with letters of a script drawn alike, or a
    character written in a compatibility form (fullwidth `ｇ`, the ligature `ﬁ`), which Unicode's NFKC reads as
    another; None for one that reads as itself."""
    scripts = {unicodedata.name(char, "").split(" ")[0] for char in name if char.isalpha()}
    mixed = sorted(scripts & set(LOOK_ALIKE_SCRIPTS)) if "LATIN" in scripts else []
    if mixed:
        scripts_said = " and ".join(script.title() for script in mixed)
        return (f"{name_said(name)} mixes Latin letters with {scripts_said} ones drawn alike, so it prints as another "
                "name: write it in one script")
    if unicodedata.normalize("NFKC", name) != unicodedata.normalize("NFC", name):
        return (f"{name_said(name)} holds a character in a compatibility form (fullwidth, a ligature), which prints as "
                f"another name: write it as {unicodedata.normalize('NFKC', name)!r}")
    return None
