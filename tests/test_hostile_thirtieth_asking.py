"""The thirtieth hostile pass of issue 19, the asking side.

- a resume (or retry) of an OpenAI-compatible run that no digest pins read its responses (and judge calls) once more
  to learn the name its answers gave the model: that name is kept as the pass the command makes over them for its
  own ends goes (`core.recordvalues.Served`, fed by `audit.resume._unanswered`, `audit.retry._todo`,
  `execute.judging.archived_calls`, `audit.judged.calls_by_answer`)
- a judge's grade of `1e400` was said as `inf` (and `1e300` as `1e+300`): Python read the reply's number first. A
  grade is said as the judge wrote it, bounded in length (`execute.judging._as_written`)
"""

from __future__ import annotations

import pytest

from benchrun.archive.reader import Run, load_run
from benchrun.audit.resume import resume_run
from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun
from tests.helpers.p28_asking import AnsweringAs, Breaks
from tests.helpers.p29_asking import judged_by
from tests.helpers.p30_asking import counting


def test_a_resume_reads_the_name_its_answers_gave_the_model_in_its_own_pass_over_them(tmp_path, monkeypatch):
    """A resume read responses.jsonl in five places, check_model's among them; now in four, the same refusal kept
    (test_hostile_twentyninth_asking)."""
    with AnsweringAs("qwen2.5-7b", responder=Breaks(5)) as first:
        done = call_benchrun("runner=openai", f"runner.base_url={first.url}", "runner.model=qwen", "runner.retries=0",
                             "runner.structured=json_schema", "cache=false", f"outputs={tmp_path / 'o'}", cwd=tmp_path)
    [run_dir] = (tmp_path / "o").glob("*/*")
    read: list[str] = []
    monkeypatch.setattr(Run, "responses", counting(read, Run.responses))
    with AnsweringAs("qwen2.5-7b") as same:
        info = resume_run(load_run(run_dir), host=same.url)
    assert (done.returncode, info.status) == (EXIT["runner"], "completed")
    assert read == ["_unanswered", "earlier_wall_s", "reopen", "_resume"]


@pytest.mark.parametrize(("grade", "shown"), [("1e400", "1e400"), ("-1E+400", "-1E+400"), ("1e300", "1e300"),
                                              ("1" + "0" * 400 + ".5", "a number written in 403 characters")])
def test_a_judges_grade_out_of_range_is_said_as_the_judge_wrote_it(tmp_path, grade, shown):
    result, judged = judged_by(tmp_path, '{"grade": %s}' % grade)
    message = (f"judge 'names' graded by {shown}, out of a score's range: a grade is a finite number of magnitude at "
               "most 1e+100")
    assert result.returncode == EXIT["ok"]
    assert [error for _, _, error in judged] == [{"type": "JudgeReplyInvalid", "message": message}] * 3
