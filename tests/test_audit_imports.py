"""Fast audits: importing an audit command loads no compiler, Hydra, omegaconf, jsonschema or runner code (each in a
fresh interpreter, so nothing another test imported counts); `rescore` may load what grading needs (jsonschema, for
format_valid) but not Hydra or omegaconf; `resume` and `retry` ask a model, so they load the runner and the
compiler's plan, but not Hydra. No command that only reads loads rich's progress bar (a run's), and none loads
scipy before it computes a t interval. The start-up time itself is measured by benchmarks/audit_startup.py, not
here."""

from __future__ import annotations

import pytest

from tests.helpers.freshimports import loaded

HEAVY = ("hydra", "omegaconf", "jsonschema", "benchrun.compiler.plan", "benchrun.compose.config", "benchrun.execute.runners")
READERS = ("listing", "show", "export", "compare", "report", "verify", "stats", "significance", "report_svg",
           "cache", "merge")


@pytest.mark.parametrize("command", READERS)
def test_reading_commands_load_nothing_heavy(command):
    assert loaded(f"benchrun.audit.{command}", *HEAVY) == []


def test_the_audit_entry_point_and_the_package_load_nothing_heavy():
    assert loaded("benchrun.audit.__main__", *HEAVY) == []
    assert loaded("benchrun", *HEAVY, "benchrun.archive.reader", "benchrun.core.manifest", "pydantic") == []


def test_rescore_loads_grading_but_no_hydra_or_omegaconf():
    assert loaded("benchrun.audit.rescore", *HEAVY) == ["jsonschema"]


@pytest.mark.parametrize("command", ["resume", "retry"])
def test_resume_and_retry_load_the_runner_but_not_hydra(command):
    assert loaded(f"benchrun.audit.{command}", "hydra", "benchrun.compiler.plan", "benchrun.execute.runners") == [
        "benchrun.compiler.plan", "benchrun.execute.runners"]


def test_list_loads_no_manifest_models_and_no_event_loop():
    assert loaded("benchrun.audit.listing", "benchrun.core.manifest", "asyncio") == []


@pytest.mark.parametrize("command", [*READERS, "__main__", "rescore"])
def test_no_audit_command_loads_the_progress_bar_or_scipy(command):
    assert loaded(f"benchrun.audit.{command}", "rich.progress", "benchrun.console.progress", "scipy") == []


def test_the_console_loads_the_progress_bar_only_for_a_run():
    assert loaded("benchrun.console.output", "rich.progress", "benchrun.console.progress") == []
