"""Hostile input, twenty-first pass, the lead's own cases: each with the rule it now obeys.

- a rescore of a killed run (`interrupted`: 10 of its 60 answers), the run then resumed to its end: `verify` called
  the rescore intact and said nothing of it covering 10 answers of 60, and the rescore itself printed its means with
  no word of the answers it could not score. Now the rescore says `scored 10 of the 60 answers the run asks`, and
  verify says of it what it covers against what the run holds now (`audit.rescored.covers_fewer`)
- a sweep's directory whose jobs are gone, holding only a retry made in it, was said to hold `runs deeper in it`
  and `neither a run nor a sweep directory` (of a sweep's), naming the retry as if nested deeper. Now it is a sweep's
  directory holding no job, and the retry is named as made in it later (`archive.lookup._runs_in`)
- the response cache keyed a format by its schema as the task gives it, while runner=local (and llama-cpp-python's
  server, runner=openai with json_object) is given the schema as benchrun rewrites it for the grammar converter
  (`llamaschema.readable`), a rewrite each upgrade mends: answers made under an older benchrun's broken grammar (every
  one format-invalid) were served again after the upgrade, as answers to the request this run sends. The key now
  holds the format as the engine is given it (`Runner.format_sent`, `execute.cache.RunCache`); a format the rewrite
  leaves alone keeps its key, so those answers stay found
"""
from __future__ import annotations

import shutil
import signal
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.cache import Repeat, RunCache, cache_key
from benchrun.execute.runners.llamaschema import readable
from benchrun.execute.runners.registry import make_runner
from benchrun.testing.inprocess import cli
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.killed import KILLED_AT, N, killed_run, write_bench


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


@pytest.mark.slow
def test_a_rescore_of_a_killed_run_later_resumed_says_what_it_covers(tmp_path):
    write_bench(tmp_path / "bench")
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        run_dir = killed_run(tmp_path, server, signal.SIGTERM)
        rescored = audit(tmp_path, "rescore", str(run_dir))
        assert rescored.returncode == EXIT["ok"], rescored.stderr
        assert (f"scored {KILLED_AT} of the {N} answers the run asks: it holds no more yet (rescore again once it "
                "does)\n") in rescored.stdout
        assert audit(tmp_path, "resume", str(run_dir), "--host", server.url).returncode == EXIT["ok"]
    verified = audit(tmp_path, "verify", str(run_dir))
    assert verified.returncode == EXIT["ok"], verified.stdout
    assert (f"ok    rescores/001: scored {KILLED_AT} answers, those its run held when it was made; the run holds {N} "
            "now: its numbers cover those only (rescore again to score them all)\n") in verified.stdout
    again = audit(tmp_path, "rescore", str(run_dir))
    assert "answers the run asks" not in again.stdout
    assert "rescores/002: scored" not in audit(tmp_path, "verify", str(run_dir)).stdout


def test_a_sweeps_directory_holding_only_a_retry_names_it_as_made_later(tmp_path):
    sweep = tmp_path / "sweep"
    synthetic_run(sweep / "0_model-m", [1])
    synthetic_run(sweep / "0_model-m.retry1", [1], run_id="6" * 12, parent={"run_id": "5" * 12, "path": str(sweep / "0_model-m"),
                                                                           "carried": 1, "asked": 0})
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    shutil.rmtree(sweep / "0_model-m")
    done = audit(tmp_path, "export", "sweep")
    assert (done.returncode, done.stderr) == (EXIT["archive"], (
        "benchrun: error: in 'sweep': a sweep's directory holding no job (no folder directly in it holds a run.json); "
        "it holds only runs made in it later by a retry or a merge: name one (sweep/0_model-m.retry1)\n"))
    shown = audit(tmp_path, "rescore", "sweep")
    assert (shown.returncode, shown.stderr) == (EXIT["archive"], (
        "benchrun: error: in 'sweep': not a run directory (no run.json); it holds only runs made in it later by a "
        "retry or a merge: name one (sweep/0_model-m.retry1)\n"))


DIGITS = {"type": "object", "properties": {"answer": {"type": "string", "pattern": "^\\d+$"}}, "required": ["answer"]}
"""A format the rewrite for llama-cpp-python's converter changes (`\\d` spelt out)."""
PLAIN = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}


@pytest.mark.parametrize("runner", [{"type": "local"}, {"type": "openai", "structured": "json_object"}])
def test_the_cache_keys_a_format_as_the_engine_is_given_it(runner):
    made = make_runner({**runner, "model": "m"})
    run_cache = RunCache(None, runner["type"], {"digest": "d"}, {}, "m", "run1", 2**20, "b", made.format_sent)
    asked, repeat = [{"role": "user", "content": "2+2?"}], Repeat(0, 0)
    parts = {"runner": runner["type"], "model": {"digest": "d"}, "settings": {}, "prompt": "2+2?", "repeat": repeat}
    assert readable(DIGITS) != DIGITS
    assert run_cache.key(asked, DIGITS, repeat) == cache_key(**parts, schema=readable(DIGITS))
    assert run_cache.key(asked, DIGITS, repeat) != cache_key(**parts, schema=DIGITS)
    assert run_cache.key(asked, PLAIN, repeat) == cache_key(**parts, schema=PLAIN)


@pytest.mark.parametrize("runner", [{"type": "ollama"}, {"type": "openai", "structured": "json_schema"}])
def test_a_format_no_runner_rewrites_keeps_its_key(runner):
    made = make_runner({**runner, "model": "m"})
    assert made.format_sent(DIGITS) is DIGITS
