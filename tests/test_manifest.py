"""The manifest: its content, canonical JSON, stable id, and the wheel's shipped data."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun import compile, compile_plan
from benchrun.compiler.schemas import generated
from benchrun.core.errors import EXIT
from benchrun.core.manifest import canonical_json
from benchrun.core.resources import demos_dir, schemas_dir
from tests.helpers.archives import validator
from tests.helpers.commands import call_benchrun, manifest_ids, run_benchrun

LISTBENCH = demos_dir() / "listbench"


def config(bench: Path, **runner) -> dict:
    return {"task": {"path": str(bench), "name": bench.name, "only": None},
            "runner": {"type": "ollama", "model": "llama3.2", "host": "http://10.0.0.1:11434",
                       "options": {"temperature": 0, "seed": 0}, "concurrency": 4, **runner}}


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    copy = tmp_path / "listbench"
    shutil.copytree(LISTBENCH, copy)
    return copy


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_manifest_records_sources_tasks_and_runner(bench):
    plan = compile_plan(config(bench))
    manifest = plan.manifest
    assert [(f.path, f.size, f.sha256) for f in manifest.files] == [
        (name, (bench / name).stat().st_size, sha256_file(bench / name))
        for name in ("tasks.yml", "custom_scorer.py", "custom_response.py")]
    assert [(t.name, t.n_samples, t.format.name, t.format.origin, [s.name for s in t.scorers])
            for t in manifest.tasks] == [
        ("product", 3, "IntAnswer", "builtin", ["calculated_answer"]),
        ("product_combination", 9, "IntJustification", "builtin", ["calculated_answer", "add_justify"]),
        ("symbol", 3, "StringAnswer", "builtin", ["contains"]),
        ("symbol_dir", 3, "NameSource", "custom_response.py", ["check_name_dir"]),
    ]
    scorer = manifest.task("product").scorers[0]
    assert scorer.origin == "custom_scorer.py"
    assert scorer.sha256 == hashlib.sha256(inspect.getsource(plan.scorers["calculated_answer"]).encode()).hexdigest()
    assert manifest.task("symbol_dir").format.json_schema["$defs"]["Direction"]["enum"] == ["left", "right", "up"]
    assert manifest.runner.model_dump() == {"type": "ollama", "model": "llama3.2",
                                            "options": {"temperature": 0, "seed": 0},
                                            "settings": {"keep_alive": None, "think": None}}
    assert manifest.config == {"task": {"name": "listbench", "only": None},
                               "runner": {"type": "ollama", "model": "llama3.2", "keep_alive": None, "think": None,
                                          "options": {"temperature": 0, "seed": 0}}}
    assert len(manifest.samples) == 18


def test_canonical_json_and_id(bench):
    manifest = compile(config(bench))
    data = manifest.canonical_json()
    assert data == canonical_json(json.loads(data))
    assert b"\n" not in data and b", " not in data
    assert manifest.id == hashlib.sha256(data).hexdigest()
    validator("manifest").validate(json.loads(data))


def test_a_copy_of_a_manifest_has_its_own_bytes_and_id(bench):
    """The bytes and id are made once per manifest; a copy with changes (as rejudge makes) must not keep them."""
    manifest = compile(config(bench))
    first_id = manifest.id
    copied = manifest.model_copy(update={"tasks": manifest.tasks[:1]})
    assert copied.id != first_id and copied.id == hashlib.sha256(copied.canonical_json()).hexdigest()
    assert json.loads(copied.canonical_json())["tasks"] == json.loads(manifest.canonical_json())["tasks"][:1]
    assert manifest.model_copy().id == first_id


def test_manifest_schema_file_is_generated_from_the_model():
    assert json.loads((schemas_dir() / "manifest.schema.json").read_text()) == generated()["manifest"]


def test_same_inputs_same_bytes_wherever_they_live(tmp_path):
    first, second = tmp_path / "a" / "listbench", tmp_path / "b" / "deeper" / "listbench"
    shutil.copytree(LISTBENCH, first)
    shutil.copytree(LISTBENCH, second)
    one = compile(config(first)).canonical_json()
    two = compile(config(second, host="http://elsewhere:1", concurrency=1)).canonical_json()
    assert one == two


@pytest.mark.parametrize("path, old, new", [
    ("tasks.yml", "find the product of {a} and {b}", "find the product of {a} and {b}!"),
    ("tasks.yml", "a: [2,3,5]", "a: [2,3,6]"),
    ("custom_scorer.py", "import json", "import json "),
    ("custom_response.py", "up=\"up\"", "up=\"Up\""),
])
def test_one_changed_byte_changes_the_id(bench, path, old, new):
    before = compile(config(bench)).id
    text = (bench / path).read_text()
    assert old in text
    (bench / path).write_text(text.replace(old, new, 1))
    assert compile(config(bench)).id != before


def test_changed_csv_cell_and_template_change_the_id(tmp_path):
    bench = tmp_path / "folderbench"
    shutil.copytree(demos_dir() / "folderbench", bench)
    ids = {compile(config(bench)).id}
    (bench / "tasks/add/values.csv").write_text("a,b,reference\n2,3,5\n4,5,9\n8,9,18\n")
    ids.add(compile(config(bench)).id)
    (bench / "tasks/add/template.txt").write_text("what is {a} plus {b}?\n")
    ids.add(compile(config(bench)).id)
    assert len(ids) == 3


def test_model_and_options_change_the_id(bench):
    ids = {compile(config(bench)).id, compile(config(bench, model="gemma3")).id,
           compile(config(bench, options={"temperature": 0.7, "seed": 0})).id}
    assert len(ids) == 3


@pytest.mark.slow
def test_id_is_the_same_across_processes_and_working_directories(tmp_path):
    runs = []
    for where, hash_seed in (("x", "1"), ("y/z", "2")):
        cwd = tmp_path / where
        shutil.copytree(LISTBENCH, cwd / "bench")
        result = run_benchrun("dry_run=true", "task.path=bench", cwd=cwd, env={"PYTHONHASHSEED": hash_seed})
        assert result.returncode == EXIT["ok"], result.stderr
        runs.append(manifest_ids(result.stdout))
    assert runs[0] == runs[1] and len(runs[0]) == 1


@pytest.mark.slow
def test_wheel_ships_conf_schemas_and_demos(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(repo)],
                   check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("benchrun-*.whl"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PYTHONPATH": str(target)}
    where = subprocess.run([sys.executable, "-c", "import benchrun.core.resources as r; print(r.conf_dir(), r.schemas_dir())"],
                           cwd=elsewhere, env={**os.environ, **env}, capture_output=True, text=True, check=True)
    data = target / "benchrun" / "_data"
    assert where.stdout.split() == [str(data / "conf"), str(data / "schemas")]
    result = run_benchrun("dry_run=true", cwd=elsewhere, env=env)
    assert result.returncode == EXIT["ok"], result.stderr
    in_checkout = call_benchrun("dry_run=true", cwd=repo)
    assert manifest_ids(result.stdout) == manifest_ids(in_checkout.stdout)


@pytest.mark.parametrize(("task", "manifest_id"), [
    ("listbench", "3686a9f42e2102e01650c0f89b5a0bc7b0fbe9d91f6e8510fc029967b8e79552"),
    ("folderbench", "7cf38f55f2c316c3b6bdc0ce0ea440814a454d9de3c073734c623f97bdd3678d"),
])
def test_the_shipped_benchmarks_keep_their_manifest_ids(compose_cfg, task, manifest_id):
    """The seed's benchmarks on the default runner ask what they always asked: a new key, default or refactoring
    that changed a byte of their manifest would make every earlier run look like another benchmark. A change of what
    a built-in scorer scores is not one: folderbench's id changed once with exact_match's numbers compared as
    written (8f7a39978eae... before), listbench's with contains comparing texts composed and a null answer as null
    (5614094bd291... before), then looking in the values an answer holds, a number as a number (f741f9607fb2...
    before; c492f3de76df... between this branch's two commits)."""
    assert compile(compose_cfg(f"task={task}")).id == manifest_id
