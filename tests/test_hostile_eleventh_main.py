"""Hostile input, eleventh pass, what the lead session tried beside the three sides' passes: the cases it found bad,
each with the rule it now obeys.

- `shard=1/<5,000 digits>`: one line, but Python's own words ("Exceeds the limit (4300 digits) for integer string
  conversion ... use sys.set_int_max_str_digits()"), advice for a programmer; now the line says what `shards=` says
  of such a number (`core.text.too_many_digits`)
- an override listing 18,000 values (`runner.model=[m0,...]`, as long as a command line lets one argument be):
  Hydra's parser took minutes over it before anything was said; now an override of more than 10,000 values (as many
  as a sweep runs jobs) is refused in one line before Hydra parses it (`compose.config.refuse_bad_overrides`)
- a signal the kernel hands to one of a run's helper threads (the event loop's executor or its child watcher) while
  every request waits for its answer: the handler, which runs in the main thread only, waited until an answer woke
  the loop, so a joblib worker sent SIGTERM went on waiting for a held answer (tests/test_faults.py holds the test:
  the event loop is now woken for every signal, `core.interrupts`)
"""

from __future__ import annotations

from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun


def test_a_shard_past_pythons_digits_is_said_in_benchruns_words(tmp_path):
    done = call_benchrun("shard=1/" + "9" * 5000, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': shard: i/n holds an integer of more than 4,300 digits, more than Python "
        "reads\n"))


def test_an_override_of_more_values_than_a_sweep_runs_is_refused_before_hydra_parses_it(tmp_path):
    names = ",".join(f"t{i}" for i in range(10_001))
    done = call_benchrun(f"task.only=[{names}]", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': task.only: the override lists 10,001 values, more than an override takes "
        "(10,000); give fewer, or split the sweep\n"))
