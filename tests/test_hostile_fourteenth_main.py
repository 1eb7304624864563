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
- a response cache's place in a folder the user may not enter (`XDG_CACHE_HOME=/root/x` for a user other than
  root; reported by the runs side): the network file-system check looked first and its PermissionError escaped, so
  the run was recorded `failed` by `permission denied: /root/x/benchrun`, with advice to resume that would fail the
  same way; now the place is checked first: one line naming `$XDG_CACHE_HOME` and the fix (exit 2), nothing asked, the
  run recorded `failed` for that reason (`execute.cache.Store`)
- the same scorer when benchrun itself is killed (SIGKILL, the OOM killer): its process went on for ever too; now the
  scorer process and the embedded engine's die with the run that started them (`core.interrupts.die_with`, Linux's
  PR_SET_PDEATHSIG)

What held: under Python 3.13 the whole suite, once the tests close the response caches they open (3.13 reports an
unclosed SQLite connection in whichever test the collector runs); Python 3.12 ran the quick tests of the runs side.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
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


UNPRIVILEGED = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner", "--inh-caps", "-all"]
"""A command run as root without the capabilities that pass over permissions: what a user whom they stop sees."""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_a_cache_place_the_user_may_not_enter_is_one_line_naming_what_chose_it(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x").chmod(0)
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        result = subprocess.run([*UNPRIVILEGED, sys.executable, "-m", "benchrun", "task.path=bench",
                                 f"runner.host={lab.server.url}", f"outputs={tmp_path / 'outputs'}"], cwd=tmp_path,
                                env={**child_env(), "XDG_CACHE_HOME": str(tmp_path / "x")}, capture_output=True,
                                text=True, timeout=120)
        asked = list(lab.server.requests)
    (tmp_path / "x").chmod(0o755)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: $XDG_CACHE_HOME: {tmp_path / 'x' / 'benchrun'}: permission denied; set cache_dir= to a "
        "directory on local disk, or cache=false\n"))
    [recorded] = [json.loads(path.read_text()) for path in (tmp_path / "outputs").rglob("run.json")]
    assert (asked, recorded["status"], recorded["reason"]) == ([], "failed", result.stderr[17:-1])
