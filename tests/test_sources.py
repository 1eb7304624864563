"""The seed's task format, compiled: list-style and folder-style tasks into exactly the expected samples."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from benchrun import Manifest, compile
from benchrun.app import model_configs
from benchrun.compose.config import plain_config
from tests.helpers.benchfiles import config, folder_task, task, tasks_yml, write_bench

LISTBENCH = {"path": "demo:listbench", "name": "listbench", "only": None}
FOLDERBENCH = {"path": "demo:folderbench", "name": "folderbench", "only": None}
SampleRow = tuple[str, str, dict[str, Any], Any]
OLLAMA_DEFAULTS = {"type": "ollama", "host": "http://127.0.0.1:11434", "model": "llama3.2",
                   "options": {"temperature": 0, "seed": 0}, "keep_alive": None, "think": None, "concurrency": 1,
                   "timeout_s": 120.0, "retries": 2, "backoff_s": 0.5, "max_consecutive_failures": 5,
                   "max_response_bytes": 8 * 2**20}
"""benchrun.core.settings.OllamaConfig's defaults, as a resolved config holds them."""


def rows(manifest: Manifest) -> list[SampleRow]:
    """(id, prompt, values, reference) of every sample, in order."""
    return [(s.id, s.prompt, s.values, s.reference) for s in manifest.samples]


def compile_demo(task_config: dict[str, Any]) -> Manifest:
    return compile({"task": task_config, "runner": {"type": "ollama", "model": "m"}})


def compile_files(tmp_path: Path, files: dict[str, str]) -> Manifest:
    return compile(config(write_bench(tmp_path, files)), tmp_path)


def product(task_name: str, a: int, b: int) -> SampleRow:
    return f"{task_name}:a={a},b={b}", f"find the product of {a} and {b}", {"a": a, "b": b}, None


def symbol_dir(symb: str, name: str, direction: str) -> SampleRow:
    return (f"symbol_dir:symb={symb},name={name},direction={direction}",
            f"what direction does the {symb} symbol point? and what is its name ",
            {"symb": symb, "name": name, "direction": direction}, None)


def test_listbench_samples():
    manifest = compile_demo(LISTBENCH)
    assert rows(manifest) == [
        product("product", 2, 3), product("product", 3, 4), product("product", 5, 5),
        *[product("product_combination", a, b) for a in (2, 3, 5) for b in (3, 4, 5)],
        ("symbol:symb=@,exmeta=internet", "what is the name for the following symbol? @",
         {"symb": "@", "exmeta": "internet"}, "at"),
        ("symbol:symb=$,exmeta=world", "what is the name for the following symbol? $",
         {"symb": "$", "exmeta": "world"}, "dollar sign"),
        ("symbol:symb=#,exmeta=internet", "what is the name for the following symbol? #",
         {"symb": "#", "exmeta": "internet"}, "pound"),
        symbol_dir("^", "carat", "up"), symbol_dir("<", "less", "left"), symbol_dir(">", "greater", "right"),
    ]
    assert [s.task for s in manifest.samples] == ["product"] * 3 + ["product_combination"] * 9 + [
        "symbol"] * 3 + ["symbol_dir"] * 3


def test_listbench_tasks():
    manifest = compile_demo(LISTBENCH)
    summary = [(t.name, t.n_samples, t.reference, t.value_combinations, t.format.name, t.format.origin,
                [(s.name, s.origin) for s in t.scorers]) for t in manifest.tasks]
    custom = "custom_scorer.py"
    assert summary == [
        ("product", 3, "calculated", "tuple", "IntAnswer", "builtin", [("calculated_answer", custom)]),
        ("product_combination", 9, "calculated", "combinations", "IntJustification", "builtin",
         [("calculated_answer", custom), ("add_justify", custom)]),
        ("symbol", 3, "list", "tuple", "StringAnswer", "builtin", [("contains", "builtin")]),
        ("symbol_dir", 3, "calculated", "tuple", "NameSource", "custom_response.py", [("check_name_dir", custom)]),
    ]
    assert [f.path for f in manifest.files] == ["tasks.yml", "custom_scorer.py", "custom_response.py"]


