"""The house keeps its plan (docs/architecture.md): the stages as packages, imports running one way (those inside
functions too; those for annotations only, under TYPE_CHECKING, are never executed and left out), no cycle, a handful of modules at the top, none over 400 lines, each run-directory file name written
in one module."""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

import benchrun
from benchrun.core import layout

PACKAGE = Path(benchrun.__file__).resolve().parent
RANK = {"core": 0, "compose": 1, "compiler": 1, "archive": 2, "console": 3, "execute": 4, "audit": 5, "entry": 6}
"""A module imports only from its own stage or from a stage of a lower rank."""
SUPPORT = ("testing", "demos")
"""Not stages: the loopback stand-ins and the shipped benchmarks, which no stage imports."""
FILE_NAMES = {layout.CONFIG, layout.MANIFEST, layout.RUN, layout.SUMMARY, layout.SEAL, layout.RESPONSES,
              layout.SCORES, layout.DIGESTS, layout.LOG, layout.LOCK, layout.RESERVE, layout.RESCORES,
              layout.RESCORE_FILE, layout.RESCORE_LOG, layout.SWEEP_FILE, layout.MULTIRUN_FILE}


@cache
def modules() -> dict[str, Path]:
    """Every module of the stages and the entry, by dotted name (read once: every test here asks it in loops)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if len(parts) > 2 and parts[1] in SUPPORT:
            continue
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in RANK) else "entry"


def imported(source: str, known: set[str] | dict[str, Path]) -> frozenset[str]:
    """The benchrun modules `source` imports anywhere in its code (a name imported from a package, when it is a
    module of that package among `known`, is that module)."""
    found = set()
    for node in _runtime(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                inner = f"{node.module}.{alias.name}"
                found.add(inner if inner in known else node.module)
    return frozenset(name for name in found if name.split(".")[0] == "benchrun")


def _runtime(tree: ast.AST) -> list[ast.AST]:
    """The nodes of `tree` outside `if TYPE_CHECKING:` blocks (imports for annotations only, never executed)."""
    typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                   for child in block.body for node in ast.walk(child)}
    return [node for node in ast.walk(tree) if id(node) not in typing_only]


@cache
def imports(module: str) -> frozenset[str]:
    known = modules()
    return imported(known[module].read_text(encoding="utf-8"), known) - {module}


def test_every_import_runs_from_a_stage_to_its_own_or_a_lower_one():
    wrong = [f"{module} ({stage(module)}) imports {other} ({stage(other)})"
             for module in modules() for other in imports(module)
             if other in modules() and stage(other) != stage(module) and RANK[stage(other)] >= RANK[stage(module)]]
    assert wrong == []


def test_no_stage_imports_the_test_stand_ins():
    assert [(m, o) for m in modules() for o in imports(m) if o.split(".")[1:2] == ["testing"]] == []


def test_there_is_no_import_cycle():
    graph = {module: {other for other in imports(module) if other in modules()} for module in modules()}
    state: dict[str, int] = {}
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for other in sorted(graph[module]):
            if state.get(other) == 1:
                cycles.append(path[path.index(other):] + [other])
            elif other not in state:
                visit(other, [*path, other])
        state[module] = 2
    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_at_most_six_modules_at_the_top():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "app.py", "callbacks.py", "cli.py"]


def test_every_package_says_what_it_owns():
    packages = [path for path in PACKAGE.rglob("__init__.py")]
    assert [str(p) for p in packages if not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))] == []


def test_no_module_is_over_400_lines():
    long = {str(path.relative_to(PACKAGE)): n for path in PACKAGE.rglob("*.py")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}


def test_each_run_directory_file_name_is_written_in_one_module():
    """As a string of its own (`"run.json"`), each name stands in core/layout.py and nowhere else."""
    where = {}
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in FILE_NAMES:
                where.setdefault(node.value, set()).add(module)
    assert where == {name: {"benchrun.core.layout"} for name in FILE_NAMES}


def test_the_checker_sees_lazy_imports_and_names_imported_from_a_package():
    source = ("from benchrun.console import output\n\n\ndef later():\n    import benchrun.audit.show\n"
              "    from benchrun.core.records import Counts\n    import json\n")
    assert imported(source, modules()) == {"benchrun.console.output", "benchrun.audit.show", "benchrun.core.records"}


def test_imports_are_sorted_and_every_name_is_used():
    """ruff's pyflakes and import-sorting rules (configured in pyproject.toml) find nothing."""
    checked = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "benchrun", "tests", "benchmarks"],
                             cwd=PACKAGE.parent, capture_output=True, text=True)
    assert (checked.returncode, checked.stdout) == (0, "All checks passed!\n"), checked.stdout + checked.stderr
