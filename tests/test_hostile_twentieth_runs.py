"""Hostile input, twentieth pass, the files-and-processes side (issue 19's fresh pass of the same kinds): hostile
command lines, sweeps and process surroundings, the cases it found bad, each with the rule it now obeys.

- a benchmark's custom_scorer.py that registers an OmegaConf resolver of its own at import
  (`OmegaConf.register_new_resolver("double", ...)`): in a sweep over models, each job imports the file in the one
  process, so every job after the first was refused (`cannot import: ValueError: resolver 'double' is already
  registered`); one that replaced a resolver (`oc.env`, benchrun's `slug`, `replace=True`) chose the server the
  sweep's next job asked and the directory its summary went to (none written, exit 4). Now OmegaConf's resolvers are
  put back after user code runs in the process (`compiler.runstate`)
- a sweep over `outputs` (`-m outputs=a,b`): two jobs asking the same, both written under the default outputs/ (the
  sweep's directory is made of `outputs` once), neither in a nor b, each saying in its config.yaml it was
  (`outputs: b`). Now refused before anything is made, as a sweep over dry_run is (`compose.sweepsize.WHOLE_SWEEP`;
  the rev19 side found it too, and its test is the one kept: tests/test_hostile_twentieth_rev19.py)
- a sweep whose jobs each list several models (`-m runner_file=multiple_models.yml runner.options.temperature=0,0.5`,
  or `runner.model=[a,b]`): each job ran its models as a sweep of its own inside the job's directory, which the
  sweep's summary listed as missing (`job 0_temperature-0 (unknown model) missing: the job left no run.json`, exit 1,
  every run completed), each run labelled by its model alone. Now each such job is refused in one line, recorded as
  failed, before anything is asked (`compose.sweepsize.one_model_a_job`, from `app.run`)
- a runner key given on the command line that the runner file gives too (`-m runner.model=llama3.2,mistral
  runner_file=runner.yml`, the seed's file naming llama3.2): the file's value took its place unsaid, so both jobs
  asked llama3.2, one labelled mistral (its directory, label, varied and its column of the sweep's table: llama3.2's
  scores as mistral's); a single run's `runner.model=mistral` asked llama3.2; alike `-m runner=ollama,openai` with a
  file of `runner_type: ollama` (the job labelled openai asked Ollama). Now refused in one line
  (`compose.runnerfile.refuse_replaced`, from `app.run`)
- a Slurm sweep of more jobs than one job array holds (`-m runner.options.seed=range(0,1500)`, MaxArraySize 1001):
  Hydra composed every job's config first (five minutes, saying nothing), then sbatch refused the array (`hydra/launcher
  could not launch the sweep's jobs: sbatch: error: Batch job submission failed: Invalid job array specification`),
  naming neither the limit nor the fix. Now refused at once, before anything is made
  (`compose.slurmoptions.array_too_long`, in `callbacks._check_slurm`)
- a sweep over model presets whose model the command line sets (`-m model=gemma3,llama3.2 runner.model=mistral`, to
  compare the presets' options on one model): both jobs asked mistral, labelled `gemma3` and `llama3.2` (their
  directories, run.json and the sweep's columns: mistral's scores under two other models' names). Now a preset is
  labelled bare only when its name is the model asked, else `model=gemma3` (`compose.labels.label`); alike a sweep
  over benchmark presets whose path the command line sets (`-m task=listbench,folderbench task.path=b`: both jobs
  asked b, one manifest, labelled `listbench` and `folderbench`), now `task=listbench`
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from benchrun.compose.labels import label
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun
from tests.helpers.judges import JUDGES, RESPONSE, TASKS

ONE_TASK = "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n  scorer: s\n"
SCORER = "def s(response, reference):\n    return 1\n"


def _statuses(sweep_dir, jobs):
    return [json.loads((sweep_dir / job / "run.json").read_text())["status"] for job in jobs]


@pytest.mark.slow
@pytest.mark.parametrize(("registered", "swept", "jobs"), [
    ('OmegaConf.register_new_resolver("double", lambda x: 2 * int(x))\n', ["task.path=a",
                                                                          "runner.model=llama3.2,gemma3"],
     ["0_llama3.2", "1_gemma3"]),
    ('OmegaConf.register_new_resolver("oc.env", lambda *args: "http://127.0.0.1:9", replace=True)\n'
     'OmegaConf.register_new_resolver("slug", lambda *args: "elsewhere", replace=True)\n', ["task.path=a,b"],
     ["0_a", "1_b"])])
def test_a_benchmark_file_registering_a_resolver_at_import_changes_no_later_job_of_a_sweep(tmp_path, registered,
                                                                                           swept, jobs):
    write_bench(tmp_path, {"tasks.yml": ONE_TASK,
                           "custom_scorer.py": f"from omegaconf import OmegaConf\n\n{registered}\n\n{SCORER}"}, "a")
    write_bench(tmp_path, {"tasks.yml": ONE_TASK, "custom_scorer.py": SCORER}, "b")
    with FakeOllama(models=["llama3.2", "gemma3"]) as server:
        done = subprocess.run([sys.executable, "-m", "benchrun", "-m", *swept, "outputs=outputs", "cache=false"],
                              cwd=tmp_path, env=child_env({"OLLAMA_HOST": server.url}), capture_output=True,
                              text=True, timeout=120)
    assert (done.returncode, done.stderr) == (EXIT["ok"], ""), done.stderr
    [sweep_dir] = (tmp_path / "outputs").glob("*/*_sweep")
    assert _statuses(sweep_dir, jobs) == ["completed", "completed"]


@pytest.mark.parametrize("models", ["runner_file=multiple_models.yml", "runner.model=[llama3.2,gemma3]"])
def test_a_sweep_whose_jobs_each_list_several_models_refuses_each_job(tmp_path, models):
    """Before: a sweep of the models inside each job's directory, the jobs listed as missing, exit 1."""
    done = call_benchrun("-m", "task=folderbench", models, "runner.options.temperature=0,0.5", "outputs=o",
                         "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    without = ", the runner file 'multiple_models.yml' giving no model" if models.startswith("runner_file") else ""
    line = ("in 'config': runner.model: a job of a sweep asks one model, and this one's config lists 2 (llama3.2, "
            f"gemma3: a list, or its runner file's); sweep over them instead: -m runner.model=llama3.2,gemma3{without}")
    assert (done.returncode, done.stderr) == (EXIT["sweep_failed"], f"benchrun: error: {line}\n" * 2)
    [sweep_dir] = (tmp_path / "o").glob("*/*_sweep")
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    assert [(job["dir"], job["status"], job["reason"]) for job in sweep["jobs"]] == [
        ("0_temperature-0", "failed", line), ("1_temperature-0.5", "failed", line)]


@pytest.mark.parametrize(("multirun", "models", "code"), [
    (["-m"], "runner.model=gemma3,mistral", EXIT["sweep_failed"]), ([], "runner.model=mistral", EXIT["usage"])])
def test_a_runner_key_the_runner_file_gives_too_is_refused_on_the_command_line(tmp_path, multirun, models, code):
    """Before: the runner file's model asked in its place, a sweep's job labelled mistral asking llama3.2."""
    done = call_benchrun(*multirun, "task=folderbench", "runner_file=runner.yml", models, "outputs=o",
                         "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    said = ("in 'config': runner.model={}: the runner file 'runner.yml' gives runner.model too, and its value takes "
            "the place of the command line's, so this one would never be asked; give it in one place")
    lines = [said.format(model) for model in models.split("=")[1].split(",")]
    assert (done.returncode, done.stderr) == (code, "".join(f"benchrun: error: {line}\n" for line in lines))
    if multirun:
        [sweep_dir] = (tmp_path / "o").glob("*/*_sweep")
        sweep = json.loads((sweep_dir / "sweep.json").read_text())
        assert [(job["dir"], job["status"], job["reason"]) for job in sweep["jobs"]] == [
            ("0_gemma3", "failed", lines[0]), ("1_mistral", "failed", lines[1])]
    else:
        assert [path for path in (tmp_path / "o").rglob("*") if not path.is_dir()] == []


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("sbatch") is None, reason="no Slurm here: `.ci/slurm-up` starts a single-node cluster")
@pytest.mark.parametrize("dry_run", [[], ["dry_run=true"]])
def test_a_slurm_sweep_of_more_jobs_than_one_job_array_holds_is_refused_at_once(tmp_path, dry_run):
    """Before: every job's config composed (minutes), then sbatch's `Invalid job array specification`."""
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True).stdout
    most = int(re.search(r"^MaxArraySize\s*=\s*(\d+)", config, re.M)[1])
    write_bench(tmp_path, {"tasks.yml": ONE_TASK, "custom_scorer.py": SCORER}, "a")
    done = subprocess.run([sys.executable, "-m", "benchrun", "-m", f"runner.options.seed=range(0,{most + 1})",
                           "task.path=a", "hydra/launcher=slurm", "outputs=o", "runner.host=http://127.0.0.1:9",
                           *dry_run], cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': the sweep makes {most + 1:,} jobs, and this cluster's Slurm takes at most "
        f"{most:,} in one job array (MaxArraySize), which submitit makes of a sweep's jobs; sweep fewer values, or "
        "split the sweep\n"))
    assert not (tmp_path / "o").exists()


