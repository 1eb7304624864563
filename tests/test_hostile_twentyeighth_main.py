"""The twenty-eighth hostile pass, the lead's part: the last review's findings whose rule changes what a command says.

- compare worked out the rest of two manifests (`Inputs.manifest`: each task's own fields, a digest of every sample's
  values) for every pair of runs, and `--json` printed it beside the config and files that already said what
  differs; it is looked at only when nothing else but provenance differs (`audit.inputs.inputs`), else null.
- `rescore --rejudge judge.runner=ollama` of a run whose judge was never asked (its preflight failed: run.json has no
  `judge`) was refused as naming "a model of runner None": the runner type an override is told from is the run's
  config's (`audit.rejudge.rejudged_config`), not run.json's record of a judge asked.
- A finished run's (or rescore's) summary.json `judges` agreement (self-agreement, kappas), which show prints, edited
  and sealed again: verify said intact, checking the metric lines alone; the agreement is what the judge calls and
  scores make (`audit.summarycheck`), a rescore's of the run's calls it read again unless it asked the judge anew.
- A run's or a sweep's directory that cannot be made (`hydra.run.dir=/proc/x`, `-m hydra.sweep.dir=FILE/y`,
  `outputs=/dev/null`) was said `not a directory: FILE/y`, naming neither what was being made nor the key: the line
  says both before the error (`core.errors.making_said`, for Hydra's run directory and benchrun's claim of a sweep's).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import replace_manifest, reseal, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.p28_archive import redigested


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


def test_a_rejudge_of_a_run_whose_judge_was_never_asked_tells_its_runner_from_the_config(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        run = bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5",
                        "judge.host=http://127.0.0.1:9")
        run_dir = next(tmp_path.rglob("run.json")).parent
        info = json.loads((run_dir / "run.json").read_text())
        assert (run.returncode, info["status"], info.get("judge")) == (EXIT["runner"], "failed", None)
        rejudged = call_benchrun("rescore", str(run_dir), "--rejudge", "judge.runner=ollama", f"judge.host={server.url}",
                                 cwd=tmp_path, module="benchrun.audit")
    assert rejudged.returncode == EXIT["ok"], rejudged.stderr
    assert (run_dir / "rescores" / "001" / "rescore.json").is_file()


def _kappa_edited(data: dict) -> None:
    data["judges"]["names"]["kappa"] = 0.5


def test_a_judges_agreement_its_calls_do_not_make_fails_verify(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=answer) as server:
        run_dir = run_dir_of(bench_run(tmp_path, server.url, "task.path=bench", "cache=false", "judge.model=qwen2.5",
                                       "judge.repeats=2").stdout)
    assert audit(tmp_path, "rescore", str(run_dir)).returncode == EXIT["ok"]
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"
    made = json.dumps(json.loads((run_dir / "summary.json").read_text())["judges"]["names"], sort_keys=True)
    edited = made.replace('"kappa": 1.0', '"kappa": 0.5')
    summary = json.loads((run_dir / "summary.json").read_text())
    _kappa_edited(summary)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    reseal(run_dir, "summary.json")
    redigested(run_dir / "rescores" / "001", "summary.json", _kappa_edited)
    failed = [line for line in audit(tmp_path, "verify", str(run_dir)).stdout.splitlines() if line.startswith("FAIL")]
    assert failed == [
        f"FAIL  summary.json: judges.names: summary.json's agreement is {edited}, its judge calls and scores make "
        f"{made}: show, list and compare read it, export and report read the records",
        f"FAIL  rescores/001/summary.json: judges.names: summary.json's agreement is {edited}, its judge calls and "
        f"scores make {made}: not as the rescore wrote it, which tallied its records"]


def test_a_run_or_sweep_directory_that_cannot_be_made_is_said_with_its_key(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("mine\n")
    run = call_benchrun("runner.host=http://127.0.0.1:9", f"hydra.run.dir={taken / 'run'}", cwd=tmp_path)
    sweep = call_benchrun("-m", "runner.host=http://127.0.0.1:9", f"hydra.sweep.dir={taken / 'sweep'}", cwd=tmp_path)
    assert [(done.returncode, done.stdout, done.stderr) for done in (run, sweep)] == [
        (EXIT["archive"], "", f"benchrun: error: the {what} directory {taken / what} (hydra.{what}.dir, made of "
                              f"outputs= unless given) cannot be made: not a directory: {taken / what}; nothing was "
                              "recorded\n")
        for what in ("run", "sweep")]
    assert [path.name for path in tmp_path.iterdir()] == ["taken"]
