"""The twenty-eighth hostile pass, the lead's part: the last review's findings whose rule changes what a command says.

- compare worked out the rest of two manifests (`Inputs.manifest`: each task's own fields, a digest of every sample's
  values) for every pair of runs, and `--json` printed it beside the config and files that already said what
  differs; it is looked at only when nothing else but provenance differs (`audit.inputs.inputs`), else null.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchrun.core.errors import EXIT
from tests.helpers.archives import replace_manifest, synthetic_run
from tests.helpers.auditcli import audit


def _compared(cwd: Path, first: Path, second: Path) -> dict:
    done = audit(cwd, "compare", str(first), str(second), "--json")
    assert done.returncode == EXIT["ok"], done.stderr
    return json.loads(done.stdout)["comparisons"][0]["inputs"]


def test_compare_looks_at_the_rest_of_the_manifests_only_when_nothing_else_differs(tmp_path):
    first = synthetic_run(tmp_path / "a", [1, 0], run_id="a" * 12)
    other_config = synthetic_run(tmp_path / "b", [1, 0], run_id="b" * 12, config="task: {path: elsewhere}\n")
    replace_manifest(other_config, lambda manifest: manifest.update(benchmark="other", config={"task": {"x": 1}}))
    only_manifest = synthetic_run(tmp_path / "c", [1, 0], run_id="c" * 12)
    replace_manifest(only_manifest, lambda manifest: manifest.update(benchmark="other"))
    assert _compared(tmp_path, first, other_config)["manifest"] is None
    assert _compared(tmp_path, first, other_config)["config"]["added"] == {"task.x": 1}
    assert _compared(tmp_path, first, only_manifest)["manifest"] == {
        "added": {}, "removed": {}, "changed": {"benchmark": ["synthetic", "other"]}}
