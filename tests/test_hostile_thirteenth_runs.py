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
  user's beside benchrun's, as the README shows) and a callback of the user's added beside benchrun's
  (`+hydra.callbacks.mine._target_=...`, as the fault lab adds its pauses) are taken as before
- `hydra.run.dir=outputs` (the folder every run goes to, holding its runs two levels down, `DATE/TIME_bench_model`),
  or `-m hydra.sweep.dir=outputs`: taken, since only the folder itself (and, for a sweep, the folders in it) was
  looked at. The run made there held the others among its files, and every later run to outputs/ was refused as
  `inside the run directory outputs`; the sweep's sweep.json listed the date folder as a job `missing`. Now a
  directory holding a run at any depth takes no run and no sweep (`archive.claims.held_run`, looked for breadth first
  in 10,000 folders at most, links not followed), one line naming the run found
- the same sweep started twice with one `hydra.sweep.dir` (a script run twice, two terminals): the second passed the
  check (no sweep.json or job's run.json there yet) and went on into the first's directory; each sweep's jobs were
  refused where the other's ran, one sweep exited 0 with a sweep.json listing the other's job as its own, the other
  exited 1 printing `job 1_gemma3 (gemma3) running: None`. Now a sweep claims its directory by making its
  multirun.yaml, as only one process can (`callbacks._claim`), and a directory holding a multirun.yaml (a sweep that
  has started, no job yet) holds a sweep (`archive.claims.holds_sweep`): the second is refused in one line, nothing
  of the first's touched
- a flag of Hydra's after an override (`python -m benchrun task.path=b --cfg job runner.model=x`, `... --config-dir
  DIR runner=gpu1`, `... --info runner.model=x`): Hydra's usage message of nine lines, `unrecognized arguments:
  runner.model=x` (the seventh pass took `-m` wherever it stands, no other flag). Now every flag is put before the
  overrides with its value, as argparse reads it (`--config-d DIR`, `--cfg=job`, a bare `--info`), and the command
  runs as written (`__main__._flags_first`)
- a benchmark file that cannot be read when a run is resumed (custom_scorer.py replaced by a link to /dev/zero, or by
  a named pipe): `resume` said `the benchmark's sources changed since run ...: the benchmark directory (missing)` of
  a directory that is there. Now it names the file and what is wrong with it, as a run's compile does
  (`audit.resume.changed_sources`); a benchmark directory that is gone is still `(missing)`

What held: a run interrupted, then tasks.yml and custom_scorer.py edited before `resume`: resume refuses in one line
naming both files (`--force` to take them, recorded), verify names both as changed. `--cfg hydra`, `--cfg all
--resolve`, `--info all`, `--help`, `--hydra-help` with $OPENAI_API_KEY and $HF_TOKEN set: neither printed. `-cp` or
`--config-dir` naming a folder not there or /dev/null, `-cn nope`: one line each (now refused before Hydra looks). A
preset under `--config-dir` (`# @package _global_`) setting hydra.callbacks: benchrun's check still ran, the run's
copies untouched. custom_scorer.py edited between compile and the scorer process's import: refused by the source
hash the run recorded. `hydra.mode=MULTIRUN` without `-m`: a sweep, with every check of one. `hydra.run.dir=` the
benchmark's own folder: the run made there verifies intact, and the benchmark compiles as before (a run's files are
not its sources). SIGTSTP then SIGCONT while samples are asked: completed, exit 0. `ulimit -v` of 250,000 to
1,500,000 KiB over a joblib sweep: completed. `ulimit -n 40` with runner.concurrency=64 over 20 samples: completed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from benchrun.compose import sweptonce
from benchrun.core.errors import EXIT
from benchrun.core.resources import conf_dir
from benchrun.testing.lab import half_right
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers import killed
from tests.helpers.commands import call_benchrun, make_run, run_benchrun

pytestmark = pytest.mark.slow

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


