"""Hostile input, fourteenth pass, what the lead session tried beside the three sides' passes: the cases it found
bad, each with the rule it now obeys.

- an environment holding older releases than benchrun works with, each inside the bounds pyproject.toml gave:
  ollama-python 0.4 to 0.6.1 ended every Ollama run in a traceback (no `ShowResponse.capabilities`, no
  `AsyncClient.close`); jsonschema-rs before 0.49 raised out of the format check on an answer holding an integer past
  64 bits (before 0.35) or nested deep, a traceback that lost the run; pydantic before 2.12 ignored
  `Field(exclude_if=)`, so records kept their absent fields as `null`. Now the bounds are the releases that work,
  and `.ci/lower-bounds` runs the tests of the code that calls each dependency at its lowest release (found so)
- a host name with an empty or over-long label: the refusal quoted the IDNA codec's words, which Python 3.13 changed,
  so the one line differed from Python to Python; now benchrun says which label, alike on every Python
  (`core.serverurls._bad_label`)
- a custom scorer that never returns, on a run's last call: the call timed out and the run ended, but the scorer
  process, whose replacement the end of the run cancelled before it could kill it, went on spinning a core after
  benchrun exited (97% CPU, for ever); now the end of the run kills a process it was replacing
  (`execute.scorerprocess.ScorerProcess.close`)
- the same scorer when benchrun itself is killed (SIGKILL, the OOM killer): its process went on for ever too; now the
  scorer process and the embedded engine's die with the run that started them (`core.interrupts.die_with`, Linux's
  PR_SET_PDEATHSIG)

What held: under Python 3.13 the whole suite, once the tests close the response caches they open (3.13 reports an
unclosed SQLite connection in whichever test the collector runs); Python 3.12 ran the quick tests of the runs side.
"""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab, wait_for
from tests.helpers.commands import call_benchrun

pytestmark = pytest.mark.slow

SPINNING = "def times7(response, values):\n    while True:\n        pass\n"
"""A scorer that never returns and never reads again."""


def scorer_processes(cwd: Path) -> list[int]:
    """The scorer processes working in `cwd` (each starts where its run does)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"benchrun.execute.scorer_worker" in Path(f"/proc/{pid}/cmdline").read_bytes() and \
                    os.readlink(f"/proc/{pid}/cwd") == str(cwd):
                found.append(int(pid))
        except OSError:  # it ended as it was read
            continue
    return found


def cpu_seconds(pid: int) -> float:
    """The processor time process `pid` has used in user mode (0 once it has ended)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return int(fields[11]) / os.sysconf("SC_CLK_TCK")


def test_a_scorer_that_overruns_the_last_call_is_killed_when_the_run_ends(tmp_path):
    with Lab(tmp_path, n=1, latency_s=0, scorer=SPINNING) as lab:
        result = lab.run(*lab.args("scorer_timeout_s=0.5"))
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert scorer_processes(tmp_path) == []


def test_a_scorer_process_dies_with_a_run_that_is_killed(tmp_path):
    with Lab(tmp_path, n=1, latency_s=0, scorer=SPINNING) as lab:
        run = lab.start(*lab.args("scorer_timeout_s=60"))
        wait_for(lambda: any(cpu_seconds(pid) > 1.5 for pid in scorer_processes(tmp_path)), 60)  # in the loop
        os.kill(run.pid, signal.SIGKILL)
        run.communicate()
        with suppress(TimeoutError):
            wait_for(lambda: scorer_processes(tmp_path) == [], 10)
    assert scorer_processes(tmp_path) == []


@pytest.mark.parametrize(("host", "why"), [
    ("a..b", "an empty label"), (".a", "an empty label"), ("a" * 64 + ".b", "a label of 64 characters"),
    ("b." + "ｇ" * 64, "a label of 64 characters")])
def test_a_host_names_bad_label_is_said_alike_on_every_python(tmp_path, host, why):
    result = call_benchrun(f"runner.host='http://{host}:1'", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: in 'config': runner.host: 'http://{host}:1' is not a server's URL: its host '{host}' is "
        f"not a host name that can be asked ({why}; each label is 1 to 63 characters)\n"))


@pytest.mark.parametrize("host", ["a.b.", "localhost", "a" * 63 + ".b"])
def test_a_host_name_of_good_labels_is_taken(tmp_path, host):
    result = call_benchrun(f"runner.host='http://{host}:1'", "dry_run=true", f"outputs={tmp_path / 'outputs'}",
                           cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
