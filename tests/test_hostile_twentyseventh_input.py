"""The twenty-seventh hostile pass of issue 19, the side of what goes in: the items the twenty-sixth pass left, then a
fresh pass. /work/notes/p27/result-input.md has the whole list, what held and what was left."""

from __future__ import annotations

from benchrun.compiler import ownsource
from benchrun.compiler.usercode import import_file
from tests.helpers.benchfiles import write_bench


def test_a_benchmark_file_and_its_own_modules_are_parsed_once_each(tmp_path, monkeypatch):
    """Before: refuse_unrecorded and refuse_shadowed each parsed every file again (custom_scorer.py and helpers.py
    twice each)."""
    bench = write_bench(tmp_path, {"helpers.py": "X = 1\n", "custom_scorer.py": (
        "import os\nimport sys\n\nsys.path.insert(0, os.path.dirname(__file__))\nfrom helpers import X\n\n\n"
        "def s(response, reference):\n    return X\n")})
    parsed: list[str] = []
    real = ownsource._parsed
    monkeypatch.setattr(ownsource, "_parsed", lambda path: parsed.append(path.name) or real(path))
    import_file(bench / "custom_scorer.py", "custom_scorer.py", probe=False)
    assert sorted(parsed) == ["custom_scorer.py", "helpers.py"]
