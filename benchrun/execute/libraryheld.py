"""What installed libraries hold for every caller in their own tables, past their names (`core.stdlibnames`), read and
put back in the scorer process (`scorer_worker._held_by_libraries`): pandas' options (`pandas.set_option(
"display.precision", 2)`: a later call's `str(frame)`, its answer parsed against, said 0.33), PyYAML's constructors,
representers and resolvers (`yaml.add_constructor("!x", ...)` on a loader: a later call's `yaml.load` built its tags
with it; `add_implicit_resolver`: plain words read as another type), OmegaConf's resolvers (a call registering one had
every later call's registering it refused, `ValueError: resolver 'x' is already registered`) and scipy.special's
handling of errors (`scipy.special.seterr(all="raise")`: a later call's `gamma(0)` raised, where it gave inf). Each
is compared before it is put back. pandas' options are read and set through its public `pandas.options` and
`set_option`, PyYAML's tables are its classes' public attributes; OmegaConf offers no public way to list its resolvers
or to register one as stored (`register_new_resolver` wraps what it is given), so its table is read itself."""

from __future__ import annotations

import sys
import warnings
from typing import Any, Callable

from benchrun.core.stdlibnames import refill

YAML_MODULES = ("yaml.constructor", "yaml.representer", "yaml.resolver", "yaml.loader", "yaml.dumper", "yaml.cyaml")
"""PyYAML's modules whose classes hold its tables, each in an attribute named `yaml_...` of the class itself
(`add_constructor` copies its parent's on a class's first registration, then adds to the copy)."""
Held = list[tuple[Callable[[Any], None], Any]]


def held_now() -> Held:
    """A setter and the state now of each table an imported library holds (pandas' options, PyYAML's tables)."""
    found: Held = []
    if (pandas := sys.modules.get("pandas")) is not None and hasattr(pandas, "options"):
        found.append((_put_back_options, _options(pandas.options)))
    if "yaml" in sys.modules:
        found.append((_put_back_tables, _tables()))
    if (containers := sys.modules.get("omegaconf.basecontainer")) is not None:
        found.append((_put_back_resolvers, dict(containers.BaseContainer._resolvers)))
    if (special := sys.modules.get("scipy.special")) is not None:
        found.append((lambda errors: special.seterr(**errors), special.geterr()))
    return found


def _put_back_resolvers(found: dict[str, Any]) -> None:
    """OmegaConf's resolvers as `found`, where a call registered or replaced one (OmegaConf keeps them in
    `BaseContainer._resolvers` only, as `compiler.runstate` puts them back in the run's process)."""
    resolvers = sys.modules["omegaconf.basecontainer"].BaseContainer._resolvers
    if resolvers != found:
        refill(resolvers, found)  # in place: the class's name stays bound to the dict (`stdlibnames`)


def _options(options: Any, prefix: str = "") -> dict[str, Any]:
    """pandas' options by their full key (`display.precision`), read through `pandas.options` (each group of keys an
    object of its type, as `dir` lists them); reading a deprecated one warns, of nothing the call did."""
    found: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key in dir(options):
            if isinstance(value := getattr(options, key), type(options)):
                found.update(_options(value, f"{prefix}{key}."))
            else:
                found[f"{prefix}{key}"] = value
    return found


def _put_back_options(found: dict[str, Any]) -> None:
    """Each pandas option a call changed set back through `pandas.set_option` (which runs the option's callback)."""
    pandas = sys.modules["pandas"]
    now = _options(pandas.options)
    changed = [(key, value) for key, value in found.items() if key not in now or not _same(now[key], value)]
    with warnings.catch_warnings():  # setting a deprecated option warns, where the call's change is put back
        warnings.simplefilter("ignore")
        for key, value in changed:
            pandas.set_option(key, value)


def _same(now: Any, was: Any) -> bool:
    try:
        return bool(now is was or now == was)
    except Exception:  # a value whose == raises: put back
        return False


def _tables() -> dict[type, dict[str, tuple[Any, Any]]]:
    """Each class of YAML_MODULES imported with the `yaml_...` tables it holds itself, each with a copy of its content
    (a dict's lists copied too: `add_implicit_resolver` appends to them)."""
    found: dict[type, dict[str, tuple[Any, Any]]] = {}
    for name in YAML_MODULES:
        for cls in vars(sys.modules.get(name, object)).values():
            if isinstance(cls, type) and cls.__module__ in YAML_MODULES:
                found[cls] = {key: (table, _copy(table)) for key, table in vars(cls).items() if key.startswith("yaml_")}
    return found


def _copy(table: Any) -> Any:
    if isinstance(table, dict):
        return {key: value[:] if isinstance(value, list) else value for key, value in table.items()}
    return table[:] if isinstance(table, list) else table


def _put_back_tables(found: dict[type, dict[str, tuple[Any, Any]]]) -> None:
    """Each class's `yaml_...` tables, the same objects, holding what they held then; one a class gained since (its
    first registration) taken away, so it finds its parent's again."""
    for cls, tables in found.items():
        for key in [key for key in vars(cls) if key.startswith("yaml_") and key not in tables]:
            delattr(cls, key)
        for key, (table, was) in tables.items():
            if vars(cls).get(key) is not table:
                setattr(cls, key, table)
            if isinstance(table, (dict, list)) and not _same(table, was):
                refill(table, _copy(was))
