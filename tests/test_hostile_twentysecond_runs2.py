"""Hostile input, twenty-second pass, the files-and-processes side's second wave (issue 19's fresh pass of the same
kinds): hostile command lines, sweeps and launchers, the cases it found bad, each with the rule it now obeys.

- a typo in a setting of the joblib launcher (`hydra/launcher=joblib +hydra.launcher.n_job=2`): Hydra's launcher
  hands every key to joblib.Parallel, whose loky backend dropped the one it does not name: the sweep ran with
  joblib's default number of workers, nothing said. Now refused in one line with the name meant, a dry run alike,
  while the keys joblib reads down its loky chain (`idle_worker_timeout`) are taken
  (`compose.lokykeys`, asked by `compose.hydragiven._check_launcher_keys`); and `hydra.launcher.n_jobs=0`, which a
  dry run passed and the sweep refused as joblib launched it, now refused alike (`_check_joblib_jobs`)
- a runner preset of the user's own beside a runner file (`--config-dir my runner=gpu1 runner_file=runner.yml`):
  refused whatever the preset was, saying `the runner file gives runner_type ollama, the type of the runner used, so
  this one would never be` of an Ollama preset (its name compared with the file's type), so a preset giving the host
  could never be used with a runner file. Now the preset's type is compared, and a key the preset itself gives that
  the file gives another value of (`model: gemma3` beside the file's llama3.2) is refused, the file's being the one
  asked (`compose.runnerfile.refuse_replaced`)
- the Python API given what is not a config (`benchrun.compile("demo:listbench")`, `compile(None)`, a runner given as
  a name `{'runner': 'ollama'}` or None): `ValueError: dictionary update sequence element #0 has length 1; 2 is
  required`, `TypeError: 'NoneType' object is not iterable`, `AttributeError: 'str' object has no attribute 'items'`.
  Now a TypeError saying what it takes, and the schema's ConfigError for the runner (`compose.config.plain_config`)
- a sweep of many jobs (`-m runner.options.seed=range(0,30)`): its table, a column per job, could not be set at the
  console's width, and rich narrowed every column until each cell said `1…` (60 jobs: empty cells), the speed table
  alike: every number of the sweep lost from what it printed. Now such a table is printed with a row per job
  (`console.output.fitting`)
"""

from __future__ import annotations

import pytest

import benchrun
from benchrun.core.errors import EXIT, ConfigError
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.benchfiles import task, tasks_yml, write_bench
from tests.helpers.commands import bench_run, call_benchrun

JOBLIB_REFUSED = {
    "+hydra.launcher.n_job=2": "hydra.launcher.n_job: unknown setting 'n_job' (did you mean 'n_jobs'?) of the joblib "
                               "launcher, which joblib does not take (a key it does not name is dropped unread)",
    "hydra.launcher.n_jobs=0": "hydra.launcher.n_jobs=0: n_jobs == 0 in Parallel has no meaning (joblib's words); give "
                               "the number of jobs run at once (-1: one per CPU)",
}
"""A typo joblib dropped (the sweep ran with its default), and a number of jobs joblib refused only as it launched (a
dry run passed it)."""


@pytest.mark.parametrize("dry", [[], ["dry_run=true"]])
@pytest.mark.parametrize("setting", sorted(JOBLIB_REFUSED))
def test_a_joblib_launcher_setting_joblib_would_drop_or_refuse_is_refused_first(tmp_path, setting, dry):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=joblib", setting,
                         "runner.host=http://127.0.0.1:9", *dry, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: {JOBLIB_REFUSED[setting]}\n")
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("setting", ["hydra.launcher.n_jobs=-1", "+hydra.launcher.idle_worker_timeout=10", "hydra.launcher.max_nbytes=2M",
                                     "hydra.launcher.n_jobs=2"])
def test_the_settings_joblib_reads_are_taken(tmp_path, setting):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "hydra/launcher=joblib", setting, "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert done.stdout.count("dry run: no model was called") == 2


def _preset_beside_runner_file(tmp_path, preset):
    write_bench(tmp_path, {"tasks.yml": tasks_yml(task()), "runner.yml": "runner_type: ollama\nmodel: 'llama3.2'\n"})
    (tmp_path / "my" / "runner").mkdir(parents=True)
    (tmp_path / "my" / "runner" / "gpu1.yaml").write_text(f"defaults: [ollama, _self_]\n{preset}")
    return call_benchrun("--config-dir", "my", "runner=gpu1", "task.path=bench", "runner_file=bench/runner.yml",
                         "dry_run=true", cwd=tmp_path)


def test_a_runner_preset_of_ones_own_whose_model_the_runner_file_replaces_is_refused(tmp_path):
    done = _preset_beside_runner_file(tmp_path, "model: gemma3\nhost: http://127.0.0.1:9\n")
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: in 'config': runner=gpu1: the preset gives runner.model gemma3, and the "
        "runner file 'bench/runner.yml' gives model llama3.2, whose value takes its place, so the preset's would never "
        "be asked; give it in one place\n")


@pytest.mark.parametrize("preset", ["host: http://127.0.0.1:9\n", "model: llama3.2\n"])
def test_a_runner_preset_of_ones_own_of_the_runner_files_type_is_taken_beside_it(tmp_path, preset):
    done = _preset_beside_runner_file(tmp_path, preset)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert "bench · ollama · llama3.2" in done.stdout


@pytest.mark.parametrize("config, kind", [("demo:listbench", "str"), (None, "NoneType"), (["task"], "list")])
def test_the_api_given_what_is_not_a_config_says_what_it_takes(config, kind):
    with pytest.raises(TypeError) as raised:
        benchrun.compile(config)
    assert str(raised.value) == ("a config (a DictConfig as Hydra composes it, or a mapping of its keys: {'task': "
                                 f"{{'path': ..., 'name': ...}}, 'runner': {{...}}}}), not {kind}")


@pytest.mark.parametrize("runner", ["ollama", None])
def test_the_api_given_a_runner_that_is_not_a_mapping_says_so_of_runner(runner):
    with pytest.raises(ConfigError) as raised:
        benchrun.compile({"task": {"path": "demo:listbench", "name": "listbench"}, "runner": runner})
    assert str(raised.value) == "in 'config': runner: Input should be a valid dictionary or object to extract fields from"


@pytest.mark.slow
def test_a_sweep_of_more_jobs_than_the_console_sets_side_by_side_prints_a_row_a_job(tmp_path):
    with FakeOllama(responder=listbench_answer) as server:
        done = bench_run(tmp_path, server.url, "runner.options.seed=range(0,20)", "task.only=[product]",
                         f"cache_dir={tmp_path / 'cache'}", multirun=True)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    table = done.stdout[done.stdout.index("\nsweep "):]
    assert "…" not in table
    assert "│ job     │ task    │ metric            │   mean ± stderr (n) │" in table.replace("┃", "│")
    assert all(f"│ seed={n:<2} │ product │ calculated_answer │ 0.667 ± 0.333 (n=3) │" in table for n in range(20))
    assert all(f"│ seed={n:<2} │ product │ format_valid      │ 1.000 ± 0.000 (n=3) │" in table for n in range(20))
    assert all(f"│ seed={n:<2} │" in table[table.index("\nspeed "):] for n in range(20))
