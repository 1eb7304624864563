"""The names the standard library's modules, the installed libraries' and benchrun's own, and their classes hold,
read and put back, and the content of the lists, dicts and sets they hold: as the scorer process's first call found
them, which each call starts with (`scorer_worker._Found`), and as the run's process held them before it imported a
benchmark's file (`compiler.runstate.kept`: a file that set `json.JSONEncoder.key_separator = "="` as it was imported
had the run write its records so). A call that replaced one for its own work (`time.time = lambda: 0`, `math.pi = 3`,
`numpy.pi = 3`, `ssl._create_default_https_context = ssl._create_unverified_context`,
`json.JSONEncoder.item_separator = ";"`, which the process's own replies were written with, `sys.argv = [...]` to call
a command's main), removed one, or registered into a module's table (`sqlite3.register_adapter(float, str)`: every
later call's floats stored as text; `locale.locale_alias`, `encodings.aliases`, `copy._deepcopy_dispatch`,
`shutil.register_archive_format`, `email.charset.add_charset`) did so for every later call; names gained since are
kept (a package's submodule, imported later), and so are the tables of OWN_CONTENT."""

from __future__ import annotations

import codecs
import operator
import os
import site
import sys
import sysconfig
import types
from typing import Any, Mapping

from benchrun.core.resources import demos_dir

OWN_RULES = {"builtins": None, "sys": ("path", "meta_path", "path_hooks")}
"""Modules, or names of a module (None: all), put back by their own rules: the builtins (`put_back_names`, which takes
away names a call added too), sys's lists (`compiler.runstate.SETTINGS`, which puts back what they list)."""
OWN_CONTENT = {"sys": ("modules", "path_importer_cache", "path", "meta_path", "path_hooks"),
               "warnings": ("filters", "_onceregistry", "onceregistry"), "_warnings": ("filters", "_onceregistry"),
               "importlib._bootstrap": ("_module_locks", "_blocking_on"),
               "threading": ("_active", "_limbo", "_shutdown_locks", "_threading_atexits"), "subprocess": ("_active",),
               "weakref": ("_registry",), "ctypes": ("_pointer_type_cache", "_c_functype_cache"),
               "_ctypes": ("_pointer_type_cache",), "logging": ("_handlerList",)}
"""The tables, by module (a class's by its module), whose content is put back by their own rules (sys's:
`scorer_worker._put_back_modules`, `compiler.runstate.SETTINGS`; the warnings filters: `warnings.catch_warnings`,
which tells the interpreter's cache) or is the process's own bookkeeping, never put back: the threads and child
processes alive, the finalizers (`weakref.finalize._registry`) and logging handlers live, the import locks held,
ctypes' pointer types made (put back, an object made since would not be of its own type's pointer type)."""
OWN_OBJECTS = ("logging", "threading", "os", "asyncio.events")
"""Modules whose objects' attributes are put back by their own rules (logging's loggers: `runstate.logging_now`; the
environment: `scorer_worker._Found`; the event loop's policy: `execute.scorerloop`) or are the process's bookkeeping
(the main thread's)."""
CONTAINERS = (dict, list, set)
DEFAULTS = operator.attrgetter("__defaults__", "__kwdefaults__")
IMMUTABLE = 1 << 8
"""Py_TPFLAGS_IMMUTABLETYPE: a class no call can set or take away a name of (a C extension's, `datetime.date`), which
needs no comparing; none of the standard ones holds a list, dict or set."""
_GONE = object()
Names = list[tuple[Any, Mapping[str, Any], dict[str, Any]]]
"""Each module or class, its names (live), and a copy of them as found."""


class Held:
    """The names held (`Names`), and each list, dict or set held with a copy of its content as found; each side by
    side too, as compared (`_unchanged`)."""

    def __init__(self, names: Names, contents: list[tuple[Any, Any]]):
        self.names, self.contents = names, contents
        self.held_names = ([live for _, live, _ in names], [was for _, _, was in names])
        self.held_contents = ([live for live, _ in contents], [was for _, was in contents])
        self.functions = list({id(value): value for _, _, was in names for value in was.values()
                               if isinstance(value, types.FunctionType)
                               and (value.__defaults__ or value.__kwdefaults__)}.values())
        self.defaults = [_defaults(function) for function in self.functions]