def test_custom_response_with_enum_has_its_json_schema_in_the_manifest():
    manifest = compile_demo(LISTBENCH)
    assert manifest.task("symbol_dir").format.json_schema == {
        "$defs": {"Direction": {"enum": ["left", "right", "up"], "title": "Direction", "type": "string"}},
        "properties": {"name": {"title": "Name", "type": "string"}, "direction": {"$ref": "#/$defs/Direction"}},
        "required": ["name", "direction"],
        "title": "NameSource",
        "type": "object",
    }


def test_folderbench_samples():
    manifest = compile_demo(FOLDERBENCH)
    assert rows(manifest) == [
        ("add:a=2,b=3", "what is 2 + 3?", {"a": 2, "b": 3}, 5),
        ("add:a=4,b=5", "what is 4 + 5?", {"a": 4, "b": 5}, 9),
        ("add:a=8,b=9", "what is 8 + 9?", {"a": 8, "b": 9}, 17),
    ]
    entry = manifest.task("add")
    assert (entry.source, entry.template, entry.reference, entry.format.name, [s.name for s in entry.scorers]) == (
        "tasks/add", "what is {a} + {b}?", "list", "StringAnswer", ["exact_match"])
    assert [f.path for f in manifest.files] == ["tasks/add/template.txt", "tasks/add/values.csv"]


def test_csv_cells_are_stripped_and_typed(tmp_path):
    values_csv = " a , b , c ,reference\n 2 , 3.5 , x ,1\n-4,1e3, x y ,2\n+10,2.,,3\n"
    manifest = compile_files(tmp_path, folder_task("typed", "{a} {b}", values_csv))  # a blank c in the prompt is refused
    values = [s.values for s in manifest.samples]
    assert values == [{"a": 2, "b": 3.5, "c": "x"}, {"a": -4, "b": 1000.0, "c": "x y"}, {"a": 10, "b": 2.0, "c": ""}]
    assert [[next(kind for kind in (int, float, str) if isinstance(v, kind)) for v in row.values()]
            for row in values] == [[int, float, str]] * 3
    assert [s.reference for s in manifest.samples] == [1, 2, 3]
    assert [s.prompt for s in manifest.samples] == ["2 3.5", "-4 1e3", "+10 2."]  # numbers as written


def test_id_column_gives_the_sample_ids(tmp_path):
    files = {"tasks.yml": tasks_yml(task("listed", values={"id": ["first", "second"], "a": [1, 2]})),
             **folder_task("folder", "{q}", "id,q,reference\n 7 ,why?,because\nq-8,how?,so\n")}
    manifest = compile_files(tmp_path, files)
    assert [(s.id, s.values) for s in manifest.samples] == [
        ("listed:first", {"id": "first", "a": 1}), ("listed:second", {"id": "second", "a": 2}),
        ("folder:7", {"id": 7, "q": "why?"}), ("folder:q-8", {"id": "q-8", "q": "how?"}),
    ]


def test_long_values_give_a_short_unique_id(tmp_path):
    long_values = ["x" * 100 + "1", "x" * 100 + "2"]
    files = {"tasks.yml": tasks_yml(task("long", template="{a}", values={"a": long_values}))}
    manifest = compile_files(tmp_path, files)
    full = [f"long:a={value}" for value in long_values]
    assert [s.id for s in manifest.samples] == [
        f"{text[:66]}~{hashlib.sha256(text.encode()).hexdigest()[:12]}" for text in full]
    assert [len(s.id) for s in manifest.samples] == [79, 79]
    assert [s.values["a"] for s in manifest.samples] == long_values


