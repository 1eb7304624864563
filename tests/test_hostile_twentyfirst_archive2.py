"""Hostile input, twenty-first pass, the archive and audit side's second wave (issue 19's fresh pass of the same
kinds): the cases it found bad, each with the rule it now obeys.

- `show` of a run with repeats: a 0/1 metric's 95% interval was a t interval over the samples, which can be of width
  0 (every sample right 3 times of 3: `1.000–1.000`, as if 3 samples made it certain) or reach past 0..1 (samples
  right 3, 0, 3 times of 3: `-0.768–2.101` of a share). Now Wilson's interval on Korn and Graubard's effective
  sample size, with the samples' degrees of freedom (`audit.stats.clustered_wilson`, method `wilson-kg`)
- the end of a run with repeats (also of resume, retry and merge) printed pass@k and majority@k of a task over fewer
  samples than have a value (`1.000` of one sample of four) with nothing saying so, where show and the report say
  `t/ok over 1 of 4 samples`. Now the same note under its table (`console.output.at_k_note`, moved from
  `audit.lines`: console may not import audit)
- `consistency` (with repeats) is over the samples whose every request was answered, and nothing said so where a
  request failed (`1.000` of one sample of two). Now summary.json records `consistency_samples` (`archive.tally`;
  the judges' agreement models split from core/records.py into `core.judgeagreement` to make room), and the end of
  a run, show and the report say `t over 1 of 2 samples` (`console.output.consistency_note`)
- `compare` over one sample in common gave the bootstrap interval of one difference, `[+0.500, +0.500]` (its every
  resample is that difference), where show gives none under two values. Now none (`audit.significance.paired`)
- `rescore` whose new scorer raised on some answers printed `old mean 0.500  new mean 1.000  delta +0.500` with
  nothing saying the new mean is over 2 of the 4 answers the old one was: now an `n` column, `4 -> 2` where they
  differ (`MeanChange.old_n`/`new_n`, `audit.rescored.means_table`)
- `compare` of two runs whose data changed one sample's reference only (the same prompts, the same answers): the
  inputs named the file, and the flip list `1->0 (t:a=2)` as if the model had answered otherwise. Now `references: 1
  samples scored against another reference (t:a=2)` beside the prompts' line (`audit.inputs.prompt_diff`, split
  from `audit.compare`)

What held is in the pass's note.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from benchrun.audit.stats import interval
from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import ChatRequest, FakeOllama
from tests.helpers.answers import SAY_A, one_request_fails
from tests.helpers.archives import synthetic_run
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of

Z, T2 = 1.959963984540054, 4.302652729911275
"""The normal quantile and t(0.975, 2), of a two-sided 95% interval."""


def right(req: ChatRequest) -> str:
    """folderbench's right answer, every time."""
    a, b = map(int, re.findall(r"\d+", req.prompt))
    return json.dumps({"answer": str(a + b)})


@pytest.mark.slow
def test_a_0_1_metric_with_repeats_has_an_interval_within_0_and_1_never_of_width_0(tmp_path):
    with FakeOllama(responder=right) as srv:
        run_dir = run_dir_of(bench_run(tmp_path, srv.url, "task=folderbench", "repeats=3").stdout)
    shown = call_benchrun("show", str(run_dir), "--json", cwd=tmp_path, module="benchrun.audit")
    assert shown.returncode == EXIT["ok"], shown.stderr
    line = json.loads(shown.stdout)["metrics"][0]
    # 9 answers all right, stderr 0 (design effect taken as 1): effective n 9 * (Z / T2)^2 = 1.867, Wilson's low end
    # at p = 1 is n / (n + Z^2) = 0.327 (it said 1.000–1.000)
    effective = 9 * (Z / T2) ** 2
    assert (line["metric"], line["n"], line["mean"], line["stderr"], line["interval"]) == (
        "exact_match", 9, 1.0, 0.0, "wilson-kg")
    assert (line["low"], line["high"]) == (pytest.approx(effective / (effective + Z * Z), rel=1e-8), 1.0)
    table = call_benchrun("show", str(run_dir), cwd=tmp_path, module="benchrun.audit").stdout
    assert "95% intervals: wilson for 0/1 metrics (wilson-kg: on the effective n of repeats), t otherwise" in table
    assert "0.327–1.000" in next(row for row in table.splitlines() if "exact_match" in row)
    # samples right 3, 0, 3 times of 3: mean 2/3, stderr 1/3; the t interval was 2/3 ± 4.30/3, -0.768–2.101
    spread = interval(9, 2 / 3, 1 / 3, True, 3)
    assert (spread.low, spread.high, spread.method) == (
        pytest.approx(0.0438299229852, rel=1e-8), pytest.approx(0.988670077014, rel=1e-8), "wilson-kg")


