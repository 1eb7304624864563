"""Hostile input, thirteenth pass, the process side (issue 19's fresh pass of the same kinds): benchmark files,
configuration and real `python -m benchrun` processes under abuse, the cases it found bad, each with the rule it now
obeys.

- Hydra's flags that put another primary config in place of benchrun's (`-cp DIR`, `--config-path=DIR`, `-cn NAME`,
  `--config-name`, their heads `--config-p`, and `--experimental-rerun FILE`, which unpickles a file), or an override
  of benchrun's Hydra callbacks (`~hydra.callbacks.run_dir_check`, `hydra.callbacks.run_dir_check._target_=...`): the
  checks of the run directory were gone with them, so `hydra.run.dir=` an existing run had Hydra rewrite that run's
  copies of its config (`.hydra/config.yaml`, `overrides.yaml`) before the run's own claim refused it; with a user's
  config.yaml, `hydra.job.chdir=true` ran and the log's masking of credentials was gone. Now both are refused before
  Hydra composes anything, in one line (`compose.config.refuse_replaced_config`); `--config-dir DIR` (presets of the
  user's beside benchrun's, as the README shows) is taken as before
- `hydra.run.dir=outputs` (the folder every run goes to, holding its runs two levels down, `DATE/TIME_bench_model`),
  or `-m hydra.sweep.dir=outputs`: taken, since only the folder itself (and, for a sweep, the folders in it) was
  looked at. The run made there held the others among its files, and every later run to outputs/ was refused as
  `inside the run directory outputs`; the sweep's sweep.json listed the date folder as a job `missing`. Now a
  directory holding a run at any depth takes no run and no sweep (`archive.claims.held_run`, looked for breadth first
  in 10,000 folders at most, links not followed), one line naming the run found

What held: a run interrupted, then tasks.yml and custom_scorer.py edited before `resume`: resume refuses in one line
naming both files (`--force` to take them, recorded), verify names both as changed. `--cfg hydra`, `--cfg all
--resolve`, `--info all`, `--help`, `--hydra-help` with $OPENAI_API_KEY and $HF_TOKEN set: neither printed. `-cp` or
`--config-dir` naming a folder not there or /dev/null, `-cn nope`: one line each (now refused before Hydra looks). A
preset under `--config-dir` (`# @package _global_`) setting hydra.callbacks: benchrun's check still ran, the run's
copies untouched.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from benchrun.core.errors import EXIT
from benchrun.core.resources import conf_dir
from tests.helpers.commands import call_benchrun, make_run

OWN_CONFIG = ("benchrun's config is its own (conf/config.yaml: the checks of the run directory, the masking of "
              "credentials in its log); add presets of your own with --config-dir DIR, or finish a run with "
              "benchrun-audit resume RUN")
OWN_CALLBACKS = ("benchrun's Hydra callbacks are its own (they check the run directory before Hydra writes there, "
                 "and summarise a sweep); leave hydra.callbacks out")


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by its relative path, with its bytes."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def config_without_callbacks(root: Path) -> Path:
    """A copy of benchrun's conf/ whose config.yaml names no Hydra callback: a user's own primary config."""
    copy = Path(shutil.copytree(conf_dir(), root / "myconf"))
    config = yaml.safe_load((copy / "config.yaml").read_text())
    del config["hydra"]["callbacks"]
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    return copy


@pytest.mark.parametrize("flags, said", [
    (["-cp", "{conf}"], f"-cp: {OWN_CONFIG}"),
    (["-cp{conf}"], f"-cp{{conf}}: {OWN_CONFIG}"),
    (["--config-path={conf}"], f"--config-path={{conf}}: {OWN_CONFIG}"),
    (["--config-p", "{conf}"], f"--config-p: {OWN_CONFIG}"),
    (["--config-dir", "{conf}", "-cn", "config"], f"-cn: {OWN_CONFIG}"),
    (["--config-name=config"], f"--config-name=config: {OWN_CONFIG}"),
    (["--experimental-rerun", "{conf}/config.yaml"], f"--experimental-rerun: {OWN_CONFIG}"),
    (["--exp", "x"], f"--exp: {OWN_CONFIG}"),
    (["~hydra.callbacks.run_dir_check"], f"~hydra.callbacks.run_dir_check: {OWN_CALLBACKS}"),
    (["hydra.callbacks.run_dir_check._target_=hydra.experimental.callback.Callback"],
     f"hydra.callbacks.run_dir_check._target_=hydra.experimental.callback.Callback: {OWN_CALLBACKS}"),
    (["hydra.callbacks={}"], f"hydra.callbacks={{}}: {OWN_CALLBACKS}"),
    (["+hydra/callbacks=x"], f"+hydra/callbacks=x: {OWN_CALLBACKS}"),
])
def test_a_flag_or_override_taking_benchruns_config_away_is_refused_before_hydra_writes(tmp_path, flags, said):
    run_dir = make_run(tmp_path / "first")
    conf = config_without_callbacks(tmp_path)
    before = files_of(run_dir)
    given = [flag.replace("{conf}", str(conf)) for flag in flags]
    done = call_benchrun(*given, "task.path=listbench", f"hydra.run.dir={run_dir}", "hydra.job.chdir=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: {said.replace('{conf}', str(conf))}\n")
    assert files_of(run_dir) == before




@pytest.mark.parametrize("how", [("hydra.run.dir={outputs}",), ("-m", "hydra.sweep.dir={outputs}", "runner.model=a,b")])
def test_a_run_or_sweep_is_never_made_around_runs_deeper_down(tmp_path, how):
    run_dir = make_run(tmp_path)
    outputs = tmp_path / "outputs"
    before = files_of(outputs)
    given = [arg.replace("{outputs}", str(outputs)) for arg in how]
    done = call_benchrun(*given, "task.path=listbench", "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    chosen_by = "hydra.sweep.dir" if "-m" in how else "hydra.run.dir"
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: {outputs} holds the run directory {run_dir}: a run is never made around another run's "
        f"files; nothing was changed; pick a new directory ({chosen_by}=...)\n"))
    assert files_of(outputs) == before
    assert make_run(tmp_path).parent.parent == outputs
