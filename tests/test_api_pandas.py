"""`benchrun.load_run(p).to_pandas()`: one row per sample x metric, as `export` writes them; pandas is imported only
there, and without it the error is one line naming the extra that installs it."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd

import benchrun
from tests.helpers.archives import synthetic_run


def test_one_row_per_sample_and_metric_with_the_settings(tmp_path):
    run = benchrun.load_run(synthetic_run(tmp_path / "job", [1, 0.5], run_id="a" * 12, model="gemma3",
                                          label="gemma3 temperature=0.7", reference=["x", 2],
                                          varied={"runner.model": "gemma3", "runner.options.temperature": 0.7}))
    common = {"run_id": "a" * 12, "label": "gemma3 temperature=0.7", "model": "gemma3",
              "manifest_id": run.info.manifest_id, "runner.model": "gemma3", "runner.options.temperature": 0.7,
              "task": "t"}
    expected = pd.DataFrame([
        {**common, "sample_id": "t:a=0", "repeat": 0, "scorer": "format_valid", "metric": "format_valid",
         "value": 1.0, "error": None, "value.a": 0, "reference": ["x", 2]},
        {**common, "sample_id": "t:a=0", "repeat": 0, "scorer": "closeness", "metric": "closeness", "value": 1.0,
         "error": None, "value.a": 0, "reference": ["x", 2]},
        {**common, "sample_id": "t:a=1", "repeat": 0, "scorer": "format_valid", "metric": "format_valid",
         "value": 1.0, "error": None, "value.a": 1, "reference": ["x", 2]},
        {**common, "sample_id": "t:a=1", "repeat": 0, "scorer": "closeness", "metric": "closeness", "value": 0.5,
         "error": None, "value.a": 1, "reference": ["x", 2]}])
    pd.testing.assert_frame_equal(run.to_pandas(), expected)


def test_text_columns_and_a_plain_run(tmp_path):
    frame = benchrun.load_run(synthetic_run(tmp_path / "run", [0])).to_pandas(text=True)
    assert list(frame.columns) == ["run_id", "label", "model", "manifest_id", "task", "sample_id", "repeat", "scorer",
                                   "metric", "value", "error", "value.a", "reference", "system", "fewshot", "prompt",
                                   "response"]
    assert frame[["metric", "value", "prompt", "response"]].to_dict("records") == [
        {"metric": "format_valid", "value": 1, "prompt": "a is 0", "response": '{"answer": 1}'},
        {"metric": "closeness", "value": 0, "prompt": "a is 0", "response": '{"answer": 1}'}]
    assert frame["label"].tolist() == ["m", "m"] and frame["reference"].isna().all()


def test_a_run_that_failed_before_it_compiled_has_no_rows(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1])
    (run_dir / "run.json").write_text((run_dir / "run.json").read_text().replace(
        f'"manifest_id": "{benchrun.load_run(run_dir).info.manifest_id}"', '"manifest_id": null'))
    frame = benchrun.load_run(run_dir).to_pandas()
    assert frame.empty and list(frame.columns)[:4] == ["run_id", "label", "model", "manifest_id"]


def test_pandas_is_imported_only_by_to_pandas_and_its_absence_is_one_line(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1])
    code = ("import sys; sys.modules['pandas'] = None\n"  # `import pandas` now raises ImportError, as when absent
            "import benchrun\n"
            f"run = benchrun.load_run({str(run_dir)!r}); run.manifest; list(run.scores())\n"
            "try:\n    run.to_pandas()\nexcept benchrun.BenchrunError as err:\n    print(err)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == "to_pandas needs pandas: pip install 'benchrun[pandas]'\n"
    lazy = subprocess.run([sys.executable, "-c", f"import sys, benchrun; benchrun.load_run({str(run_dir)!r}).summary; "
                                                 "print('pandas' in sys.modules)"], capture_output=True, text=True)
    assert lazy.stdout == "False\n"
