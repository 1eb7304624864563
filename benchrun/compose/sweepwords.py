"""What of a sweep the command line gives where Hydra reads none: several values, or a sweep's function, without -m; a
sweep inside another value; a sweep over Hydra's own settings. Each said in benchrun's words, naming the key."""

from __future__ import annotations

import re
from typing import Sequence

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, Glob, Sweep
from hydra.errors import HydraException

from benchrun.core.errors import ConfigError
from benchrun.core.keys import override_key


def refuse_nested_sweeps(argv: Sequence[str]) -> None:
    """Refuse a sweep's function (range, choice, interval, glob) inside another value: an item of a list or a sweep
    (`repeats=range(1,3),5`), a mapping's value (`runner.options={seed: range(1,3)}`), which Hydra's grammar reads
    and OmegaConf then meets as an object it cannot hold (`Unexpected type annotation: Set[str] full_key: tags
    object_type=RangeSweep`)."""
    parser = OverridesParser.create()
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        try:
            value = parser.parse_override(arg)._value
        except HydraException as err:  # said in benchrun's words where Hydra parses it, but for a sweep it took in
            if _sweep_in_function(err):
                raise _nested(arg) from None
            continue
        stack = list(value.list) if isinstance(value, ChoiceSweep) else [] if isinstance(value, (Sweep, Glob)) \
            else [value]
        while stack:
            item = stack.pop()
            if isinstance(item, (Sweep, Glob)):
                raise _nested(arg)
            stack += list(item.values()) if isinstance(item, dict) else list(item) if isinstance(item, list) else []


SWEEP_TAKEN = re.compile(r"\b(?:ChoiceSweep|RangeSweep|IntervalSweep|Glob)\b")
"""The name of a sweep's object in Hydra's words for an argument a function of its grammar could not take."""


def _sweep_in_function(err: HydraException) -> bool:
    """Whether Hydra's grammar failed to evaluate a function for a sweep among its arguments (`sort(1,range(1,3))`:
    `Invalid arguments: (1, RangeSweep(...))`; `shuffle(1,choice(2,3))`: a bare AssertionError, no words at all)."""
    wordless = isinstance(err.__cause__, AssertionError) and not str(err.__cause__)
    return wordless or SWEEP_TAKEN.search(str(err)) is not None


def _nested(arg: str) -> ConfigError:
    """The refusal of an override whose value holds a sweep inside another value."""
    return ConfigError(f"{arg.partition('=')[2]!r} holds a sweep (a range, choice, interval or glob) inside another "
                       "value (a list, a mapping or a sweep's values), where none is read: give the sweep as the "
                       "override's whole value, with -m, or list the values it gives", file="config",
                       key=override_key(arg))


SWEEP_WORDS = (re.compile(r"Ambiguous value for argument '(.*)'\n1\. To use it as a list"),
               re.compile(r"Sweep parameters '(.*)' requires --multirun"),
               re.compile(r"Sweeping over Hydra's configuration is not supported : '(.*)'"))
"""Hydra's words for an override of several values given without -m (values with commas; a sweep's function, as
`range(1,3)`), and for one of Hydra's own keys swept with -m, each with the override as given."""


def sweep_misplaced(said: str) -> str | None:
    """Hydra's words (SWEEP_WORDS) for a sweep given where none is run, or over Hydra's own settings, in benchrun's:
    the key, the values and what to give (Hydra's advice `key=\\'value1,value2\\'` printed its backslashes);
    None for any other error."""
    found = [(kind, match[1]) for kind, words in enumerate(SWEEP_WORDS) if (match := words.match(said))]
    if not found:
        return None
    kind, line = found[0]
    given, _, value = line.partition("=")
    kind = 1 if kind == 0 and "(" in value else kind  # a sweep's function of values with commas: sort(2,1)
    quoted = "" if "'" in value or '"' in value else f" or, for text holding a comma, quoted ({given}='{value}')"
    decimal = re.fullmatch(r"\s*([+-]?\d+),(\d+)\s*", value)  # a decimal comma, as a European locale writes 0,7
    said = [(f"{value!r} gives two values, {decimal[1]} and {decimal[2]}; one number is written without a comma: "
             f"{_one_number(given, decimal[1], decimal[2])}; a sweep of the two takes -m" if decimal else
             f"{value!r} gives several values, which only a sweep (-m) runs, one job each: add -m, or give one value: "
             f"a list in brackets ({given}=[{value}]){quoted}"),
            f"{value!r} is a sweep, which runs one job for each of its values, and only with -m (--multirun): add -m, "
            "or give one value",
            f"{value!r} sweeps Hydra's own setting, which is one for the whole sweep: give it one value"][kind]
    return str(ConfigError(said, file="config", key=override_key(line)))


def _one_number(given: str, whole: str, part: str) -> str:
    """The number `whole,part` may mean, as the override `given` writes it: a decimal (0.7), or, of three digits after
    the comma, thousands too (1000)."""
    decimal = f"a decimal with a point ({given}={whole}.{part})"
    return decimal + (f", thousands with no separator ({given}={whole}{part})" if len(part) == 3 else "")
