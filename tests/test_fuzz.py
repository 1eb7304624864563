"""Fuzzing the answer path and the record writer with what a hostile server or scorer can send: any text (lone
surrogates and control characters included), any JSON-like extra, numbers of any size. Whatever comes is kept as
valid records that read back, or refused as that sample's error; nothing raises past the boundary."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchrun.archive.books import Books
from benchrun.archive.reader import load_run
from benchrun.archive.writer import RunWriter, environment, new_run_id, now
from benchrun.compiler.scoring import MAX_METRIC, metrics
from benchrun.core.errors import EXIT
from benchrun.core.manifest import FormatSpec, Manifest, RunnerSpec, Sample, TaskEntry
from benchrun.core.records import Completion, Counts, RunInfo, ScoreRecord, answered
from benchrun.core.text import writable
from benchrun.execute.boundary import TooLarge, received
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import ChatRequest

ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=200)
"""Every code point, surrogates and control characters included."""
JSON_LIKE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT,
                         lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
                         max_leaves=12)
NUMBERS = st.integers() | st.floats() | st.integers(min_value=-(10 ** 400), max_value=10 ** 400)
SCORES = NUMBERS | st.booleans() | ANY_TEXT | st.none() | st.dictionaries(ANY_TEXT | st.integers(), NUMBERS,
                                                                         max_size=5)


@given(text=ANY_TEXT, done=st.none() | ANY_TEXT, extra=st.dictionaries(ANY_TEXT, JSON_LIKE, max_size=4))
def test_any_answer_is_kept_writable_or_refused_as_too_large(text, done, extra):
    completion = Completion(text=text, done_reason=done, extra=extra)
    try:
        kept = received(completion, max_bytes=600, key="runner.max_response_bytes")
    except TooLarge:
        assert len(text.encode("utf-8", "surrogatepass")) > 600
        return
    assert kept.text == writable(text)
    line = kept.model_dump_json().encode("utf-8")
    assert Completion.model_validate_json(line) == kept


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(ANY_TEXT, min_size=1, max_size=5))
def test_the_writer_commits_any_answer_and_the_reader_reads_it_back(tmp_path_factory, texts):
    run_dir = tmp_path_factory.mktemp("run")
    writer = RunWriter.create(run_dir, RunInfo(run_id=new_run_id(), status="running", started_at=now(),
                                               benchmark="b", model="m", manifest_id=None, runner={},
                                               environment=environment(), counts=Counts(samples=0)))
    try:
        writer.compiled(manifest(len(texts)))
        for i, text in enumerate(texts):
            writer.record_response(answered(received(Completion(text=text), 1 << 20, "runner.max_response_bytes"), id=f"t:i={i}", task="t",
                                            repeat=0, seconds=0.0, attempts=1, failed_attempts=()))
        writer.finish("completed")
    finally:
        writer.release()
    assert [r.text for r in load_run(run_dir).responses()] == [writable(text) for text in texts]


def manifest(n: int) -> Manifest:
    """A manifest of one task `t` with samples t:i=0 .. t:i=n-1."""
    task = TaskEntry(name="t", source="tasks.yml", template="{i}", reference="calculated", value_combinations="tuple",
                     format=FormatSpec(name="StringAnswer", origin="builtin", json_schema={}), scorers=(),
                     n_samples=n)
    return Manifest(benchmark="b", config={}, files=(), runner=RunnerSpec(type="ollama", model="m"), tasks=(task,),
                    samples=tuple(Sample(id=f"t:i={i}", task="t", prompt=str(i), values={"i": i}) for i in range(n)))


@given(result=SCORES)
def test_any_scorer_result_is_metrics_a_summary_can_hold_or_a_type_error(result):
    try:
        found = metrics("s", result)
    except TypeError:
        return
    assert all(math.isfinite(value) and abs(value) <= MAX_METRIC for value in found.values())
    assert all(name == writable(name) for name in found)
    books = Books(manifest(2))
    books.scores([ScoreRecord(id=f"t:i={i}", task="t", scorer="s", metrics=found) for i in range(2)])
    json.dumps(books.summary("0" * 64, "m").model_dump(mode="json"), allow_nan=False)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=ANY_TEXT)
def test_a_run_against_a_server_answering_anything_ends_whole_and_verifies(tmp_path_factory, answer):
    root = tmp_path_factory.mktemp("lab")

    def odd(req: ChatRequest):
        return answer if req.prompt.split()[4:5] == ["1"] else half_right(req)

    with Lab(Path(root), n=3, responder=odd) as lab:
        result = lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
        verified = lab.call("verify", str(run_dir), module="benchrun.audit")
    assert result.returncode == EXIT["ok"], result.stderr
    assert json.loads((run_dir / "run.json").read_text())["status"] in ("completed", "completed_with_errors")
    assert verified.returncode == EXIT["ok"], verified.stdout
