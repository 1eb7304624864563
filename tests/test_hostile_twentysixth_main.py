"""The twenty-sixth hostile pass, the lead's part: what the last review noticed and left, mended.

- The plain error printer used before rich loads was written twice (`benchrun.__main__` and benchrun-audit's import
  guard), and benchrun-audit's copy printed a load failure's text as it was: a `rich.py` raising an error of two lines
  was said in two. One printer, `core.loading.plain_error`, says it on one line for both commands.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import run_benchrun


@pytest.mark.parametrize("module", ["benchrun", "benchrun.audit"])
def test_a_load_failure_of_two_lines_is_said_on_one_by_both_commands(tmp_path: Path, module: str) -> None:
    (tmp_path / "rich.py").write_text("raise ValueError('first\\nsecond')\n")
    result = run_benchrun("list" if module == "benchrun.audit" else "dry_run=true", cwd=tmp_path, module=module)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: Python could not load {tmp_path / 'rich.py'}, which benchrun needs: ValueError: first "
        f"second; {tmp_path / 'rich.py'} (as 'rich'), of the working directory or $PYTHONPATH, hides the library of "
        "that name that benchrun imports: rename it, or run benchrun from another directory\n"))