BENCHRUN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTALLED = tuple(dict.fromkeys(os.path.join(folder, "") for folder in (
    sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], site.getusersitepackages(), BENCHRUN)))
"""The folders of the installed libraries' modules (the environment's and the user's site-packages) and of
benchrun's own; the benchmark's own modules are in none of them, and what they hold is the scorers' own."""
DEMOS = tuple(dict.fromkeys(os.path.join(folder, "") for folder in (os.path.join(BENCHRUN, "demos"), str(demos_dir()))))
"""The shipped benchmarks' folder, inside benchrun's (as imported, and resolved): their modules are a benchmark's
own, whose names are the scorers' own, as any other benchmark's are."""


def standard_now() -> Held:
    """Each standard, installed or benchrun's module imported now and each class it defines (but IMMUTABLE ones), as
    its names and a copy of them, and the content of each list, dict or set the standard ones' names hold (an installed
    library's are its own bookkeeping, as far as benchrun can tell)."""
    names: Names = []
    for name, module in list(sys.modules.items()):
        if _kept(name, module) and (elsewhere := OWN_RULES.get(name, ())) is not None:
            found = vars(module)
            names.append((module, found, {key: value for key, value in found.items() if key not in elsewhere}))
            names += [(cls, vars(cls), dict(vars(cls))) for cls in list(found.values())
                      if isinstance(cls, type) and cls.__module__ == name and not cls.__flags__ & IMMUTABLE]
    standard = [entry for entry in names if _standard(_module_of(entry[0]))]
    return Held(names + _objects(standard), _contents(standard))


def _kept(name: str, module: Any) -> bool:
    """Whether the module `name` is one whose names are put back: a standard module, an installed library's or
    benchrun's (not a shipped benchmark's, DEMOS)."""
    if not isinstance(module, types.ModuleType):
        return False
    file = str(getattr(module, "__file__", ""))
    return _standard(name) or (file.startswith(INSTALLED) and not file.startswith(DEMOS))


def _standard(name: str) -> bool:
    return name.partition(".")[0] in sys.stdlib_module_names


def _module_of(owner: Any) -> str:
    """The name of the module `owner` is, or a class `owner` is defined in."""
    return owner.__module__ if isinstance(owner, type) else owner.__name__


def _objects(names: Names) -> Names:
    """Each object of a standard class a standard module's name holds (not Python's own, `__spec__`, nor OWN_OBJECTS),
    once, as its attributes and a copy of them: `calendar.c`, which `calendar.setfirstweekday` sets, `json.dumps`'
    `json._default_encoder`, `reprlib.aRepr`."""
    found: dict[int, tuple[Any, Mapping[str, Any], dict[str, Any]]] = {}
    for owner, _, was in names:
        if isinstance(owner, types.ModuleType) and owner.__name__ not in OWN_OBJECTS:
            found.update((id(value), (value, attributes, dict(attributes))) for name, value in was.items()
                         if not name.startswith("__") and (attributes := _attributes(value)))
    return list(found.values())


