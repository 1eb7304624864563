"""The twenty-fourth hostile pass, the lead's part: what the helpers noticed and left, mended.

- `benchrun-audit cache` under a relative or empty $HOME (no XDG_CACHE_HOME) was told to give `cache_dir= or
  cache=false`, a run's keys the command does not take: it is told its own option, `--cache-dir`
  (`execute.cacheplace.cache_dir(option=)`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import run_benchrun


@pytest.mark.parametrize(("home", "why", "first"), [
    ("rel", "~ is the home directory, and $HOME is 'rel', not an absolute path (~ would be a folder of the working "
            "directory)", "set HOME to an absolute path"),
    ("", "~ is the home directory, and $HOME is empty (~ would be the file system's root)", "set HOME"),
])
def test_the_audit_cache_command_under_an_unusable_home_is_told_its_own_option(tmp_path: Path, home: str, why: str,
                                                                                first: str) -> None:
    done = run_benchrun("cache", cwd=tmp_path, module="benchrun.audit", env={"HOME": home, "XDG_CACHE_HOME": ""})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: --cache-dir: the response cache's place, ~/.cache/benchrun: {why}; {first}, or "
        "XDG_CACHE_HOME or --cache-dir\n"))
    assert list(tmp_path.iterdir()) == []
