"""The thirty-ninth hostile pass of issue 19, the asking side.

1. the event loop a scorer's call set and closed (`asyncio.set_event_loop(loop); loop.close()`) was every later call's
   `asyncio.get_event_loop()`, and after a call's `asyncio.run(...)` the later calls had none (RuntimeError): each call
   starts with asyncio's policy and current loop as the first call found them, and a call that closed the loop the
   process found ends the process (`execute.scorerloop`)
2. a run an earlier benchrun failed as its Ollama was upgraded or its model pulled again while it asked (before
   run.json's history noted it, `sessions.CHANGED`) was finished `completed` by a plain resume asking nothing: the
   reason such a run's run.json keeps is read as the note (`archive.sessions.CHANGED_BEFORE`)
3. a name of a standard module a scorer's call replaced or removed (`time.time = lambda: 0`, `math.pi = 3`, `del
   math.tau`, `sys.argv = [...]` to call a command's main) stayed so for every later call: each call starts with the
   names the standard library's modules held as the first call found them (`core.stdlibnames`)
4. the hooks a scorer's call set for async generators (`sys.set_asyncgen_hooks`), the depth of coroutines' origins it
   kept, what `breakpoint()` calls (`sys.breakpointhook`) and the finder of a sys.path entry
   (`sys.path_importer_cache[folder] = None`) reached every later call: put back as the interpreter's other settings
   are (`compiler.runstate.SETTINGS`)
5. how numpy prints arrays as a scorer's call set it (`numpy.set_printoptions(precision=2)`), the function it set for
   floating-point errors (`numpy.seterrcall`) and its buffers' size stayed for every later call: put back as its
   generator and its error handling are (`execute.scorer_worker._held_by_libraries`)
6. an attribute of a standard class a scorer's call replaced (`fractions.Fraction.__str__ = ...`) stayed so for every
   later call; `json.JSONEncoder.item_separator = ";"` changed the process's own reply to that call, which the run
   then took for a line the scorer wrote into the reply pipe (`ScorerProtocolError`, its score lost): the classes
   the standard library's modules define are put back with their names, before the reply is written
   (`core.stdlibnames`)
7. the garbage collector's debugging a call set (`gc.set_debug(gc.DEBUG_SAVEALL)`: every later call's garbage kept)
   stayed set: put back as its other settings are (`compiler.runstate.SETTINGS`)
8. a scheduling policy a call set (`os.sched_setscheduler(0, os.SCHED_IDLE, ...)`: every later call run only when
   nothing else would, which the process may not undo) stayed: the process ends after such a call, as after
   `os.nice` (`execute.scorerleft`)
9. a `random.py` in the folder benchrun was run from stood in for the standard module in the scorer process (`-m`
   puts the working directory first on sys.path): every user scorer's score `ScorerUnavailable`, blamed on the scorer
   writing to the reply pipe, in a run that exited 0; a `json.py` there failed the import check, blamed on the
   benchmark's custom_scorer.py (`it ended the process importing it`): benchrun starts its own Python processes (the
   scorer process, the import check, the embedded engine's) with `-P` (`core.ownpython`)
10. a `retry` of a run failed as its Ollama was upgraded while it asked carried that run's answers (of either build)
    into a new run, completed with exit 0, where a resume refuses to finish such a run: a retry refuses it as a resume
    does, unless `--force` (`audit.samemodel.check_unchanged`, which both call)
11. the csv module's bound on a field a scorer's call set (`csv.field_size_limit(sys.maxsize)`, an idiom to read large
    fields) and the dialects it registered or replaced stayed for every later call: put back as `random`'s generator
    is (`execute.scorer_worker._held_by_libraries`); so is decimal's DefaultContext, which a call changed in place
    (`decimal.DefaultContext.prec = 5`: every later call's new threads computed to 5 digits), and how pickle reduces a
    type a call registered (`copyreg.pickle(range, ...)`)
12. a benchmark's custom_scorer.py that set an asyncio event loop policy as it was imported (in the run's own process,
    to compile) made the run's own event loop that policy's: one that made none ended the run in a traceback, exit 1
    (uvloop's: the run asked on uvloop): put back after the import as the interpreter's other settings are
    (`compiler.runstate.SETTINGS`)
13. a benchmark's custom_scorer.py that set `json.JSONEncoder.key_separator = "="` as it was imported (in the run's own
    process) had the run read its server's answers with it: the preflight failed, exit 3, blaming the server ("not
    Ollama's answer"); the run's records would have been written so: the standard library's names are put back after
    the import (`compiler.runstate.kept`, by `core.stdlibnames`)
14. one that set `json.JSONEncoder.item_separator = ";"` so had the import check's process write what it found with
    it: the run read that as no JSON, a traceback, exit 1: the check writes with its own encoder, made before the file
    is imported (`compiler.importprobe.PROBE`)
15. a machine's `PYTHONBREAKPOINT=0` made a `breakpoint()` left in a scorer nothing: its sample scored, where on
    another machine the call ended in BdbQuit, that sample's error (a rescore there scored it otherwise): the scorer
    process and the import check start without it (`core.codeenv.MACHINE_SAID`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.p38_asking import found_by
from tests.helpers.p39_asking import (
    CHANGING,
    LOOPING,
    RETUNING,
    STOPPING,
    found_after_importing,
    resumed_before_noted,
    retried_after_change,
    scored_beside,
)

REFUSED = "benchrun: error: in '{{run}}/run.json': run {{id}} failed as it ended: {}; a {} would {}: {} with --force " \
          "to do so anyway (recorded in run.json)\n"
UPGRADED = ("Ollama at {url} changed version while it was asked: '0.12.6' when it began, '0.13.0' as it ended "
            "(upgraded?); the answers may come from either build and cannot be told apart, and the run's identity "
            "names the first: run it again")
REPULLED = ("model llama3.2 changed on {url} while the run asked: digest 45b1c9806e74 when it began, digest "
            "ffffffffffff as it ended (pulled again?); its answers may come from either model and cannot be told "
            "apart: run it again")


def test_each_scorer_call_finds_the_event_loop_the_first_found(tmp_path):
    assert found_by(tmp_path, LOOPING, n=4) == [({"s.closed": 0}, None)] * 4


@pytest.mark.parametrize(("repulled", "why"), [(False, UPGRADED), (True, REPULLED)])
def test_a_run_an_earlier_benchrun_failed_as_its_model_changed_is_not_finished_by_a_plain_resume(tmp_path, repulled,
                                                                                                  why):
    refused = REFUSED.format(why, "resume", "finish it with those answers", "resume")
    assert resumed_before_noted(tmp_path, repulled) == (EXIT["archive"], refused, "failed")


def test_the_standard_library_the_interpreter_numpy_and_csv_as_a_call_changed_them_are_put_back(tmp_path):
    names = ("pi", "gone", "time", "agen", "depth", "bp", "finder", "argv", "print", "call", "bufsize", "limit",
             "dialect", "excel", "threads", "reduce")
    assert found_by(tmp_path, CHANGING, n=2) == [({f"s.{name}": 0 for name in names}, None)] * 2



def test_standard_classes_the_collector_s_debugging_and_the_scheduling_a_call_changed_reach_no_later_call(tmp_path):
    found = {"s.separator": 0, "s.str": 0, "s.debug": 0, "s.policy": 0}
    assert found_by(tmp_path, RETUNING) == [(found, None)] * 3


def test_a_standard_module_s_name_in_the_folder_benchrun_runs_from_stands_in_for_none_in_its_processes(tmp_path):
    beside = {"random.py": "print('a random.py of the user')\n", "json.py": "x = 1\n"}
    assert scored_beside(tmp_path, beside) == (EXIT["ok"], "", [({"s.ok": 1}, None)] * 2)


def test_a_retry_of_a_run_failed_as_its_ollama_was_upgraded_is_refused_unless_forced(tmp_path):
    refused = REFUSED.format(UPGRADED, "retry", "carry those answers over", "retry")
    assert retried_after_change(tmp_path) == (EXIT["archive"], refused, ["failed"])




def test_an_event_loop_policy_or_a_standard_class_a_benchmark_s_file_set_as_it_was_imported_is_not_the_run_s(tmp_path):
    assert found_after_importing(tmp_path) == [({"s.ok": 1}, None)] * 2


def test_a_machine_s_pythonbreakpoint_decides_no_score(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    assert found_by(tmp_path, STOPPING, n=1) == [(None, {"type": "BdbQuit", "message": "BdbQuit"})]