def _attributes(value: Any) -> dict[str, Any] | None:
    """The attributes of `value` where it is an object of a standard class that holds some in a dict, else None."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType)) or not _standard(type(value).__module__):
        return None
    attributes = getattr(value, "__dict__", None)
    return attributes if type(attributes) is dict and attributes else None


def _contents(names: Names) -> list[tuple[Any, Any]]:
    """Each list, dict or set the names hold (not Python's own, `__builtins__`, nor OWN_CONTENT), once, with a copy."""
    found: dict[int, tuple[Any, Any]] = {}
    for owner, _, was in names:
        living = OWN_CONTENT.get(_module_of(owner), ())
        for name, value in was.items():
            if isinstance(value, CONTAINERS) and name not in living and not name.startswith("__"):
                found.setdefault(id(value), (value, value.copy()))
    return list(found.values())


def put_back_standard(found: Held, classes_as_found: bool = False) -> None:
    """Each module and class of `found` (`standard_now`) holding again each name it held then, the same object, and
    each list, dict or set holding what it held then; where one did not, codecs' cache is emptied too (a name
    `encodings.aliases` gave, looked up, stayed cached). `classes_as_found`: a name a class gained since is taken
    away (`_take_gained`)."""
    for (owner, names, was), same in zip(found.names, _unchanged(*found.held_names)):
        if not same and classes_as_found and isinstance(owner, type):
            _take_gained(owner, names, was)
        if not same and not _holds(names, was):
            for name, value in was.items():
                if names.get(name, _GONE) is not value:
                    setattr(owner, name, value)
    changed = [(now, was) for (now, was), same in zip(found.contents, _unchanged(*found.held_contents)) if not same]
    for now, was in changed:
        refill(now, was)
    if changed:
        codecs.register(_none)  # unregistering a search function empties the cache (Python 3.10 and later)
        codecs.unregister(_none)
    _put_back_defaults(found)


def _take_gained(cls: type, names: Mapping[str, Any], was: dict[str, Any]) -> None:
    """Each name `cls` gained since it held `was` taken away (a module's are kept: its submodules, imported later): a
    method or an accessor a scorer's call added (`pandas.api.extensions.register_dataframe_accessor("x")`: every
    later call's registering it warned that it overrode one; `json.JSONEncoder.__eq__ = ...`: every later call's
    encoders equal); a cache a class keeps of itself (`__slotnames__`) is made again as it is needed."""
    for name in names.keys() - was.keys():
        delattr(cls, name)


def _defaults(function: types.FunctionType) -> tuple[Any, Any]:
    """A function's default arguments: positional, and keyword-only (a copy of their dict)."""
    kwdefaults = function.__kwdefaults__
    return function.__defaults__, dict(kwdefaults) if kwdefaults is not None else None


def _put_back_defaults(found: Held) -> None:
    """The default arguments of each function the modules and classes of `found` hold as found
    (`json.dumps.__kwdefaults__["sort_keys"] = True`: every later call's `json.dumps` sorted keys;
    `textwrap.fill.__defaults__ = (10,)`; `json.JSONEncoder.__init__`'s)."""
    now = list(map(DEFAULTS, found.functions))  # compared with the copies as they are: no copy made
    for function, (defaults, kwdefaults), same in zip(found.functions, found.defaults,
                                                       _unchanged(now, found.defaults)):
        if not same:
            function.__defaults__ = defaults
            function.__kwdefaults__ = dict(kwdefaults) if kwdefaults is not None else None


def _unchanged(lives: list[Any], copies: list[Any]) -> list[bool]:
    """Whether each of `lives` equals its copy, all compared in one pass (`map`, ~2 times as fast as one by one, a
    dict's own `==` ~2 times as fast as `_holds`); one by one where a comparison raised."""
    try:
        return list(map(operator.eq, lives, copies))
    except Exception:  # a replacement whose == raises (an array's truth)
        return [_same(live, was) for live, was in zip(lives, copies)]


def _holds(names: Mapping[str, Any], was: dict[str, Any]) -> bool:
    """Whether `names` holds all `was` held (by identity, or where a call replaced one by an equal object: a name
    gained since is kept); False where comparing a replacement raised."""
    try:
        return was.items() <= names.items()
    except Exception:  # a replacement whose == raises (an array's truth): put back
        return False


def _same(now: Any, was: Any) -> bool:
    """Whether a list, dict or set holds what its copy `was` does; False where comparing raised."""
    try:
        return bool(now == was)
    except Exception:  # an element whose == raises: put back
        return False


def refill(now: Any, was: Any) -> None:
    """A list, dict or set holding `was`'s content again, in place (the object its names are bound to)."""
    if isinstance(now, list):
        now[:] = was
    else:
        now.clear()
        now.update(was)


def _none(name: str) -> None:
    """A codec search function that finds nothing."""
    return None
