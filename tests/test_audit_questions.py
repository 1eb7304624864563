"""The questions a researcher asks of past runs: `show --task` (everything of one task), `show --samples` with each
reference, `show RUN... --wrong METRIC` side by side, `compare` against a run that failed or did not finish, and
`--help` as printed. Runs are made in-process by `benchrun.app.run` against the loopback Ollama."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.audit.__main__ import main as audit_main
from benchrun.audit.compare import compare
from benchrun.audit.show import excerpt, wrong_samples
from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import ChatRequest, Reply
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.commands import run_in_process


def gemma_answer(req: ChatRequest) -> Reply | str:
    """listbench_answer, except: product (2,3) answered 5, and product (3,4) and the combinations all right."""
    if req.prompt == "find the product of 2 and 3" and "justification" not in req.format["properties"]:
        return json.dumps({"answer": 5})
    if req.prompt == "find the product of 3 and 4" and "justification" not in req.format["properties"]:
        return json.dumps({"answer": 12})
    if req.prompt == "find the product of 5 and 5":
        return json.dumps({"answer": 25, "justification": "times"})
    return listbench_answer(req)


@dataclass(frozen=True)
class Runs:
    root: Path
    llama: Path
    gemma: Path
    failed: Path
    """Asked for a model the server does not have: failed at the preflight, no responses."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    root = tmp_path_factory.mktemp("questions")
    return Runs(root, run_in_process(root, "llama"), run_in_process(root, "gemma", "runner.model=gemma3",
                                                                    responder=gemma_answer),
                run_in_process(root, "failed", "runner.model=absent"))


def audit(capsys, *args: str) -> tuple[int, list[str], str]:
    """`benchrun-audit ARGS` in this process: exit code, stdout lines (right-stripped), stderr."""
    code = audit_main(list(args))
    captured = capsys.readouterr()
    return code, [line.rstrip() for line in captured.out.splitlines()], captured.err


# -- show --task, --samples --------------------------------------------------------------------------------------


def test_show_task_filters_the_samples_and_the_metrics(runs, capsys):
    code, lines, err = audit(capsys, "show", str(runs.llama), "--task", "symbol")
    assert (code, err) == (EXIT["ok"], "")
    start = lines.index("symbol:symb=@,exmeta=internet  [symbol]")
    assert lines[start:] == [
        "symbol:symb=@,exmeta=internet  [symbol]",
        "  prompt    what is the name for the following symbol? @",
        '  reference "at"',
        '  response  {"answer": "at"}',
        "  score     format_valid=1",
        "  score     contains=1",
        "",
        "symbol:symb=$,exmeta=world  [symbol]",
        "  prompt    what is the name for the following symbol? $",
        '  reference "dollar sign"',
        '  response  {"answer": "dollar"}',
        "  score     format_valid=1",
        "  score     contains=0",
        "",
        "symbol:symb=#,exmeta=internet  [symbol]",
        "  prompt    what is the name for the following symbol? #",
        '  reference "pound"',
        '  response  {"answer": "hash or pound"}',
        "  score     format_valid=1",
        "  score     contains=1",
        "",
        "3 samples shown",
        "",
        "metrics (95% intervals: wilson for 0/1 metrics, t otherwise)",
        "┏━━━━━━━━┳━━━━━━━━━━━━━━┳━━━┳━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━┓",
        "┃ task   ┃ metric       ┃ n ┃  mean ┃ 95% interval ┃ method ┃ errors ┃",
        "┡━━━━━━━━╇━━━━━━━━━━━━━━╇━━━╇━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━┩",
        "│ symbol │ contains     │ 3 │ 0.667 │  0.208–0.939 │ wilson │      0 │",
        "│ symbol │ format_valid │ 3 │ 1.000 │  0.439–1.000 │ wilson │      0 │",
        "└────────┴──────────────┴───┴───────┴──────────────┴────────┴────────┘"]


def test_show_samples_say_calculated_where_the_scorer_computes_the_reference(runs, capsys):
    code, lines, _ = audit(capsys, "show", str(runs.llama), "--samples")
    assert code == EXIT["ok"]
    references = [line for line in lines if line.startswith("  reference ")]
    assert references == ["  reference calculated"] * 12 + [
        '  reference "at"', '  reference "dollar sign"', '  reference "pound"'] + ["  reference calculated"] * 3


