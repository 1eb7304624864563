"""The public Python API: every exported name resolves, and the audit functions load lazily."""

from __future__ import annotations

import subprocess
import sys

import benchrun
import benchrun.audit


def test_every_exported_name_exists():
    assert all(hasattr(benchrun, name) for name in benchrun.__all__)
    assert all(callable(getattr(benchrun.audit, name)) for name in benchrun.audit.__all__)
    assert sorted(benchrun.audit.__all__) == [
        "compare_runs", "export_rows", "list_runs", "metric_rows", "rescore_run", "resume_run", "samples",
        "verify_run", "write_csv", "write_jsonl", "write_report"]


def test_auditing_imports_no_hydra_and_no_runner_code():
    code = ("import sys, benchrun, benchrun.audit as a; a.list_runs; a.verify_run; a.compare_runs; a.rescore_run; "
            "a.write_report; print(sorted(m for m in sys.modules if m.split('.')[0] in ('hydra', 'ollama', 'httpx') "
            "or m.startswith('benchrun.execute.runners')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n"
