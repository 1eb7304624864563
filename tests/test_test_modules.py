"""The tests' own layout: what more than one test module uses lives in tests/helpers, fixtures in conftest.py, and no
module under tests/ imports from a test module or from conftest.py (which pytest loads itself)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def offending(source: str, package: str) -> list[str]:
    """The test modules and conftest modules that `source`, a module of `package`, imports, in order."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        for name in _imported(node, package):
            parts = name.split(".")
            if parts[0] == "tests" and len(parts) > 1 and (parts[1] == "conftest" or parts[1].startswith("test_")):
                module = ".".join(parts[:2])
                found += [] if module in found else [module]
    return found


def _imported(node: ast.AST, package: str) -> list[str]:
    """The dotted names an import statement names (a `from` import's module and each name in it), made absolute."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    module = node.module or ""
    if node.level:
        parents = package.split(".")[:len(package.split(".")) - node.level + 1]
        module = ".".join([*parents, *([node.module] if node.module else [])])
    return [module, *(f"{module}.{alias.name}" for alias in node.names)]


def test_no_module_of_the_tests_imports_a_test_module_or_conftest():
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        relative = path.relative_to(TESTS.parent)
        if path.name not in {"conftest.py"}:
            found[str(relative)] = offending(path.read_text(), ".".join(relative.parent.parts))
    assert {path: modules for path, modules in found.items() if modules} == {}


def test_the_rule_sees_every_form_of_import():
    source = ("import tests.test_run\nfrom tests.conftest import call_benchrun\nfrom tests import test_config\n"
              "from .test_faults import whole\nfrom . import conftest\nfrom tests.helpers.answers import BROKEN\n"
              "import benchrun.testing\n\n\ndef later():\n    from tests.test_cache import store\n")
    assert offending(source, "tests") == ["tests.test_run", "tests.conftest", "tests.test_config",
                                          "tests.test_faults", "tests.test_cache"]
    assert offending(source, "tests.helpers") == ["tests.test_run", "tests.conftest", "tests.test_config",
                                                  "tests.test_cache"]
