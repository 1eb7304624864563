"""Hostile input, nineteenth pass, the eighteenth pass's own code attacked (resume and retry `--set`,
`trust.config_changed`, weights said as a digest, `archive.lookup`, the fence): the cases found bad, each with the rule
it now obeys.

- a run that ended (failed, interrupted) whose config.yaml was removed, emptied or replaced by a folder: `resume` said
  `the benchmark's sources changed since run ...: the benchmark directory (missing); resume with --force to use them
  anyway`, and `--force` then failed on config.yaml (`in '.../config.yaml': missing`, `in 'config': 'task' is
  required`, exit 2). config.yaml is what locates the benchmark: a resume now checks it first, and says it changed
  since the run ended, with the way on (put it back) (`audit.resume.asked_config`)
"""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.chat import Reply
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.commands import call_benchrun

pytestmark = pytest.mark.slow


def _broken(req):
    return Reply(status=500, error="boom")


def _failed_run(tmp_path):
    """A run that failed fast (its server answers 500 to every chat): resumable."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "tasks.yml").write_text(
        "- name: t\n  template: 'what is {a} + 1?'\n  values:\n    a: [1, 2, 3, 4, 5, 6]\n"
        "  reference: [2, 3, 4, 5, 6, 7]\n  scorer: exact_match\n")
    with FakeOllama(models=["llama3.2"], responder=_broken) as server:
        done = call_benchrun("task.path=bench", f"runner.host={server.url}", "runner.retries=0", "cache=false",
                             f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    assert done.returncode == EXIT["runner"], done.stderr
    [run_dir] = (tmp_path / "o").glob("*/*")
    return run_dir


def _files(run_dir) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}


@pytest.mark.parametrize(("spoil", "said"), [
    (lambda config: config.unlink(), "missing"),
    (lambda config: config.write_text(""), "changed since the run ended"),
    (lambda config: (config.unlink(), config.mkdir()), "a directory in its place"),
])
def test_a_config_yaml_removed_or_emptied_after_the_run_ended_is_said_so_by_resume(tmp_path, spoil, said):
    """Before: `the benchmark's sources changed since run ...: the benchmark directory (missing); resume with --force
    to use them anyway`, and --force then failed on config.yaml."""
    run_dir = _failed_run(tmp_path)
    spoil(run_dir / "config.yaml")
    before = _files(run_dir)
    done = [call_benchrun("resume", str(run_dir), *force, cwd=tmp_path, module="benchrun.audit")
            for force in ([], ["--force"])]
    line = (f"benchrun: error: in '{run_dir}': config.yaml: {said}: a resume asks with it and would digest it as the "
            "run's own; put it back (to ask the rest with other limits: --set runner.KEY=VALUE)\n")
    assert [(each.returncode, each.stderr) for each in done] == [(EXIT["archive"], line)] * 2
    assert _files(run_dir) == before
    assert json.loads(before["run.json"])["status"] == "failed"
