"""`export`: every row carries the run's label and varied settings (one column per setting varied in any run
exported), and `--text` adds the prompt and the raw response."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.archive.rows import columns
from benchrun.audit.__main__ import main as audit_main
from benchrun.audit.export import write_csv, write_jsonl
from benchrun.core.errors import EXIT
from tests.helpers.answers import BROKEN, broken_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.commands import run_in_process


@pytest.fixture
def sweep_jobs(tmp_path) -> list[Path]:
    """Two jobs of a sweep over temperature (and, in the second, a task preset): label and varied as run.json has
    them."""
    cold = synthetic_run(tmp_path / "0_m", [1, 0], run_id="a" * 12, label="m temperature=0",
                         varied={"runner.model": "m", "runner.options.temperature": 0})
    warm = synthetic_run(tmp_path / "1_m", [0.5], run_id="b" * 12, label="m temperature=0.7 task=other",
                         varied={"runner.model": "m", "runner.options.temperature": 0.7, "task": "other"})
    return [cold, warm]


def test_varied_settings_and_label_as_columns(sweep_jobs):
    runs = [load_run(path) for path in sweep_jobs]
    manifest_id = runs[0].info.manifest_id
    out = io.StringIO()
    assert write_csv(runs, out) == 6
    assert out.getvalue().splitlines() == [
        "run_id,label,model,manifest_id,runner.model,runner.options.temperature,setting.task,task,sample_id,repeat,"
        "scorer,metric,value,error,value.a,reference",
        f"aaaaaaaaaaaa,m temperature=0,m,{manifest_id},m,0,,t,t:a=0,0,format_valid,format_valid,1,,0,",
        f"aaaaaaaaaaaa,m temperature=0,m,{manifest_id},m,0,,t,t:a=0,0,closeness,closeness,1,,0,",
        f"aaaaaaaaaaaa,m temperature=0,m,{manifest_id},m,0,,t,t:a=1,0,format_valid,format_valid,1,,1,",
        f"aaaaaaaaaaaa,m temperature=0,m,{manifest_id},m,0,,t,t:a=1,0,closeness,closeness,0,,1,",
        f"bbbbbbbbbbbb,m temperature=0.7 task=other,m,{runs[1].info.manifest_id},m,0.7,other,t,t:a=0,0,format_valid,"
        "format_valid,1,,0,",
        f"bbbbbbbbbbbb,m temperature=0.7 task=other,m,{runs[1].info.manifest_id},m,0.7,other,t,t:a=0,0,closeness,"
        "closeness,0.5,,0,"]


def test_a_single_run_has_no_setting_columns_and_its_model_as_label(tmp_path):
    run = load_run(synthetic_run(tmp_path / "run", [1], model="gemma3"))
    assert columns([run]) == ["run_id", "label", "model", "manifest_id", "task", "sample_id", "repeat", "scorer",
                              "metric", "value", "error", "value.a", "reference"]
    out = io.StringIO()
    write_jsonl([run], out)
    assert {k: v for k, v in json.loads(out.getvalue().splitlines()[0]).items() if k in ("label", "model")} == {
        "label": "gemma3", "model": "gemma3"}


def test_jsonl_rows_have_every_setting_column(sweep_jobs):
    out = io.StringIO()
    write_jsonl([load_run(path) for path in sweep_jobs], out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["label"], r["runner.options.temperature"], r["setting.task"]) for r in rows] == [
        ("m temperature=0", 0, None)] * 4 + [("m temperature=0.7 task=other", 0.7, "other")] * 2


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> Path:
    return run_in_process(tmp_path_factory.mktemp("export"), "broken", *BROKEN, responder=broken_answer)


def test_text_adds_the_prompt_and_the_raw_response(broken, tmp_path, capsys):
    target = tmp_path / "rows.jsonl"
    assert audit_main(["export", str(broken), "--text", "--format", "jsonl", "--output", str(target)]) == EXIT["ok"]
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert list(rows[0])[-5:] == ["reference", "system", "fewshot", "prompt", "response"]
    assert [(r["sample_id"], r["metric"], r["prompt"], r["response"]) for r in rows if r["task"] == "product"] == [
        ("product:a=2,b=3", "format_valid", "find the product of 2 and 3", "the answer is 6"),
        ("product:a=2,b=3", "calculated_answer", "find the product of 2 and 3", "the answer is 6"),
        ("product:a=3,b=4", "format_valid", "find the product of 3 and 4", '{"answer": 11}'),
        ("product:a=3,b=4", "calculated_answer", "find the product of 3 and 4", '{"answer": 11}'),
        ("product:a=5,b=5", "format_valid", "find the product of 5 and 5", None),
        ("product:a=5,b=5", "calculated_answer", "find the product of 5 and 5", None)]

    assert audit_main(["export", str(broken), "--text"]) == EXIT["ok"]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(",reference,system,fewshot,prompt,response")
    assert lines[1].endswith(',find the product of 2 and 3,the answer is 6')
    assert lines[3].endswith(',find the product of 3 and 4,"{""answer"": 11}"')
    assert lines[5].endswith(",find the product of 5 and 5,")