def test_show_task_json_has_only_that_task(runs, capsys):
    assert audit_main(["show", str(runs.llama), "--task", "symbol", "--json"]) == EXIT["ok"]
    data = json.loads(capsys.readouterr().out)
    assert [(m["task"], m["metric"]) for m in data["metrics"]] == [("symbol", "contains"), ("symbol", "format_valid")]
    assert [(s["id"], s["reference"]) for s in data["samples"]] == [
        ("symbol:symb=@,exmeta=internet", "at"), ("symbol:symb=$,exmeta=world", "dollar sign"),
        ("symbol:symb=#,exmeta=internet", "pound")]


def test_show_refuses_an_unknown_task(runs, capsys):
    run_id = load_run(runs.llama).id
    assert audit(capsys, "show", str(runs.llama), "--task", "nosuch") == (2, [], (
        f"benchrun: error: no task 'nosuch' in run {run_id} (tasks: product, product_combination, symbol, "
        "symbol_dir)\n"))
    assert audit(capsys, "show", str(runs.llama), str(runs.gemma), "--wrong", "contains", "--task", "nosuch") == (
        2, [], "benchrun: error: no task 'nosuch' in any of the 2 runs (tasks: product, product_combination, symbol, "
               "symbol_dir)\n")


# -- show --wrong ------------------------------------------------------------------------------------------------


def test_wrong_lists_samples_below_1_in_any_run_side_by_side(runs, capsys):
    llama, gemma = load_run(runs.llama), load_run(runs.gemma)
    code, lines, err = audit(capsys, "show", str(runs.llama), str(runs.gemma), "--wrong", "calculated_answer")
    assert (code, err) == (EXIT["ok"], "")
    assert lines == [
        "3 samples below 1 on calculated_answer",
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┓",
        "┃                             ┃                     ┃                             ┃            ┃     llama3.2 ┃       gemma3 ┃",
        f"┃ sample                      ┃ task                ┃ prompt                      ┃ reference  ┃ {llama.id} ┃ {gemma.id} ┃",
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━┩",
        "│ product:a=2,b=3             │ product             │ find the product of 2 and 3 │ calculated │            1 │            0 │",
        "│ product:a=3,b=4             │ product             │ find the product of 3 and 4 │ calculated │            0 │            1 │",
        "│ product_combination:a=5,b=5 │ product_combination │ find the product of 5 and 5 │ calculated │            0 │            1 │",
        "└─────────────────────────────┴─────────────────────┴─────────────────────────────┴────────────┴──────────────┴──────────────┘"]


def test_wrong_with_a_task_a_list_reference_and_json(runs, capsys):
    llama, gemma = load_run(runs.llama), load_run(runs.gemma)
    found = wrong_samples([llama, gemma], "contains")
    assert [(s.id, s.reference, s.values) for s in found] == [
        ("symbol:symb=$,exmeta=world", "dollar sign", {llama.id: 0, gemma.id: 0})]
    assert wrong_samples([llama, gemma], "calculated_answer", task="product_combination")[0].values == {
        llama.id: 0, gemma.id: 1}
    assert audit_main(["show", str(runs.gemma), "--wrong", "calculated_answer", "--task", "product",
                       "--json"]) == EXIT["ok"]
    assert json.loads(capsys.readouterr().out) == {
        "metric": "calculated_answer", "task": "product",
        "runs": [{"run_id": gemma.id, "label": "gemma3", "path": str(runs.gemma)}],
        "samples": [{"id": "product:a=2,b=3", "task": "product", "prompt": "find the product of 2 and 3",
                     "reference": None, "values": {gemma.id: 0}}]}


def test_wrong_shows_a_dash_where_a_run_has_no_value(tmp_path, capsys):
    graded = synthetic_run(tmp_path / "a", [1, 0.5], run_id="a" * 12, label="m temperature=0.7", reference=["x", 2])
    short = synthetic_run(tmp_path / "b", [1], run_id="b" * 12, status="failed", reason="server gone")
    code, lines, _ = audit(capsys, "show", str(graded), str(short), "--wrong", "closeness")
    assert code == EXIT["ok"]
    assert lines == [
        "1 sample below 1 on closeness",
        "┏━━━━━━━━┳━━━━━━┳━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┓",
        "┃        ┃      ┃        ┃           ┃ m temperature=0.7 ┃            m ┃",
        "┃ sample ┃ task ┃ prompt ┃ reference ┃      aaaaaaaaaaaa ┃ bbbbbbbbbbbb ┃",
        "┡━━━━━━━━╇━━━━━━╇━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━┩",
        '│ t:a=1  │ t    │ a is 1 │ ["x", 2]  │               0.5 │            - │',
        "└────────┴──────┴────────┴───────────┴───────────────────┴──────────────┘"]


