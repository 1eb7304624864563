"""The fortysecond hostile pass of issue 19, the asking side.

1. a scorer importing numpy, pandas, PyYAML, OmegaConf or scipy.special in its call (not at its file's top) ended the
   scorer process after every call, each sample's process importing it again (20 samples: 20 processes, 3.9 s of
   CPU): the process that replaces one imports, before its first call, the libraries the calls of those before it
   first imported (`execute.scorerleft.preload`), so the process ends once per run for such a scorer
2. the modules of the shipped benchmarks (`benchrun/demos/`) had their names put back after each call as if they were
   benchrun's own (a demo's scorer counting its calls in a global counted 1 each call, where the same file elsewhere
   counted on): they are a benchmark's own, whose names are the scorers' own (`core.stdlibnames.DEMOS`)
"""

from __future__ import annotations

from pathlib import Path

from benchrun.core import stdlibnames
from benchrun.core.resources import demos_dir
from tests.helpers.p42_asking import IMPORTING, ends_and_scores, module_at


def test_a_scorer_importing_numpy_in_its_call_ends_the_scorer_process_once_per_run(tmp_path):
    ends, scores = ends_and_scores(tmp_path, IMPORTING, 20)
    assert ends == 1
    assert [metrics["s.a"] for metrics, _ in scores] == list(range(20))
    assert [(metrics["s.first"], error) for metrics, error in scores].count((0, None)) == 19


def test_a_shipped_benchmark_s_module_s_names_are_the_scorers_own():
    kept = [stdlibnames._kept(name, module_at(name, file)) for name, file in (
        ("custom_scorer", demos_dir() / "listbench" / "custom_scorer.py"),
        ("benchrun.core.text", Path(stdlibnames.BENCHRUN) / "core" / "text.py"),
        ("custom_scorer", Path(stdlibnames.BENCHRUN) / "demos" / "listbench" / "custom_scorer.py"))]
    assert kept == [False, True, False]