def sweep_into(sweep_dir: Path) -> tuple[int, str, str, dict[str, bytes]]:
    """A sweep into `sweep_dir`: its exit code, output, errors, and the files then in `sweep_dir`."""
    done = call_benchrun("-m", f"hydra.sweep.dir={sweep_dir}", "runner.model=a,b", "task.path=listbench",
                         "runner.host=http://127.0.0.1:9", cwd=sweep_dir.parent)
    return done.returncode, done.stdout, done.stderr, files_of(sweep_dir)


def refused(sweep_dir: Path, said: str, written: bytes) -> tuple[int, str, str, dict[str, bytes]]:
    """What `sweep_into` gives where another sweep's multirun.yaml holds `written`: refused, saying `said`, the file
    as it was."""
    return (EXIT["usage"], "", f"benchrun: error: {sweep_dir} {said}; nothing was changed; pick a new directory "
            "(hydra.sweep.dir=...)\n", {"multirun.yaml": written})


def test_a_sweep_directory_taken_by_another_sweep_as_this_one_starts_is_refused(tmp_path, monkeypatch):
    """The other sweep (the same command started twice) makes the directory between this one's checks and its
    claim; its multirun.yaml is left as it wrote it."""
    sweep_dir = tmp_path / "sweep"

    def other_sweep_starts(swept, runner_type):
        sweep_dir.mkdir()
        (sweep_dir / "multirun.yaml").write_text("the other sweep's\n")

    monkeypatch.setattr(sweptonce, "refuse_swept_twice", other_sweep_starts)
    assert sweep_into(sweep_dir) == refused(
        sweep_dir, "was taken by another sweep as this one started (the same sweep started twice?)",
        b"the other sweep's\n")


def test_a_sweep_directory_whose_sweep_has_started_no_job_yet_is_refused(tmp_path):
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    (sweep_dir / "multirun.yaml").write_text("hydra: {}\n")
    assert sweep_into(sweep_dir) == refused(sweep_dir, "already holds a sweep", b"hydra: {}\n")


@pytest.mark.parametrize("args, shown", [
    (["task.path=listbench", "--cfg", "job", "runner.model=after"], "  model: after\n"),
    (["runner.model=after", "--cfg=job", "--resolve", "task.name=late"], "  name: late\n"),
    (["task.path=listbench", "--info", "runner.model=after"], "  model: after\n"),
    (["runner.model=before", "--info", "config", "runner.model=after"], "  model: after\n"),
    (["runner.model=before", "--config-d", "myconf", "--cfg", "job", "runner.model=after"], "  model: after\n"),
])
def test_a_flag_among_the_overrides_is_taken_with_the_overrides_after_it(tmp_path, args, shown):
    (tmp_path / "myconf").mkdir()
    done = call_benchrun(*args, cwd=tmp_path)
    assert (done.returncode, done.stderr, shown in done.stdout) == (EXIT["ok"], "", True)


@pytest.mark.parametrize("replace, said", [
    (lambda path: path.symlink_to("/dev/zero"),
     "links outside the benchmark directory (to /dev/zero); benchrun reads only files inside it"),
    (lambda path: os.mkfifo(path), "a named pipe (FIFO), where a file belongs: benchrun reads only regular files"),
])
def test_resume_names_a_benchmark_file_that_cannot_be_read_now(tmp_path, replace, said):
    bench = killed.write_bench(tmp_path / "bench")
    with FakeOllama(responder=half_right, latency_s=0.05) as server:
        run_dir = killed.killed_run(tmp_path, server)
    (bench / "custom_scorer.py").unlink()
    replace(bench / "custom_scorer.py")
    before = files_of(run_dir)
    done = run_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        f"benchrun: error: the benchmark's sources changed since run {run_id}: in 'custom_scorer.py': {said}; resume "
        "with --force to use them anyway (recorded in run.json)\n"))
    assert files_of(run_dir) == before


@pytest.mark.parametrize("package, shown", [("hydra", "verbose: false"), ("hydra.callbacks", "run_dir_check:")])
def test_a_flags_value_naming_hydra_is_no_override_of_its_callbacks(tmp_path, package, shown):
    done = call_benchrun("--cfg", "hydra", "--package", package, cwd=tmp_path)
    assert (done.returncode, done.stderr, shown in done.stdout) == (EXIT["ok"], "", True)