@pytest.mark.slow
def test_the_end_of_a_run_says_what_samples_its_pass_at_k_is_over(tmp_path):
    write_bench(tmp_path, {"tasks.yml": SAY_A})
    with FakeOllama(responder=one_request_fails) as srv:
        ran = bench_run(tmp_path, srv.url, "task.path=bench", "repeats=3", "runner.options.seed=0", "cache=false",
                        "runner.retries=0")
    said = ran.stdout.splitlines()
    at = said.index("pass@k and majority@k: over the samples whose every answer has a value only (a failed request "
                    "or scorer error leaves a sample out):")
    assert (said[at - 1][0], said[at + 1:at + 3]) == (
        "└", ["  t/exact_match over 1 of 2 samples", "  t/format_valid over 1 of 2 samples"])
    assert said[at + 3].startswith("consistency: over the samples")  # as the next test has it


@pytest.mark.slow
def test_compare_names_the_samples_scored_against_another_reference(tmp_path):
    """The data changed `t:a=2`'s reference only: the flip list said `1->0 (t:a=2)` as if the model had changed its
    answer, the inputs naming the file but no sample."""
    runs = []
    for name, references in (("old", '["1", "2"]'), ("new", '["1", "3"]')):
        write_bench(tmp_path / name, {"tasks.yml": f'- {{name: t, template: "say {{a}}", values: {{a: [1, 2]}}, '
                                                   f'reference: {references}}}\n'})
        with FakeOllama(responder=lambda request: request.messages[-1]["content"].split()[-1]) as srv:
            runs.append(run_dir_of(bench_run(tmp_path, srv.url, f"task.path={name}/bench", "cache=false").stdout))
    compared = call_benchrun("compare", *map(str, runs), cwd=tmp_path, module="benchrun.audit")
    assert compared.returncode == EXIT["ok"], compared.stderr
    said = compared.stdout.splitlines()
    assert said[said.index("inputs that differ:") + 1:said.index("inputs that differ:") + 3] == [
        f"  file tasks.yml: {json.dumps(sha(tmp_path / 'old'))} -> {json.dumps(sha(tmp_path / 'new'))}",
        "  references: 1 sample scored against another reference (t:a=2)"]
    assert "  1->0 (t:a=2)" in said
    as_json = json.loads(call_benchrun("compare", *map(str, runs), "--json", cwd=tmp_path,
                                       module="benchrun.audit").stdout)
    assert as_json["comparisons"][0]["inputs"]["prompts"] == {
        "changed": [], "only_baseline": [], "only_run": [], "references": ["t:a=2"]}


def sha(root: Path) -> str:
    """root/bench/tasks.yml's sha256, cut to 12 characters as compare prints it."""
    return hashlib.sha256((root / "bench" / "tasks.yml").read_bytes()).hexdigest()[:12]


