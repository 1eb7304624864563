"""What importing a module loads, seen in a fresh interpreter (nothing another test imported counts)."""

from __future__ import annotations

import json
import subprocess
import sys


def loaded(module: str, *names: str) -> list[str]:
    """The modules among `names` (and their submodules) that importing `module` loads, in a fresh interpreter."""
    code = (f"import sys, json, {module}; names = {names!r}; "
            "print(json.dumps(sorted({n for m in sys.modules for n in names if m == n or m.startswith(n + '.')})))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)
