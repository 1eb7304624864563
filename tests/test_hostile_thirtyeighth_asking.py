"""The thirty-eighth hostile pass of issue 19, the asking side.

1. a resume onto an Ollama upgraded since the run asked (another /api/version) asked on, and the archive said one
   server version answered all: a resume or retry refuses a model run by another build of its engine than the run
   recorded (Ollama's version; llama-cpp-python's for runner=local) as the run's end would, unless `--force`, whose
   history entry keeps the version of the session that ended (`audit.samemodel.other_build`, `core.enginebuild`)
2. an answer cached under Ollama 0.12.6 was served to a run on Ollama 0.13.0 (another llama.cpp, other answers) as
   that run's own: the engine's build is part of the model's pin in the response cache's key
   (`execute.cachepin.model_pin`)
3. the descriptor a scorer's call set for signals to wake (`signal.set_wakeup_fd`) stayed for every later call: each
   signal writes a byte there, once it is closed to whatever file takes its number; put back as the process's other
   signal handling is (`execute.scorer_worker._Found`)
4. a codec search function a scorer's call registered past `codecs.register` (`_codecs.register`, which it is) or
   took away (`codecs.unregister(encodings.search_function)`: a later call's first lookup of a standard codec failed)
   reached every later call: the process ends after such a call, as after `codecs.register` (`execute.scorerleft`)
5. the logging a scorer's call changed stayed for every later call: a handler it added (each later call wrote each
   line once more), `logging.disable` (the later calls' lines hidden from the log); put back as the first call found
   it (`compiler.runstate.logging_now`, as a benchmark's file importing is kept from changing the run's)
6. a run failed as its model or its server's build changed while it asked (answers of either, which cannot be told
   apart: "run it again"), all of its samples answered, was finished `completed` by a plain `resume`, which asked
   nothing and checked nothing: the run's end notes it in run.json's history (`archive.sessions.CHANGED`, written by
   `execute.session.same_models_to_the_end`), and a resume refuses such a run unless `--force`
7. what a scorer's call froze for the garbage collector (`gc.freeze()`) stayed frozen for every later call (the cycles
   each call left kept for good): put back as the interpreter's other settings are (`compiler.runstate.SETTINGS`)

Found in review:
8. an Ollama upgraded while a run asked failed the run, yet the answers it kept in the response cache after the
   upgrade stayed there under the first version's key, for a later run on that version to take as its own: they are
   forgotten, as a re-pulled model's are (`execute.session.same_to_the_end`)
"""

from __future__ import annotations

import pytest

from benchrun.archive.reader import load_run
from benchrun.audit.samemodel import check_model
from benchrun.core.errors import EXIT, ArchiveError
from tests.helpers.archives import synthetic_run
from tests.helpers.p38_asking import (
    FREEZING,
    LOGGING,
    REGISTERING,
    UNREGISTERING,
    WAKING,
    asked_by_version,
    found_by,
    resumed_on,
    upgraded_then_resumed,
    upgraded_while_cached,
)

UPGRADED = ("benchrun: error: model llama3.2 is now run by server version '0.13.0', the run's by server version "
            "'0.12.6' (upgraded?); answers of two builds of its engine cannot be told apart: resume with --force to "
            "continue with it anyway (recorded in run.json)\n")
CHANGED = ("Ollama at {url} changed version while it was asked: '0.12.6' when it began, '0.13.0' as it ended "
           "(upgraded?); the answers may come from either build and cannot be told apart, and the run's identity names "
           "the first: run it again")
FINISHED = ("benchrun: error: in '{run}/run.json': run {id} failed as it ended: " + CHANGED + "; a resume would finish "
            "it with those answers: resume with --force to do so anyway (recorded in run.json)\n")


def test_a_resume_onto_an_upgraded_ollama_is_refused_and_the_run_left_as_it_was(tmp_path):
    assert resumed_on(tmp_path, "0.13.0", ()) == [(EXIT["archive"], UPGRADED, "failed", [], "0.12.6")]


def test_a_forced_resume_onto_an_upgraded_ollama_keeps_the_version_of_the_session_that_ended(tmp_path):
    assert resumed_on(tmp_path, "0.13.0", ("--force",)) == [(EXIT["ok"], "", "completed", ["0.12.6"], "0.13.0")]


def test_a_resume_of_a_local_run_refuses_another_llama_cpp_python_and_retry_says_retry(tmp_path):
    local = {"file": "m.gguf", "sha256": "ab" * 32, "digest": "ab" * 32, "llama_cpp_version": "0.3.9"}
    run = load_run(synthetic_run(tmp_path / "run", [1], model="m", identity=local))
    check_model(run, local, force=False)
    check_model(run, {**local, "llama_cpp_version": "0.3.16"}, force=True)
    with pytest.raises(ArchiveError) as raised:
        check_model(run, {**local, "llama_cpp_version": "0.3.16"}, force=False, command="retry")
    assert str(raised.value) == ("model m is now run by llama-cpp-python '0.3.16', the run's by llama-cpp-python "
                                 "'0.3.9' (upgraded?); answers of two builds of its engine cannot be told apart: retry "
                                 "with --force to continue with it anyway (recorded in run.json)")


def test_a_resume_onto_the_same_version_asks_on(tmp_path):
    assert resumed_on(tmp_path, "0.12.6", ()) == [(EXIT["ok"], "", "completed", ["0.12.6"], "0.12.6")]


def test_an_answer_cached_under_one_ollama_version_is_not_served_to_a_run_on_another(tmp_path):
    assert asked_by_version(tmp_path, ["0.12.6", "0.13.0"]) == [3, 3]


def test_a_wakeup_descriptor_a_scorer_set_is_put_back_for_the_next_call(tmp_path):
    assert found_by(tmp_path, WAKING) == [({"s.set": 0}, None)] * 3


@pytest.mark.parametrize(("source", "found"), [(REGISTERING, [1, 0]), (UNREGISTERING, [0, 1])])
def test_a_codec_search_function_a_call_added_or_took_away_reaches_no_later_call(tmp_path, source, found):
    assert found_by(tmp_path, source, n=2) == [({"s.found": each}, None) for each in found]


def test_the_logging_a_scorer_changed_is_put_back_for_the_next_call(tmp_path):
    assert found_by(tmp_path, LOGGING) == [({"s.handlers": 0, "s.disabled": 0}, None)] * 3


def test_a_run_failed_as_its_server_changed_is_finished_by_a_resume_asking_nothing_only_forced(tmp_path):
    refused, forced = upgraded_then_resumed(tmp_path)
    assert refused == (EXIT["archive"], FINISHED, "failed", {"changed_while_asked": CHANGED})
    assert forced[:3] + ({k: forced[3][k] for k in ("previous_status", "previous_reason", "forced")},) == (
        EXIT["ok"], "", "completed", {"previous_status": "failed", "previous_reason": CHANGED, "forced": True})


def test_objects_a_scorer_froze_for_the_garbage_collector_are_unfrozen_for_the_next_call(tmp_path):
    assert found_by(tmp_path, FREEZING) == [({"s.frozen": 0}, None)] * 3


def test_an_ollama_upgraded_mid_run_leaves_none_of_that_runs_answers_in_the_cache(tmp_path):
    assert upgraded_while_cached(tmp_path) == (True, 0)