def test_folder_task_with_info_and_description(tmp_path):
    files = {
        **folder_task("add", "what is {a} + {b}?\n", "a,b,reference\n2,3,5\n",
                      info_yml="scorer: [contains, exact_match]\nformat: IntJustification\n",
                      description_txt="\n  Adds two small numbers.\n\n"),
        **folder_task("mul", "what is {a} * {b}?", "a,b\n2,3\n",
                      info_yml="scorer: times\nreference: calculated\ndescription: from info\n"),
        "custom_scorer.py": "def times(response, values):\n    return values['a'] * values['b']\n",
    }
    manifest = compile_files(tmp_path, files)
    summary = [(t.name, t.description, t.template, t.reference, t.format.name, [s.name for s in t.scorers])
               for t in manifest.tasks]
    assert summary == [
        ("add", "Adds two small numbers.", "what is {a} + {b}?", "list", "IntJustification",
         ["contains", "exact_match"]),
        ("mul", "from info", "what is {a} * {b}?", "calculated", "StringAnswer", ["times"]),
    ]
    assert rows(manifest) == [("add:a=2,b=3", "what is 2 + 3?", {"a": 2, "b": 3}, 5),
                              ("mul:a=2,b=3", "what is 2 * 3?", {"a": 2, "b": 3}, None)]
    assert [f.path for f in manifest.files] == [
        "custom_scorer.py", "tasks/add/template.txt", "tasks/add/values.csv", "tasks/add/info.yml",
        "tasks/add/description.txt", "tasks/mul/template.txt", "tasks/mul/values.csv", "tasks/mul/info.yml"]


def test_list_and_folder_tasks_together_list_first(tmp_path):
    files = {"tasks.yml": tasks_yml(task("zeta"), task("alpha")), **folder_task("beta", "{a}", "a,reference\n1,1\n"),
             **folder_task("aardvark", "{a}", "a,reference\n1,1\n")}
    assert [t.name for t in compile_files(tmp_path, files).tasks] == ["zeta", "alpha", "aardvark", "beta"]


def test_combinations_of_three_columns(tmp_path):
    files = {"tasks.yml": tasks_yml(task("grid", template="{a}{b}{c}", value_combinations="combinations",
                                         values={"a": [1, 2], "b": ["x"], "c": [True, False]},
                                         reference=["1", "2", "3", "4"]))}
    assert [(s.prompt, s.reference) for s in compile_files(tmp_path, files).samples] == [
        ("1xtrue", "1"), ("1xfalse", "2"), ("2xtrue", "3"), ("2xfalse", "4")]


def test_task_only_selects_tasks_in_file_order():
    manifest = compile_demo({**LISTBENCH, "only": ["symbol", "product"]})
    assert [(t.name, t.n_samples) for t in manifest.tasks] == [("product", 3), ("symbol", 3)]
    assert [s.task for s in manifest.samples] == ["product"] * 3 + ["symbol"] * 3
    assert manifest.config["task"]["only"] == ["symbol", "product"]


def test_seed_runner_file_relative_to_the_benchmark(tmp_path):
    cfg = {"task": LISTBENCH, "runner": {"type": "openai", "model": "m", "concurrency": 4},
           "runner_file": "multiple_models.yml"}
    plain = plain_config(cfg, tmp_path)
    assert plain["runner"] == {**OLLAMA_DEFAULTS, "model": ["llama3.2", "gemma3"], "concurrency": 4}
    assert plain_config(plain, tmp_path) == plain
    assert [compile(one, tmp_path).runner.model for one in model_configs(plain)] == ["llama3.2", "gemma3"]


def test_runner_file_in_the_working_directory_wins(tmp_path):
    (tmp_path / "runner.yml").write_text("runner_type: ollama\nmodel: 'qwen3:0.6b'\n", encoding="utf-8")
    plain = plain_config({"task": LISTBENCH, "runner": {"type": "ollama", "model": "m"}, "runner_file": "runner.yml"},
                         tmp_path)
    assert plain["runner"] == {**OLLAMA_DEFAULTS, "model": "qwen3:0.6b"}
