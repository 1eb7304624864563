"""Sweeps name what varied: job labels and directories, run.json's varied settings, the sweep table; model presets
that fit their runner; runner=local named after its GGUF file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir

from benchrun.compose.config import plain_config
from benchrun.compose.labels import dir_label, label, swept_keys, varied
from benchrun.core.errors import EXIT, ConfigError
from benchrun.core.resources import conf_dir
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.commands import bench_run, call_benchrun, sweep_dir_of


@pytest.mark.parametrize(("settings", "model", "expected", "directory"), [
    ({"runner.model": "gemma3", "runner.options.temperature": 0.7}, "gemma3", "gemma3 temperature=0.7",
     "gemma3_temperature-0.7"),
    ({}, "llama3.2", "llama3.2", "llama3.2"),
    ({"runner.model_path": "/models/qwen2.5-7b-q4.gguf"}, "qwen2.5-7b-q4", "qwen2.5-7b-q4.gguf", "qwen2.5-7b-q4.gguf"),
    ({"runner.options.stop": ["a", "b"], "task": "folderbench"}, "m", 'stop=["a","b"] folderbench',
     "stop-a-b_folderbench"),
    ({"runner.think": True, "model": "gemma3"}, "gemma3", "think=true gemma3", "think-true_gemma3"),
    ({"runner.model": "hf.co/org/x:7b"}, "hf.co/org/x:7b", "hf.co/org/x:7b", "hf.co-org-x-7b"),
])
def test_a_label_is_the_varied_values(settings, model, expected, directory):
    assert label(settings, model) == expected
    assert dir_label(expected) == directory


def test_swept_keys_come_from_hydras_multirun_file(tmp_path):
    (tmp_path / "multirun.yaml").write_text(
        "hydra:\n  sweeper:\n    params:\n      runner.options.seed: 1,2\n"
        "  overrides:\n    task:\n    - runner.model=llama3.2,gemma3\n    - +runner.options.top_k=range(1,3)\n"
        "    - task=folderbench\n")
    swept = swept_keys(tmp_path)
    assert swept == {"runner.model", "runner.options.top_k", "runner.options.seed"}
    assert varied(["runner.model=gemma3", "+runner.options.top_k=2", "task=folderbench", "runner.options.seed=1"],
                  swept) == {"runner.model": "gemma3", "runner.options.top_k": 2, "runner.options.seed": 1}
    assert swept_keys(tmp_path / "elsewhere") == frozenset()


def test_a_sweep_names_each_job_by_what_varied(tmp_path):
    with FakeOllama(models=["llama3.2", "gemma3"], responder=listbench_answer) as server:
        result = bench_run(tmp_path, server.url, "task=folderbench", "runner.model=llama3.2,gemma3",
                           "runner.options.temperature=0,0.7", multirun=True)
    assert result.returncode == EXIT["ok"], result.stderr
    sweep_dir = sweep_dir_of(result.stdout)
    assert sweep_dir.is_absolute() and sweep_dir.name.endswith("_folderbench_sweep")
    labels = ["llama3.2 temperature=0", "llama3.2 temperature=0.7", "gemma3 temperature=0", "gemma3 temperature=0.7"]
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir() and p.name[0].isdigit()) == [
        "0_llama3.2_temperature-0", "1_llama3.2_temperature-0.7", "2_gemma3_temperature-0", "3_gemma3_temperature-0.7"]
    runs = [json.loads((sweep_dir / job / "run.json").read_text()) for job in sorted(
        p.name for p in sweep_dir.iterdir() if p.name[0].isdigit())]
    assert [(r["label"], r["varied"]) for r in runs] == [
        (text, {"runner.model": text.split()[0], "runner.options.temperature": float(text.split("=")[1])})
        for text in labels]
    assert [type(r["varied"]["runner.options.temperature"]) for r in runs] == [int, float, int, float]
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    assert [job["label"] for job in sweep["jobs"]] == labels
    header = [line for line in result.stdout.splitlines() if "metric" in line][-1]  # the sweep table's, last
    assert [cell.strip() for cell in header.strip("┃").split("┃")] == ["task", "metric", *labels]


@pytest.mark.parametrize("models", [("runner.model=[llama3.2,gemma3]",), ("runner_file=multiple_models.yml",)])
def test_a_run_of_several_models_is_a_sweep_directory_too(tmp_path, models):
    with FakeOllama(models=["llama3.2", "gemma3"], responder=listbench_answer) as server:
        result = bench_run(tmp_path, server.url, "task=folderbench", *models)
    assert result.returncode == EXIT["ok"], result.stderr
    sweep_dir = sweep_dir_of(result.stdout)
    assert sweep_dir.name.endswith("_folderbench_sweep")
    assert sorted(p.name for p in sweep_dir.iterdir() if p.name[0].isdigit()) == ["0_llama3.2", "1_gemma3"]
    runs = [json.loads((sweep_dir / job / "run.json").read_text()) for job in ("0_llama3.2", "1_gemma3")]
    assert [(r["label"], r["varied"]) for r in runs] == [
        ("llama3.2", {"runner.model": "llama3.2"}), ("gemma3", {"runner.model": "gemma3"})]


def test_a_single_run_has_no_label_or_varied_settings(tmp_path):
    with FakeOllama(responder=listbench_answer) as server:
        result = bench_run(tmp_path, server.url, "task=folderbench")
    assert result.returncode == EXIT["ok"], result.stderr
    [run_json] = (tmp_path / "outputs").glob("*/*/run.json")
    info = json.loads(run_json.read_text())
    assert (info["label"], info["varied"]) == (None, {})


@pytest.mark.parametrize("existing", [False, True])
def test_a_sweep_whose_jobs_cannot_compose_leaves_nothing_behind(tmp_path, existing):
    if existing:
        (tmp_path / "outputs" / "kept").mkdir(parents=True)
    result = bench_run(tmp_path, "http://127.0.0.1:9", "runner.model=a,b", "+runner.options.temperature=0,1",
                       multirun=True)
    assert result.returncode == EXIT["usage"]
    assert result.stderr == ("benchrun: error: in 'config': runner.options.temperature: the config holds a value of "
                             "it already, and a '+' adds only a key it holds none of: override it without the '+': "
                             "runner.options.temperature=0\n")
    found = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert found == (["outputs", "outputs/kept"] if existing else [])


REFUSED = ("in 'r.yml': api_key: secrets are never taken from the config, where they would be archived (a credential's "
           "name); put an API key in an environment variable and name it with runner.api_key_env, and give URLs "
           "without user names or passwords")
"""Said of the runner file and its key, as its other bad values are (it was said of 'config' and runner.api_key)."""


@pytest.mark.parametrize(("runner_file", "reason"), [
    ("runner_type: ollama\napi_key: sk-test-0123456789abcdef\n", REFUSED),
    ("runner_type: ollama\ntimeout_s: -1\n", "in 'r.yml': timeout_s: -1 is out of bounds: give more than 0"),
])
def test_a_sweep_whose_jobs_are_all_refused_fails_and_records_why(tmp_path, runner_file, reason):
    """Every job's config refused (a credential in the runner file, an impossible value): each job is a failed run
    that says why, the sweep exits 1, and nothing written holds the refused config."""
    (tmp_path / "r.yml").write_text(runner_file)
    result = bench_run(tmp_path, "http://127.0.0.1:9", "runner.model=llama3.2,gemma3", "runner_file=r.yml",
                       multirun=True)
    assert result.returncode == EXIT["sweep_failed"], result.stderr
    sweep = json.loads((sweep_dir_of(result.stdout) / "sweep.json").read_text())
    assert [(job["dir"], job["status"], job["reason"]) for job in sweep["jobs"]] == [
        ("0_llama3.2", "failed", reason), ("1_gemma3", "failed", reason)]
    written = [p for p in tmp_path.joinpath("outputs").rglob("*") if p.is_file()]
    assert not [p for p in written if "sk-test" in p.read_text(errors="replace")]


@pytest.mark.parametrize("runner", ["local", "openai"])
def test_a_model_preset_is_refused_with_another_runner(compose_cfg, runner):
    with pytest.raises(ConfigError) as err:
        plain_config(compose_cfg(f"runner={runner}", "model=gemma3"))
    assert str(err.value) == (f"in 'config': model=gemma3 is a preset for runner=ollama, not runner={runner}: "
                              "leave it out and name the model with runner.model")


def test_a_model_preset_sets_its_runner_and_says_so(compose_cfg):
    cfg = plain_config(compose_cfg("model=gemma3"))
    assert cfg["model_preset"] == {"name": "gemma3", "runner": "ollama"}
    assert (cfg["runner"]["model"], cfg["runner"]["options"]) == (
        "gemma3", {"temperature": 0, "seed": 0, "num_ctx": 8192, "top_k": 64, "top_p": 0.95})


def test_a_preset_for_another_runner_exits_2_in_one_line(tmp_path):
    result = call_benchrun("runner=local", "model=llama3.2", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (EXIT["usage"], "")
    assert result.stderr == ("benchrun: error: in 'config': model=llama3.2 is a preset for runner=ollama, not "
                             "runner=local: leave it out and name the model with runner.model\n")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize(("overrides", "model"), [
    ((), "smollm2-135m-instruct"),
    (("runner.model_path=/models/qwen2.5-7b-q4.gguf",), "qwen2.5-7b-q4"),
    (("runner.model_path=/models/qwen2.5-7b-q4.gguf", "runner.model=qwen"), "qwen"),
])
def test_runner_local_is_named_after_its_gguf_file(compose_cfg, overrides, model):
    assert plain_config(compose_cfg("runner=local", *overrides))["runner"]["model"] == model
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3", job_name="benchrun"):
        composed = compose("config", overrides=["runner=local", *overrides], return_hydra_config=True)
    assert composed.hydra.run.dir.endswith(f"_listbench_{model}")


def test_a_dry_run_of_several_models_piped_into_head_ends_quietly(tmp_path):
    result = subprocess.run(f"{sys.executable} -m benchrun runner.model=[llama3.2,gemma3] dry_run=true | head -1",
                            shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "COLUMNS": "200"})
    assert result.stdout.startswith("listbench · ollama · llama3.2")
    assert result.stderr == ""
