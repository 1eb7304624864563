"""The twenty-second hostile pass of issue 19, the side attacking what this pass's other sides merged (rev22).

Fixed:
1. `benchrun-audit rescore RUN --scorer contains` of a task whose references are an option's capital letter (`B`) on
   a free-text answer was written, nearly every answer 1: a compile refuses that task so graded, the rescore did not
   (`compiler.answerable.refuse_unscorable` weighs the letters rule too).
"""

from __future__ import annotations

import json

import pytest

from benchrun.archive.reader import load_run
from benchrun.audit.rescore import rescore
from benchrun.core.errors import TaskError
from benchrun.testing.chat import Reply
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import make_run

MMLU = {"tasks.yml": "- name: mmlu\n  template: \"{question}\\n(A) {A}\\n(B) {B}\\n(C) {C}\\nAnswer with the letter.\"\n"
                     "  values_file: data/mmlu.csv\n  scorer: exact_match\n",
        "data/mmlu.csv": "id,question,A,B,C,reference\nm1,Capital of France?,Berlin,Paris,Rome,B\n"
                         "m2,Largest planet?,Mars,Venus,Jupiter,C\n"}
"""A multiple-choice task from a CSV, its references the right option's letter, graded by exact_match."""


def _wrong(request) -> Reply:
    return Reply(content=json.dumps({"answer": "Answer: (A) because"}))


@pytest.mark.slow
def test_a_rescore_by_contains_of_capital_letter_references_on_free_text_is_refused(tmp_path):
    """Before: rescore 001 written, contains 1.000 for two wrong answers (`Answer: (A) because` holds `B` and `C`)."""
    write_bench(tmp_path, MMLU)
    run_dir = make_run(tmp_path, "task.path=bench", responder=_wrong)
    with pytest.raises(TaskError) as refused:
        rescore(load_run(run_dir), ["contains"])
    assert str(refused.value) == (
        f"in '{run_dir / 'manifest.json'}': task 'mmlu': reference: the reference of sample 'mmlu:m1' is \"B\", a "
        "capital letter: contains finds it, ignoring case, in every answer with that letter in it (\"Answer: (C)\" "
        "holds \"A\", \"because\" holds \"B\"), so nearly every answer would score 1; the run's references are as it "
        "asked them: choose another scorer (exact_match)")
    assert not (run_dir / "rescores").exists()
    assert rescore(load_run(run_dir), ["exact_match"]).means
