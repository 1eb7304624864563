"""The nineteenth hostile pass, the features a benchmark is made of (judges, chats, shards, several servers,
repeats, the cache) used together as a demanding researcher does.

Found and fixed:
- A judge named `s.x` on a task with a scorer `s` returning {"x": ...}: both gave metric `s.x`, averaged into one
  summary row (mean 0.458 of n 6 for 3 samples, a judge's grades and a scorer's values averaged together). Refused at
  compile as a judge with a scorer's own name is (compiler.judges.metric_clash).
- `rescore RUN --scorers FILE.py` (or `--scorer NAME`) adding to every task a scorer named as a judge of the run
  (`exact_match` beside judge `exact_match`): the rescore averaged the judge's grades with the scorer's values into one
  row and reported the judge's grades as changed. Refused before anything is written, by the same rule
  (compiler.judges.refuse_metric_clashes, called from audit.rescore).
- A judge's agreement with a 0/1 scorer at exactly chance came out kappa -3.3e-16 in summary.json, `-0.000` in
  `show`: worse than chance, by float rounding. The kappas are worked out in fractions (archive.agreement).
- A judge whose rubric never names {response} (`Answer: {{response}}`, escaped, or none at all): every answer was
  graded by a judge never shown it, the grades archived as the answers'. Refused at compile (compiler.judges.check_rubric).
- `merge` of shards of different manifests (one run with `task.system=...`, or its data file saved with CRLF line
  ends) said only the two manifest ids, not which setting or file to make alike. It now names the first difference
  `compare` finds (audit.merge._first_difference).

Tried and held: a judge's number grade of 1e400 (inf: that answer's scorer error), a judge reply of whitespace only
(JudgeReplyInvalid, the reply kept), examples files of 3,000 long shots (the chat held to task.max_prompt_chars),
`fewshot.n` 0 / true and `fewshot.seed` junk / 1.5 / true (schema lines), `shard=i/2` of a `sample:` draw with
repeats (a partition of the drawn set, merged to the unsplit run), one server listed as localhost and 127.0.0.1
(refused as listed twice), shards of a judged run with repeats and judge.repeats merged (summary and agreement the
unsplit run's), `task.system=` empty (refused) and `null` (the task's own), examples lines with `system`/`role` keys,
`values` {} or a list (schema lines), a task naming one judge twice, an answer that is a request error or not JSON
under a judge (NoResponse; judged as text), seeds past llama.cpp's by judge.repeats (refused), an empty shard of a
`limit:` draw (0 of 1 asked)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import ChatRequest, FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import audit, call_benchrun, run_benchrun, run_dir_of, run_in_process
from tests.helpers.judges import JUDGES, RESPONSE, RUBRIC, TASKS, answer


def judged_run(tmp_path: Path, responder, *args: str, judge: str = "names") -> Path:
    """A run of the judged symbol benchmark (tests.helpers.judges), its judge named `judge`, against a fake Ollama
    answering with `responder`."""
    write_bench(tmp_path, {"tasks.yml": TASKS.replace("judge: names", f"judge: {judge}"),
                           "judges.yml": JUDGES.replace("- name: names", f"- name: {judge}"),
                           "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=responder) as server:
        result = call_benchrun("task.path=bench", f"runner.host={server.url}", f"outputs={tmp_path / 'outputs'}",
                               "judge.model=qwen2.5", "cache=false", *args, cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    return run_dir_of(result.stdout)


def test_a_judge_at_exactly_chance_agreement_with_a_scorer_has_kappa_0_not_below(tmp_path):
    calls = itertools.count()

    def undecided(req: ChatRequest) -> str:
        """The judge grades every answer right, then wrong: a tie, its verdict 0 on every answer."""
        if req.model.startswith("qwen2.5"):
            return json.dumps({"verdict": ["right", "wrong"][next(calls) % 2]})
        return answer(req)

    run_dir = judged_run(tmp_path, undecided, "judge.repeats=2", "repeats=2")
    summary = json.loads((run_dir / "summary.json").read_text())
    # contains gives (1, 1) to '@' and 0 to the rest: verdicts all 0 agree on 4 answers of 6, exactly chance
    assert summary["judges"]["names"] == {
        "repeats": 2, "answers": 6, "self_agreement": 0.0, "kappa": -1.0,
        "with_scorers": {"contains": {"answers": 6, "agreement": 4 / 6, "kappa": 0.0}}}
    shown = call_benchrun("show", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert "│ names │ contains           │       6 │     0.667 │  0.000 │" in shown.stdout.splitlines()
    assert [c["grade"] for c in read_jsonl(run_dir / "judgements.jsonl")][:4] == ["right", "wrong"] * 2


@pytest.mark.slow
def test_a_judge_named_as_a_metric_of_a_dict_scorer_of_its_task_is_refused(tmp_path):
    assert _refused_dry_run(tmp_path, {
        "tasks.yml": TASKS.replace("judge: names", "judge: s.x").replace("scorer: contains", "scorer: [contains, s]"),
        "judges.yml": JUDGES.replace("- name: names", "- name: s.x"), "custom_response.py": RESPONSE,
        "custom_scorer.py": "def s(response, values):\n    return {'x': 0.25}\n"}) == (
        "benchrun: error: in 'tasks.yml': task 'symbol': tasks[0].judge: judge 's.x' has the name of a metric that "
        "scorer 's' of the task gives with a dict (s.KEY): their metrics would merge\n")


def _refused_dry_run(root, files: dict[str, str]) -> str:
    """What a dry run of the judged benchmark made of `files` says as it is refused (exit 2, nothing printed)."""
    write_bench(root, files)
    result = run_benchrun("task.path=bench", "judge.model=qwen2.5", "dry_run=true", cwd=root)
    assert (result.returncode, result.stdout) == (EXIT["usage"], "")
    return result.stderr


@pytest.mark.slow
def test_a_rescore_adding_a_scorer_named_as_a_judge_of_the_run_is_refused(tmp_path):
    run_dir = judged_run(tmp_path, answer, judge="exact_match")
    (tmp_path / "more.py").write_text("def exact_match(response, values):\n    return 0.5\n")
    result = run_benchrun("rescore", str(run_dir), "--scorers", str(tmp_path / "more.py"), cwd=tmp_path,
                          module="benchrun.audit")
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{tmp_path / 'more.py'}': task 'symbol': judge 'exact_match' has the name of a scorer "
        "of the task: their metrics would merge; name the scorer otherwise\n"))
    assert not (run_dir / "rescores").exists()


@pytest.mark.slow
@pytest.mark.parametrize("rubric", ["Question: {prompt}\nAnswer: {{response}}\nRight or wrong?", "Is it right?"])
def test_a_judge_whose_rubric_never_shows_the_answer_is_refused(tmp_path, rubric):
    assert _refused_dry_run(tmp_path, {"tasks.yml": TASKS, "custom_response.py": RESPONSE,
                                       "judges.yml": JUDGES.replace(json.dumps(RUBRIC), json.dumps(rubric))}) == (
        "benchrun: error: in 'judges.yml': judges[0].rubric: judge 'names' is never shown the answer it grades: name "
        "{response} in its rubric\n")


@pytest.mark.slow
def test_a_merge_of_shards_of_different_manifests_names_what_differs(tmp_path):
    one = run_in_process(tmp_path, "one", "shard=1/2", "task.system=Be brief.")
    two = run_in_process(tmp_path, "two", "shard=2/2")
    ids = [json.loads((run / "run.json").read_text())["run_id"] for run in (one, two)]
    manifests = [json.loads((run / "run.json").read_text())["manifest_id"][:12] for run in (one, two)]
    result = audit(tmp_path, "merge", str(one), str(two), "--into", str(tmp_path / "merged"))
    assert (result.returncode, result.stderr) == (EXIT["archive"], (
        f"benchrun: error: shard runs {ids[0]} (1/2) and {ids[1]} (2/2) are of different manifests: {manifests[0]}… "
        f"and {manifests[1]}… (config task.system: only in run {ids[0]} (\"Be brief.\"))\n"))
    assert not (tmp_path / "merged").exists()
