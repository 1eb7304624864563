"""`compare`: differing inputs, exact deltas, flipped samples and p-values between real runs; the statistics."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchrun.archive.lookup import expand_runs
from benchrun.archive.reader import load_run
from benchrun.audit import significance
from benchrun.audit.compare import Report, compare
from benchrun.core.errors import EXIT, ArchiveError, BenchrunError
from benchrun.core.resources import demos_dir
from benchrun.testing.ollama_server import ChatRequest, Reply, fake_digest
from tests.helpers.answers import listbench_answer
from tests.helpers.commands import call_benchrun, make_run

PRODUCT = re.compile(r"(?:find|compute) the product of (\d+) and (\d+)")


def changed_answer(req: ChatRequest) -> Reply | str:
    """Against listbench_answer: product all right; combinations right for (5,5), wrong for a=3, 'add' for a<=3;
    the $ symbol named 'dollar sign'."""
    if m := PRODUCT.fullmatch(req.prompt):
        a, b = int(m[1]), int(m[2])
        if "justification" in req.format["properties"]:
            return json.dumps({"answer": a * b - (a == 3), "justification": "add" if a <= 3 else "times"})
        return json.dumps({"answer": a * b})
    if req.prompt.endswith("symbol? $"):
        return json.dumps({"answer": "dollar sign"})
    return listbench_answer(req)


def edited_answer(req: ChatRequest) -> Reply | str:
    """The edited benchmark asks 'compute the product ...' in task product: answered right."""
    if m := re.fullmatch(r"compute the product of (\d+) and (\d+)", req.prompt):
        return json.dumps({"answer": int(m[1]) * int(m[2])})
    return listbench_answer(req)


def mcnemar(b: int, c: int) -> float:
    """The exact two-sided McNemar p-value, computed independently of benchrun."""
    n = b + c
    return min(1.0, 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """base and changed (other answers, temperature 0.7) on a benchmark copy; edited after changing the copy's
    scorer and tasks; a two-model sweep of the shipped listbench."""
    root = tmp_path_factory.mktemp("compare")
    bench = root / "bench"
    shutil.copytree(demos_dir() / "listbench", bench)
    found = {"bench": bench, "base": make_run(root, f"task.path={bench}"),
             "changed": make_run(root, f"task.path={bench}", "runner.options.temperature=0.7",
                                 responder=changed_answer)}
    scorer, tasks = bench / "custom_scorer.py", bench / "tasks.yml"
    scorer.write_text(scorer.read_text().replace("'add' in", "'times' in"))
    tasks.write_text(tasks.read_text().replace('"find the product', '"compute the product', 1)
                     .replace("name: [carat,", "name: [caret,"))
    found["edited"] = make_run(root, f"task.path={bench}", responder=edited_answer)
    found["sweep"] = make_run(root, "runner.model=llama3.2,gemma3", multirun=True)
    return found


def lines_of(report: Report, index: int = 0) -> dict[tuple[str, str], object]:
    return {(m.task, m.metric): m for m in report.comparisons[index].metrics}


@pytest.mark.slow
def test_changed_answers_exact_deltas_flips_and_p_values(runs):
    report = compare([load_run(runs["base"]), load_run(runs["changed"])])
    inputs = report.comparisons[0].inputs
    assert not inputs.same_manifest
    assert inputs.config.changed == {"runner.options.temperature": (0, 0.7)}
    assert not (inputs.config.added or inputs.config.removed or inputs.files or inputs.prompts or inputs.scorers
                or inputs.formats)

    lines = lines_of(report)
    expected = {  # (task, metric): (n, baseline mean, mean, b, c, ids 0->1, ids 1->0)
        ("product", "calculated_answer"): (3, 2 / 3, 1.0, 1, 0, ["product:a=3,b=4"], []),
        ("product", "format_valid"): (3, 1.0, 1.0, 0, 0, [], []),
        ("product_combination", "add_justify"): (
            9, 1 / 3, 2 / 3, 3, 0, [f"product_combination:a=3,b={b}" for b in (3, 4, 5)], []),
        ("product_combination", "calculated_answer"): (
            9, 8 / 9, 6 / 9, 1, 3, ["product_combination:a=5,b=5"],
            [f"product_combination:a=3,b={b}" for b in (3, 4, 5)]),
        ("product_combination", "format_valid"): (9, 1.0, 1.0, 0, 0, [], []),
        ("symbol", "contains"): (3, 2 / 3, 1.0, 1, 0, ["symbol:symb=$,exmeta=world"], []),
        ("symbol", "format_valid"): (3, 1.0, 1.0, 0, 0, [], []),
        ("symbol_dir", "check_name_dir.direction"): (3, 2 / 3, 2 / 3, 0, 0, [], []),
        ("symbol_dir", "check_name_dir.name"): (3, 2 / 3, 2 / 3, 0, 0, [], []),
        ("symbol_dir", "format_valid"): (3, 1.0, 1.0, 0, 0, [], []),
    }
    assert list(lines) == list(expected)
    for key, (n, base_mean, mean, b, c, to_1, to_0) in expected.items():
        line = lines[key]
        assert (line.n, line.b, line.c, list(line.to_1), list(line.to_0), line.test) == (
            n, b, c, to_1, to_0, "mcnemar"), key
        assert line.baseline_mean == pytest.approx(base_mean, abs=1e-12), key
        assert line.mean == pytest.approx(mean, abs=1e-12), key
        assert line.delta == pytest.approx(mean - base_mean, abs=1e-12), key
        assert line.p_value == pytest.approx(mcnemar(b, c), abs=1e-15), key
        assert line.ci_low <= line.delta <= line.ci_high, key
    assert lines["product_combination", "add_justify"].p_value == 0.25
    assert lines["product_combination", "calculated_answer"].p_value == 0.625
    assert (lines["symbol_dir", "format_valid"].ci_low, lines["symbol_dir", "format_valid"].ci_high) == (0.0, 0.0)
    diffs = np.array([0, 0, 0, 1, 1, 1, 0, 0, 0], dtype=float)  # add_justify in the manifest's sample order
    assert (lines["product_combination", "add_justify"].ci_low,
            lines["product_combination", "add_justify"].ci_high) == significance.bootstrap_ci(diffs)


@pytest.mark.slow
def test_changed_benchmark_sources_prompts_and_scorers_are_reported(runs):
    report = compare([load_run(runs["base"]), load_run(runs["edited"])])
    inputs = report.comparisons[0].inputs
    assert set(inputs.files.changed) == {"custom_scorer.py", "tasks.yml"}
    assert not (inputs.files.added or inputs.files.removed)
    old_sha = {f.path: f.sha256 for f in load_run(runs["base"]).manifest.files}
    new_sha = {f.path: f.sha256 for f in load_run(runs["edited"]).manifest.files}
    assert inputs.files.changed["tasks.yml"] == (old_sha["tasks.yml"], new_sha["tasks.yml"])
    assert list(inputs.scorers.changed) == ["product_combination/add_justify"]
    assert inputs.prompts.changed == ("product:a=2,b=3", "product:a=3,b=4", "product:a=5,b=5")
    assert inputs.prompts.only_baseline == ("symbol_dir:symb=^,name=carat,direction=up",)
    assert inputs.prompts.only_run == ("symbol_dir:symb=^,name=caret,direction=up",)
    assert not inputs.config and not inputs.formats

    lines = lines_of(report)
    justify = lines["product_combination", "add_justify"]
    assert (justify.b, justify.c, justify.p_value) == (6, 0, mcnemar(6, 0)) == (6, 0, 1 / 32)
    assert justify.delta == pytest.approx(2 / 3, abs=1e-12)
    assert lines["symbol_dir", "check_name_dir.name"].n == 2


@pytest.mark.slow
def test_three_runs_each_against_the_baseline_and_filters(runs):
    base, changed, edited = (load_run(runs[k]) for k in ("base", "changed", "edited"))
    three = compare([base, changed, edited])
    assert [c.run.id for c in three.comparisons] == [changed.id, edited.id]
    assert three.comparisons[0] == compare([base, changed]).comparisons[0]
    assert three.comparisons[1] == compare([base, edited]).comparisons[0]

    only = compare([base, changed], metric="calculated_answer", task="product_combination")
    assert [(m.task, m.metric) for m in only.comparisons[0].metrics] == [("product_combination", "calculated_answer")]


@pytest.mark.slow
def test_sweep_directory_expands_to_its_jobs(runs):
    jobs = expand_runs(str(runs["sweep"]))
    assert [run.info.model for run in jobs] == ["llama3.2", "gemma3"]
    report = compare(jobs)
    inputs = report.comparisons[0].inputs
    assert inputs.config.changed == {"runner.model": ("llama3.2", "gemma3")}
    assert not (inputs.files or inputs.prompts or inputs.scorers or inputs.formats)
    assert inputs.provenance.changed == {
        "model.name": ("llama3.2:latest", "gemma3:latest"),
        "model.digest": (fake_digest("llama3.2"), fake_digest("gemma3"))}
    assert all(m.delta == 0 and m.p_value == 1.0 and m.b == m.c == 0 for m in report.comparisons[0].metrics)


@pytest.mark.slow
def test_cli_table_and_json(runs, tmp_path):
    result = call_benchrun("compare", str(runs["sweep"]), cwd=tmp_path, module="benchrun.audit")
    assert result.returncode == EXIT["ok"], result.stderr
    assert 'config runner.model: "llama3.2" -> "gemma3"' in result.stdout
    assert re.search(r"│ product\s+│ calculated_answer\s+│ 3 │\s+0\.667 │\s+0\.667 │\s+\+0\.000 │", result.stdout)

    result = call_benchrun("compare", str(runs["base"]), str(runs["changed"]), "--json", cwd=tmp_path,
                           module="benchrun.audit")
    assert result.returncode == EXIT["ok"], result.stderr
    data = json.loads(result.stdout)
    assert data["method"]["seed"] == significance.SEED
    line = next(m for m in data["comparisons"][0]["metrics"] if m["metric"] == "calculated_answer"
                and m["task"] == "product_combination")
    assert (line["b"], line["c"], line["p_value"]) == (1, 3, 0.625)
    assert data["comparisons"][0]["inputs"]["config"]["changed"] == {"runner.options.temperature": [0, 0.7]}

    result = call_benchrun("compare", str(runs["base"]), str(runs["changed"]), cwd=tmp_path, module="benchrun.audit")
    assert "flipped product_combination calculated_answer: b=1 (0->1), c=3 (1->0)" in result.stdout
    assert "  1->0 (product_combination:a=3,b=3, product_combination:a=3,b=4, product_combination:a=3,b=5)" \
        in result.stdout
    assert "config runner.options.temperature: 0 -> 0.7" in result.stdout


@pytest.mark.slow
def test_cli_errors_are_one_line(runs, tmp_path):
    result = call_benchrun("compare", str(runs["base"]), cwd=tmp_path, module="benchrun.audit")
    assert (result.returncode, result.stderr) == (
        EXIT["usage"], "benchrun: error: compare needs at least two runs (got 1); a sweep directory gives its jobs\n")
    result = call_benchrun("compare", str(runs["base"]), str(tmp_path), cwd=tmp_path, module="benchrun.audit")
    assert result.returncode == EXIT["archive"]
    assert result.stderr.count("\n") == 1 and "neither a run nor a sweep directory" in result.stderr


@pytest.mark.slow
def test_a_misspelt_metric_is_refused_in_one_line(runs, tmp_path):
    both = str(runs["base"]), str(runs["changed"])
    result = call_benchrun("compare", *both, "--metric", "calculated_answr", cwd=tmp_path, module="benchrun.audit")
    assert (result.returncode, result.stdout, result.stderr) == (2, "", (
        "benchrun: error: no metric 'calculated_answr' in any of the 2 runs (metrics: add_justify, calculated_answer, "
        "check_name_dir.direction, check_name_dir.name, contains, format_valid)\n"))


def test_compare_needs_two_runs_and_a_sweep_needs_jobs(tmp_path):
    with pytest.raises(BenchrunError, match="at least two runs"):
        compare([])
    with pytest.raises(ArchiveError, match="neither a run nor a sweep"):
        expand_runs(str(tmp_path))


def test_mcnemar_matches_the_binomial_definition():
    for b, c in [(0, 0), (1, 0), (3, 0), (1, 3), (6, 0), (5, 5), (12, 30), (200, 150)]:
        assert significance.mcnemar_exact(b, c) == pytest.approx(mcnemar(b, c), rel=1e-12), (b, c)
    assert significance.mcnemar_exact(3, 0) == 0.25


def test_permutation_is_exact_for_few_samples_and_seeded_otherwise():
    assert significance.permutation_p(np.array([1.0, 1.0, 1.0])) == 2 / 8
    assert significance.permutation_p(np.array([0.5, -0.25, 0.0, 0.0])) == 1.0
    assert significance.permutation_p(np.array([0.0, 0.0])) == 1.0
    assert significance.permutation_p(np.array([2.0, 1.0, 0.5])) == 2 / 8
    many = np.linspace(0.1, 0.4, 40)
    p = significance.permutation_p(many)
    assert p == significance.permutation_p(many) == 1 / (significance.RESAMPLES + 1)
    signs = np.array([1.0] * 30 + [-1.0] * 10)  # a sign-flip test of +-1 values is McNemar's binomial test
    assert significance.permutation_p(signs) == pytest.approx(mcnemar(30, 10), abs=0.001)
    noisy = np.random.default_rng(1).normal(0, 1, 200)
    assert 0.05 < significance.permutation_p(noisy) == significance.permutation_p(noisy) < 1


def test_paired_uses_mcnemar_for_binary_and_permutation_otherwise():
    binary = significance.paired([0, 0, 1, 1], [1, 1, 1, 0], binary=True)
    assert (binary.test, binary.b, binary.c, binary.delta) == ("mcnemar", 2, 1, 0.25)
    graded = significance.paired([0.5, 0.2, 0.9], [0.7, 0.4, 1.0], binary=False)
    assert (graded.test, graded.b, graded.c) == ("permutation", None, None)
    assert graded.delta == pytest.approx(0.5 / 3)
    assert graded.p_value == 2 / 8
    assert graded.ci_low <= graded.delta <= graded.ci_high
    assert significance.paired([], [], binary=True).n == 0


def test_bootstrap_is_reproducible_and_exact_for_constant_differences():
    diffs = np.random.default_rng(2).normal(0.3, 1, 500)
    low, high = significance.bootstrap_ci(diffs)
    assert (low, high) == significance.bootstrap_ci(diffs)
    assert low < diffs.mean() < high
    assert significance.bootstrap_ci(np.full(7, 0.5)) == (0.5, 0.5)
