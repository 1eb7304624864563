"""The schemas in schemas/ that benchrun's models generate are committed as generated (python -m benchrun.compiler.schemas),
and config.schema.json, generated from the typed settings, describes the config every shipped preset composes."""

from __future__ import annotations

import json

import pytest

from benchrun.compiler.schemas import generated, validator
from benchrun.compiler.sources import DEFAULT_COMBINATIONS
from benchrun.compose.config import plain_config
from benchrun.core.resources import schemas_dir

GENERATED = generated()


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_the_committed_schema_is_the_generated_one(name):
    assert json.loads((schemas_dir() / f"{name}.schema.json").read_text(encoding="utf-8")) == GENERATED[name]


@pytest.mark.parametrize("overrides", [(), ("runner=local",), ("runner=openai",), ("model=gemma3",),
                                       ("task=folderbench", "repeats=3", "repeat_seeds=same", "cache=false",
                                        "task.max_samples=10", "cache_dir=/tmp/c")])
def test_every_preset_composes_a_config_the_schema_describes(compose_cfg, overrides):
    config = plain_config(compose_cfg(*overrides))
    assert list(validator("config").iter_errors(config)) == []


def test_the_config_schema_knows_every_setting_and_refuses_unknown_keys(compose_cfg):
    config = plain_config(compose_cfg())
    schema = json.loads((schemas_dir() / "config.schema.json").read_text(encoding="utf-8"))
    assert {"repeats", "repeat_seeds", "cache", "cache_dir", "scorer_timeout_s"} <= set(schema["properties"])
    assert {"max_samples", "max_prompt_chars"} <= set(schema["$defs"]["TaskConfig"]["properties"])
    wrong = {**config, "runner": {**config["runner"], "concurrencyy": 2}, "repeats": 0}
    errors = sorted(validator("config").iter_errors(wrong), key=lambda error: error.json_path)
    assert [error.json_path for error in errors] == ["$.repeats", "$.runner"]
    assert errors[0].message == "0 is less than the minimum of 1"
    assert errors[1].context[0].message == "Additional properties are not allowed ('concurrencyy' was unexpected)"


def test_the_editor_schema_gives_the_compilers_default():
    """tasks.schema.json is written by hand for editors; the one default it states is the compiler's."""
    schema = json.loads((schemas_dir() / "tasks.schema.json").read_text(encoding="utf-8"))
    assert schema["$defs"]["task"]["properties"]["value_combinations"]["default"] == DEFAULT_COMBINATIONS
