"""Hostile input, thirteenth pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad,
each with the rule it now obeys.

- a custom scorer that leaves a timer set (`signal.alarm`, `signal.setitimer`, as a scorer bounding its own work
  does, then returning before it went off) with a handler of its own: the timer went off in another sample's call,
  whose score became the handler's error (`Late: a timer set by an earlier call`), or, with no handler, killed the
  process in that call (`ScorerProcessDied`); a scorer lowering a resource limit for its own work
  (`resource.setrlimit(RLIMIT_AS, ...)`, as HumanEval's guard does) or setting a umask: every later call in that
  process ran under it (a MemoryError of another sample), so a score depended on which samples that process had
  scored before, as the twelfth pass found of the directory and environment. Now every call starts with the signal
  handling, limits and umask the first call found and no timer set (`scorer_worker._Found`; the signals through
  `core.interrupts.handling_now`, which an import's are put back by too)
- custom_scorer.py edited while the run runs (a helper or a constant, the scorer function itself as it was; or the
  scorer rewriting its own file): the scorer process started after it (a timeout or a crash replaces it) imported
  the file as it was then, and the rest of the run was scored by that code, exit 0, while manifest.json kept the
  sha256 of the file the run began with; the process checked only each scorer function's source. Now a module of
  a benchmark is made of the bytes read once, whose sha256 is kept (`compiler.usercode.import_file`), and the scorer
  process imports the file only if it still hashes to that: else every call after is `ScorerUnavailable`, saying so

What held (tried, nothing new): see the end of this docstring's list in the report of the pass.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab
from tests.helpers.wire import records

pytestmark = pytest.mark.slow


def scores(lab: Lab) -> list[tuple[dict | None, dict | None]]:
    return sorted(((s["metrics"], s["error"]) for s in records(lab, "scores.jsonl") if s["scorer"] == "s"),
                  key=json.dumps)


STATE = """import os
import resource
import signal


def s(response, values):
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    mark = 2**40 if hard == resource.RLIM_INFINITY else hard - 4096
    found = {'timer': int(signal.getitimer(signal.ITIMER_REAL)[0] > 0),
             'handler': int(signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL),
             'umask': int(os.umask(0o137) == 0o137), 'limit': int(soft == mark)}
    signal.signal(signal.SIGALRM, _late)
    signal.setitimer(signal.ITIMER_REAL, 1000)
    resource.setrlimit(resource.RLIMIT_AS, (mark, hard))
    return found


def _late(signum, frame):
    raise RuntimeError('a timer set by an earlier call')
"""


def test_a_timer_a_handler_a_umask_or_a_limit_a_scorer_leaves_set_does_not_reach_the_next_call(tmp_path):
    with Lab(tmp_path, n=3, latency_s=0, scorer=STATE) as lab:
        result = lab.call(*lab.args())
    assert (result.returncode, result.stderr) == (EXIT["ok"], "")
    assert scores(lab) == [({"s.handler": 0, "s.limit": 0, "s.timer": 0, "s.umask": 0}, None)] * 3


REWRITING = """import os
from pathlib import Path


def s(response, values):
    here = Path(__file__)
    if WORTH == 1:
        here.write_text(here.read_text().replace('WORTH = ' + '1', 'WORTH = ' + '0'))
        os._exit(1)
    return WORTH


WORTH = 1
"""


def test_a_scorer_file_edited_mid_run_is_not_imported_by_the_process_that_replaces_one(tmp_path):
    with Lab(tmp_path, n=3, latency_s=0, scorer=REWRITING) as lab:
        result = lab.call(*lab.args())
        [run_dir] = lab.run_dirs()
    began, now = (hashlib.sha256(text.encode()).hexdigest() for text in
                  (REWRITING, REWRITING.replace("WORTH = 1\n", "WORTH = 0\n")))
    path = tmp_path / "bench" / "custom_scorer.py"
    assert (result.returncode, result.stderr, path.read_text()) == (EXIT["ok"], "", REWRITING.replace(
        "WORTH = 1\n", "WORTH = 0\n"))
    assert {f["path"]: f["sha256"] for f in json.loads((run_dir / "manifest.json").read_text())["files"]}[
        "custom_scorer.py"] == began
    unavailable = {"type": "ScorerUnavailable", "message": (
        f"in '{path}': changed since the run started: it hashes to {now[:12]}…, not to {began[:12]}… as when the run "
        "read it; its scores would come from other code than the run recorded")}
    assert scores(lab) == sorted([(None, {"type": "ScorerProcessDied", "message": (
        "the scorer's process ended (exit code 1) during this call")}), (None, unavailable), (None, unavailable)],
        key=json.dumps)