def test_a_sweep_over_model_presets_asking_another_model_labels_the_presets_as_presets(tmp_path):
    """Before: the jobs labelled `gemma3` and `llama3.2`, both asking mistral."""
    write_bench(tmp_path, {"tasks.yml": ONE_TASK, "custom_scorer.py": SCORER}, "a")
    with FakeOllama(models=["mistral", "gemma3"]) as server:
        done = call_benchrun("-m", "task.path=a", "model=gemma3,llama3.2", "runner.model=mistral", "outputs=o",
                             "cache=false", f"runner.host={server.url}", cwd=tmp_path)
        bare = call_benchrun("-m", "task.path=a", "model=gemma3", "outputs=p", "cache=false",
                             f"runner.host={server.url}", cwd=tmp_path)
    assert (done.returncode, done.stderr, bare.returncode) == (EXIT["ok"], "", EXIT["ok"])
    [sweep_dir] = (tmp_path / "o").glob("*/*_sweep")
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    assert [(job["dir"], job["model"], job["label"]) for job in sweep["jobs"]] == [
        ("0_model-gemma3", "mistral", "model=gemma3"), ("1_model-llama3.2", "mistral", "model=llama3.2")]
    [bare_dir] = (tmp_path / "p").glob("*/*_sweep")
    assert [job["label"] for job in json.loads((bare_dir / "sweep.json").read_text())["jobs"]] == ["gemma3"]