@pytest.mark.slow
def test_compare_over_one_sample_gives_no_interval(tmp_path):
    """One sample in common: the bootstrap's every resample is that one difference, `[+0.500, +0.500]`, as if one
    sample made the difference certain (show gives no interval under two values)."""
    dirs = [synthetic_run(tmp_path / side, [value], run_id=side * 12) for side, value in (("a", 0.25), ("b", 0.75))]
    result = call_benchrun("compare", *map(str, dirs), "--json", "--metric", "closeness", cwd=tmp_path,
                           module="benchrun.audit")
    [line] = json.loads(result.stdout)["comparisons"][0]["metrics"]
    assert {key: line[key] for key in ("n", "delta", "test", "p_value", "ci_low", "ci_high")} == {
        "n": 1, "delta": 0.5, "test": "permutation", "p_value": 1.0, "ci_low": None, "ci_high": None}
    table = call_benchrun("compare", *map(str, dirs), "--metric", "closeness", cwd=tmp_path, module="benchrun.audit")
    assert [row.split() for row in table.stdout.splitlines() if "closeness" in row] == [
        ["│", "t", "│", "closeness", "│", "1", "│", "0.250", "│", "0.750", "│", "+0.500", "│", "-", "│", "1", "│",
         "permutation", "│"]]


@pytest.mark.slow
def test_rescore_says_what_each_mean_is_over(tmp_path):
    """The new scorer raises on the two wrong answers: old mean 0.500 (4 values), new 1.000 (2), delta +0.500,
    the table saying nothing of the two means being over other answers."""
    scorer = "def ok(response, values):\n    return int(response == 'right')\n"
    bench = write_bench(tmp_path, {"custom_scorer.py": scorer, "tasks.yml": (
        '- {name: t, template: "say {a}", values: {a: [1, 2, 3, 4]}, reference: calculated, scorer: ok}\n')})
    with FakeOllama(responder=lambda request: "right" if request.messages[-1]["content"] < "say 3" else "wrong") as srv:
        run_dir = run_dir_of(bench_run(tmp_path, srv.url, "task.path=bench", "cache=false").stdout)
    (bench / "custom_scorer.py").write_text(scorer.replace("    return", "    assert response == 'right'\n    return"))
    rescored = call_benchrun("rescore", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert rescored.returncode == EXIT["ok"], rescored.stderr
    assert [row.split() for row in rescored.stdout.splitlines() if "│ ok" in row] == [
        ["│", "t", "│", "ok", "│", "0.500", "│", "1.000", "│", "+0.500", "│", "4", "->", "2", "│"]]
    header = next(row for row in rescored.stdout.splitlines() if "old mean" in row)
    assert header.split()[-4:] == ["delta", "┃", "n", "┃"]


@pytest.mark.slow
def test_consistency_over_fewer_samples_than_answered_says_so(tmp_path):
    """`say 1`'s second request failed: consistency 1.000 is `say 2`'s alone, nothing saying so (end of run, show,
    the report)."""
    write_bench(tmp_path, {"tasks.yml": SAY_A})
    with FakeOllama(responder=one_request_fails) as srv:
        ran = bench_run(tmp_path, srv.url, "task.path=bench", "repeats=3", "runner.options.seed=0", "cache=false",
                        "runner.retries=0")
    note = ["consistency: over the samples whose every request was answered only (a failed request leaves a sample "
            "out):", "  t over 1 of 2 samples"]
    said = ran.stdout.splitlines()
    assert said[said.index(note[0]):said.index(note[0]) + 3] == [*note, "completed_with_errors: 6/6 answers, 1 "
                                                                 "request errors, 0 scorer errors, 5 invalid formats"]
    run_dir = run_dir_of(ran.stdout)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["consistency"], summary["consistency_samples"]) == ({"t": 1.0}, {"t": [1, 2]})
    shown = call_benchrun("show", str(run_dir), cwd=tmp_path, module="benchrun.audit").stdout.splitlines()
    assert shown[shown.index(note[0]):shown.index(note[0]) + 2] == note
    as_json = json.loads(call_benchrun("show", str(run_dir), "--json", cwd=tmp_path, module="benchrun.audit").stdout)
    assert (as_json["consistency"], as_json["consistency_samples"]) == ({"t": 1.0}, {"t": [1, 2]})
    page = call_benchrun("report", str(run_dir), "--output", str(tmp_path / "r.html"), cwd=tmp_path,
                         module="benchrun.audit")
    assert page.returncode == EXIT["ok"], page.stderr
    assert "<pre>t 1.000 (over 1 of 2 samples)</pre>" in (tmp_path / "r.html").read_text()
