"""The fortysecond hostile pass of issue 19, the asking side.

1. a scorer importing numpy, pandas, PyYAML, OmegaConf or scipy.special in its call (not at its file's top) ended the
   scorer process after every call, each sample's process importing it again (20 samples: 20 processes, 3.9 s of
   CPU): the process that replaces one imports, before its first call, the libraries the calls of those before it
   first imported (`execute.scorerleft.preload`), so the process ends once per run for such a scorer
"""

from __future__ import annotations

from tests.helpers.p42_asking import IMPORTING, ends_and_scores


def test_a_scorer_importing_numpy_in_its_call_ends_the_scorer_process_once_per_run(tmp_path):
    ends, scores = ends_and_scores(tmp_path, IMPORTING, 20)
    assert ends == 1
    assert [metrics["s.a"] for metrics, _ in scores] == list(range(20))
    assert [(metrics["s.first"], error) for metrics, error in scores].count((0, None)) == 19