def test_excerpt_folds_and_cuts_a_prompt():
    assert excerpt("what is\n  the   answer?") == "what is the answer?"
    assert excerpt("x" * 39 + "yz") == "x" * 39 + "…"
    assert excerpt("x" * 40) == "x" * 40


def test_wrong_refuses_an_unknown_metric_and_other_views(runs, capsys):
    run_id = load_run(runs.llama).id
    assert audit(capsys, "show", str(runs.llama), "--wrong", "nope") == (2, [], (
        f"benchrun: error: no metric 'nope' in run {run_id} (metrics: add_justify, calculated_answer, "
        "check_name_dir.direction, check_name_dir.name, contains, format_valid)\n"))
    assert audit(capsys, "show", str(runs.llama), "--wrong", "contains", "--samples") == (2, [], (
        "benchrun: error: --wrong lists samples side by side across runs; it takes no --samples or --failed\n"))
    assert audit(capsys, "show", str(runs.llama), str(runs.gemma)) == (2, [], (
        "benchrun: error: show takes one run (2 given); several go side by side with --wrong METRIC\n"))


# -- compare against runs that failed or did not finish ----------------------------------------------------------


def test_compare_names_a_run_with_no_responses(runs, capsys):
    llama, failed = load_run(runs.llama), load_run(runs.failed)
    assert failed.info.status == "failed"
    report = compare([llama, failed, load_run(runs.gemma)])
    assert (report.comparisons[0].run.note, report.comparisons[0].inputs, report.comparisons[0].metrics) == (
        f"no responses (status failed: {failed.info.reason})", None, ())
    code, lines, err = audit(capsys, "compare", str(runs.llama), str(runs.failed), str(runs.gemma))
    assert (code, err) == (EXIT["ok"], "")
    assert lines[:3] == [f"baseline: llama3.2 {llama.id} ({runs.llama})", "",
                         f"vs absent {failed.id} ({runs.failed}): not compared: no responses (status failed: "
                         f"{failed.info.reason})"]
    assert lines[4].startswith(f"vs gemma3 {load_run(runs.gemma).id} ({runs.gemma})")
    assert "n=0" not in "\n".join(lines)


def test_compare_refuses_a_baseline_with_no_responses(runs, capsys):
    failed = load_run(runs.failed)
    assert audit(capsys, "compare", str(runs.failed), str(runs.llama)) == (2, [], (
        f"benchrun: error: in '{runs.failed}': the baseline, run {failed.id} (absent), has no responses (status "
        f"failed: {failed.info.reason}): nothing to compare against\n"))


def test_compare_says_a_run_did_not_finish(tmp_path, capsys):
    base = synthetic_run(tmp_path / "base", [1, 0, 1], run_id="a" * 12)
    cut = synthetic_run(tmp_path / "cut", [1, 1, 1], run_id="b" * 12, status="interrupted",
                        reason="interrupted by SIGTERM")
    code, lines, _ = audit(capsys, "compare", str(base), str(cut))
    assert code == EXIT["ok"]
    assert lines[2] == (f"vs m {'b' * 12} ({cut}): not finished (status interrupted: interrupted by SIGTERM); "
                        "compared over the samples it answered")
    assert "│ t    │ closeness    │ 3 │    0.667 │ 1.000 │ +0.333 │" in "\n".join(lines)


# -- help ----------------------------------------------------------------------------------------------------------


def test_help_prints_a_plain_percent_sign(capsys):
    with pytest.raises(SystemExit):
        audit_main(["show", "--help"])
    shown = capsys.readouterr().out
    assert "one run: overrides, identity, metrics with 95% intervals;" in shown and "%%" not in shown
    with pytest.raises(SystemExit):
        audit_main(["--help"])
    shown = capsys.readouterr().out
    assert "    show      one run: overrides, identity, metrics with 95% intervals;" in shown and "%%" not in shown
