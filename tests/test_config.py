"""Composition: config groups, overrides, presets, user config dirs and multirun."""

from __future__ import annotations

import shutil

import pytest

from benchrun.compose.config import plain_config
from benchrun.core.errors import EXIT
from benchrun.core.resources import conf_dir, demos_dir
from tests.helpers.commands import call_benchrun, manifest_ids, run_benchrun


def test_defaults(compose_cfg, monkeypatch):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    cfg = plain_config(compose_cfg())
    assert cfg["task"] == {"path": "demo:listbench", "name": "listbench", "only": None, "system": None, "max_samples": 1_000_000,
                           "max_prompt_chars": 100_000, "max_total_chars": 100_000_000,
                           "max_file_bytes": 268_435_456}
    assert cfg["runner"] == {
        "type": "ollama", "host": "http://127.0.0.1:11434", "model": "llama3.2",
        "options": {"temperature": 0, "seed": 0}, "keep_alive": None, "think": None,
        "concurrency": 1, "timeout_s": 120, "retries": 2, "backoff_s": 0.5, "max_consecutive_failures": 5,
        "max_response_bytes": 8 * 2**20,
    }
    assert (cfg["dry_run"], cfg["runner_file"], cfg["scorer_timeout_s"]) == (False, None, 10)


def test_ollama_host_from_environment(compose_cfg, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://gpu-node-3:11434")
    assert plain_config(compose_cfg())["runner"]["host"] == "http://gpu-node-3:11434"


@pytest.mark.parametrize(("runner", "variable", "key", "default"), [
    ("ollama", "OLLAMA_HOST", "host", "http://127.0.0.1:11434"),
    ("openai", "OPENAI_BASE_URL", "base_url", "http://127.0.0.1:8000/v1"),
])
def test_an_empty_server_variable_means_the_default(compose_cfg, monkeypatch, runner, variable, key, default):
    monkeypatch.setenv(variable, " ")
    assert plain_config(compose_cfg(f"runner={runner}"))["runner"][key] == default


def test_command_line_overrides(compose_cfg):
    cfg = plain_config(compose_cfg("runner.model=gemma3", "task=folderbench", "+runner.options.num_predict=64"))
    assert cfg["runner"]["model"] == "gemma3"
    assert cfg["runner"]["options"] == {"temperature": 0, "seed": 0, "num_predict": 64}
    assert cfg["task"]["name"] == "folderbench"


def test_model_preset(compose_cfg):
    cfg = plain_config(compose_cfg("model=gemma3"))
    assert cfg["runner"]["model"] == "gemma3"
    assert cfg["runner"]["options"] == {"temperature": 0, "seed": 0, "num_ctx": 8192, "top_k": 64, "top_p": 0.95}


def test_task_path_names_the_benchmark(compose_cfg, tmp_path):
    bench = tmp_path / "my-bench"
    shutil.copytree(demos_dir() / "folderbench", bench)
    cfg = plain_config(compose_cfg(f"task.path={bench}", "task.only=[add]"))
    assert cfg["task"] == {"path": str(bench), "name": "my-bench", "only": ["add"], "system": None, "max_samples": 1_000_000,
                           "max_prompt_chars": 100_000, "max_total_chars": 100_000_000,
                           "max_file_bytes": 268_435_456}


def test_seed_runner_file_keys(compose_cfg):
    cfg = plain_config(compose_cfg("task=folderbench", "runner_file=multiple_models.yml"))
    assert cfg["runner"]["type"] == "ollama"
    assert cfg["runner"]["model"] == ["llama3.2", "gemma3"]
    assert "runner_type" not in cfg["runner"]


@pytest.mark.parametrize("task", sorted(p.stem for p in (conf_dir() / "task").glob("*.yaml")))
@pytest.mark.parametrize("model", [None, *sorted(p.stem for p in (conf_dir() / "model").glob("*.yaml"))])
def test_every_shipped_preset_compiles(compose_cfg, task, model):
    from benchrun import compile

    overrides = [f"task={task}"] + ([f"model={model}"] if model else [])
    manifest = compile(compose_cfg(*overrides))
    assert manifest.benchmark == task
    assert manifest.runner.model == (model or "llama3.2")


@pytest.mark.slow
def test_multirun_composes_one_config_per_model(tmp_path):
    result = run_benchrun("-m", "dry_run=true", "task=folderbench", "runner.model=llama3.2,gemma3", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    assert "folderbench · ollama · llama3.2" in result.stdout
    assert "folderbench · ollama · gemma3" in result.stdout
    assert len(set(manifest_ids(result.stdout))) == 2
    assert not (tmp_path / "outputs").exists()


def test_user_presets_from_config_dir(tmp_path):
    (tmp_path / "myconf" / "runner").mkdir(parents=True)
    (tmp_path / "myconf" / "runner" / "two.yaml").write_text(
        "runner_type: ollama\nmodel: [qwen2.5, mistral]\noptions: {temperature: 0.5, seed: 7}\n")
    result = call_benchrun("--config-dir", "myconf", "runner=two", "task=folderbench", "dry_run=true", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    assert "folderbench · ollama · qwen2.5" in result.stdout
    assert "folderbench · ollama · mistral" in result.stdout
    searchpath = call_benchrun(f"hydra.searchpath=[file://{tmp_path / 'myconf'}]", "runner=two",
                               "task=folderbench", "dry_run=true", cwd=tmp_path)
    assert manifest_ids(searchpath.stdout) == manifest_ids(result.stdout)


@pytest.mark.parametrize(("override", "said"), [
    ("+runner.options.num_predict=99999999999999999999", "runner.options.num_predict: the integer 99999999999999999999 "
     "is outside ±9,007,199,254,740,991 (2^53 - 1, the integers every JSON reader keeps exactly)"),
    ("runner.options.seed=-9007199254740992", "runner.options.seed: the integer -9007199254740992 is outside "
     "±9,007,199,254,740,991 (2^53 - 1, the integers every JSON reader keeps exactly)"),
    ("+runner.options.num_predict=" + "9" * 5000, "runner.options.num_predict: an integer of more than 4,300 digits, "
     "more than Python reads"),
    ("+runner.options.stop=[a," + "9" * 5000 + "]", "runner.options.stop: an integer of more than 4,300 digits, more "
     "than Python reads"),
])
def test_an_integer_no_json_reader_keeps_is_refused_on_the_command_line(tmp_path, override, said):
    """As in a benchmark's files: config.yaml and run.json would keep it (Hydra's parser raised a ValueError, a
    traceback, on one of more digits than Python converts)."""
    result = call_benchrun(override, "dry_run=true", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: in 'config': {said}\n")
    assert not (tmp_path / "outputs").exists() or not any((tmp_path / "outputs").rglob("config.yaml"))