def test_a_sweep_over_benchmark_presets_asking_another_benchmark_labels_the_presets_as_presets(tmp_path):
    """Before: the jobs labelled `listbench` and `folderbench`, both asking benchmark a."""
    write_bench(tmp_path, {"tasks.yml": ONE_TASK, "custom_scorer.py": SCORER}, "a")
    done = call_benchrun("-m", "task=listbench,folderbench", "task.path=a", "outputs=o",
                         "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert done.returncode == EXIT["sweep_failed"]
    [sweep_dir] = (tmp_path / "o").glob("*/*_sweep")
    runs = [json.loads((sweep_dir / job / "run.json").read_text()) for job in ("0_task-listbench", "1_task-folderbench")]
    assert [(run["benchmark"], run["label"]) for run in runs] == [("a", "task=listbench"), ("a", "task=folderbench")]


def test_a_runner_the_runner_file_gives_another_type_is_refused_on_the_command_line(tmp_path):
    """Before: the job labelled openai asked Ollama (the file's runner_type)."""
    done = call_benchrun("-m", "task=folderbench", "runner_file=runner.yml", "runner=ollama,openai", "outputs=o",
                         cwd=tmp_path, env={"OLLAMA_HOST": "http://127.0.0.1:9"})
    line = ("in 'config': runner=openai: the runner file 'runner.yml' gives runner_type ollama, the type of the runner "
            "used, so this one would never be; give the runner in one place")
    [sweep_dir] = (tmp_path / "o").glob("*/*_sweep")
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    assert (done.returncode, sweep["jobs"][1]["dir"], sweep["jobs"][1]["reason"]) == (
        EXIT["sweep_failed"], "1_openai", line)


def test_a_sweep_over_judges_labels_its_jobs_by_the_judge_not_as_models(tmp_path):
    """Before: labelled `model=qwen2.5` and `model=gemma3`, both jobs asking llama3.2."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    done = call_benchrun("-m", "task.path=bench", "judge.model=qwen2.5,gemma3", "outputs=o",
                         "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert done.returncode == EXIT["sweep_failed"]
    [sweep_dir] = (tmp_path / "o").glob("*/*_sweep")
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    assert [(job["dir"], job["label"]) for job in sweep["jobs"]] == [
        ("0_judge.model-qwen2.5", "judge.model=qwen2.5"), ("1_judge.model-gemma3", "judge.model=gemma3")]


def test_a_sweep_varying_two_keys_of_one_last_part_tells_them_apart(tmp_path):
    """Before: `temperature=0 temperature=0.7` and `temperature=0.7 temperature=0`, which was the judge's unsaid. (The
    features side found the judge's case too: a judge's key is named as the judge's; two other keys a label would call
    alike are named whole.)"""
    assert label({"runner.options.seed": 0, "task.sample.seed": 1}, "m") == "runner.options.seed=0 task.sample.seed=1"
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    done = call_benchrun("-m", "task.path=bench", "judge.model=qwen2.5", "runner.options.temperature=0,0.7",
                         "judge.options.temperature=0,0.7", "outputs=o", "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert done.returncode == EXIT["sweep_failed"]
    [sweep_dir] = (tmp_path / "o").glob("*/*_sweep")
    assert [job["label"] for job in json.loads((sweep_dir / "sweep.json").read_text())["jobs"]] == [
        f"temperature={mine} judge.temperature={judge}"
        for mine in ("0", "0.7") for judge in ("0", "0.7")]


def test_a_sweep_of_one_model_from_two_uploaders_labels_each_by_its_whole_name(tmp_path):
    """Before: refused, both jobs labelled 'x:Q4_K_M' (a path by its last part)."""
    write_bench(tmp_path, {"tasks.yml": ONE_TASK, "custom_scorer.py": SCORER}, "a")
    models = ["hf.co/bartowski/x:Q4_K_M", "hf.co/unsloth/x:Q4_K_M"]
    done = call_benchrun("-m", "task.path=a", f"runner.model={','.join(models)}", "outputs=o",
                         "runner.host=http://127.0.0.1:9", cwd=tmp_path)
    assert done.returncode == EXIT["sweep_failed"], done.stderr
    [sweep_dir] = (tmp_path / "o").glob("*/*_sweep")
    assert [(job["dir"], job["label"]) for job in json.loads((sweep_dir / "sweep.json").read_text())["jobs"]] == [
        ("0_hf.co-bartowski-x-Q4_K_M", models[0]), ("1_hf.co-unsloth-x-Q4_K_M", models[1])]
