"""Hostile input, eleventh pass, what the lead session tried beside the three sides' passes: the cases it found bad,
each with the rule it now obeys.

- `shard=1/<5,000 digits>`: one line, but Python's own words ("Exceeds the limit (4300 digits) for integer string
  conversion ... use sys.set_int_max_str_digits()"), advice for a programmer; now the line says what `shards=` says
  of such a number (`core.text.too_many_digits`)
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
