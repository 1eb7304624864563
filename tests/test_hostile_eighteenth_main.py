"""The eighteenth hostile pass, the lead's side: a run that failed fast on a server slower than its limits could
never be finished (no resume could change `runner.timeout_s`), and a config.yaml edited to change them was taken by
a resume and digested as the run's own."""

from __future__ import annotations

import json

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.archives import read_jsonl
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer, impatient_judge
from tests.helpers.p28_asking import Breaks
from tests.helpers.served import AWQ, FULL, Restarted, Served
from tests.helpers.wire import GRADES, judge_grades

pytestmark = pytest.mark.slow

SLOW = ["task.path=bench", "runner.retries=0", "runner.timeout_s=0.3", "cache=false"]
"""A run whose every request outlives its limit: the lab's server answers in 1 s."""


def _failed_fast(lab: Lab, tmp_path, *more: str):
    done = lab.call(*SLOW, f"runner.host={lab.server.url}", f"outputs={tmp_path / 'o'}", *more)
    [run_dir] = lab.run_dirs(tmp_path / "o")
    return done, run_dir


def _slow_advice(run_dir, limit: str) -> str:
    return (f"finish it once the setup is mended with: benchrun-audit resume {run_dir}, or, if the server is only "
            f"slow, with: benchrun-audit resume {run_dir} --set {limit}\n")


def test_a_run_that_failed_fast_on_a_slow_server_is_finished_with_a_longer_limit_that_later_resumes_keep(tmp_path):
    with Lab(tmp_path, n=6, latency_s=1.0) as lab:
        done, run_dir = _failed_fast(lab, tmp_path)
        again = lab.call("resume", str(run_dir), "--set", "runner.timeout_s=0.35", module="benchrun.audit")
        kept = lab.call("resume", str(run_dir), module="benchrun.audit")
        longer = lab.call("resume", str(run_dir), "--set", "runner.timeout_s=5", module="benchrun.audit")
    assert done.returncode == EXIT["runner"]
    assert done.stderr.startswith("benchrun: error: 5 samples in a row failed the same way, so the setup is broken, "
                                  "not the benchmark: TimeoutError: no answer within 0.3 s")
    assert done.stderr.endswith(_slow_advice(run_dir, "runner.timeout_s=0.6"))
    for resumed in (again, kept):
        assert resumed.returncode == EXIT["runner"]
        assert "TimeoutError: no answer within 0.35 s" in resumed.stderr
        assert resumed.stderr.endswith(_slow_advice(run_dir, "runner.timeout_s=0.7"))
    assert (longer.returncode, longer.stderr) == (EXIT["ok"], "")
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["status"], info["counts"]["responses"], info["runner"]["timeout_s"]) == ("completed", 6, 5.0)
    assert [entry.get("set") for entry in info["history"]] == [{"runner.timeout_s": 0.35}, None,
                                                                {"runner.timeout_s": 5}]
    assert "timeout_s: 0.3\n" in (run_dir / "config.yaml").read_text()


REFUSED = [
    (["runner.model=gemma3"], "--set 'runner.model=gemma3': give runner.KEY=VALUE or judge.KEY=VALUE, KEY one of "
     "concurrency, timeout_s, retries, backoff_s, max_consecutive_failures, max_response_bytes: the limits a run is "
     "asked with; what it asks is its manifest's"),
    (["runner.timeout_s"], "--set 'runner.timeout_s': give runner.KEY=VALUE or judge.KEY=VALUE, KEY one of "
     "concurrency, timeout_s, retries, backoff_s, max_consecutive_failures, max_response_bytes: the limits a run is "
     "asked with; what it asks is its manifest's"),
    (["runner.timeout_s=1", "runner.timeout_s=2"], "--set runner.timeout_s: given twice; give it once"),
    (["runner.timeout_s=-1"], "--set runner.timeout_s: -1 is out of bounds: give more than 0"),
    (["runner.concurrency=lots"], "--set runner.concurrency: Input should be a valid integer, not \"lots\""),
    (["judge.timeout_s=60"], "--set judge.timeout_s: run {run_id} has no judge"),
    (["runner.timeout_s=.inf"], "--set runner.timeout_s: inf is not a finite number, and JSON (config.yaml, run.json, the manifest) has "
     "none for it: give a number"),
    (["runner.max_response_bytes=100000000000000000000"], "--set runner.max_response_bytes: the integer "
     "100000000000000000000 is outside ±9,007,199,254,740,991 (2^53 - 1, the integers every JSON reader keeps exactly)"),
]
"""`--set`s a resume refuses, and what it says."""


def _files(run_dir) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}


def test_a_limit_a_resume_cannot_take_is_refused_in_one_line_and_nothing_is_written(tmp_path):
    with Lab(tmp_path, n=6, latency_s=1.0) as lab:
        _, run_dir = _failed_fast(lab, tmp_path)
        before = _files(run_dir)
        refused = [lab.call("resume", str(run_dir), *(f"--set={text}" for text in given), module="benchrun.audit")
                   for given, _ in REFUSED]
    run_id = json.loads(before["run.json"])["run_id"]
    assert [(done.returncode, done.stderr) for done in refused] == [
        (EXIT["usage"], f"benchrun: error: {said.format(run_id=run_id)}\n") for _, said in REFUSED]
    assert _files(run_dir) == before


def test_a_config_yaml_edited_after_the_run_ended_is_refused_by_resume_and_not_digested_anew(tmp_path):
    """Before: the resume asked with it (a timeout_s raised by hand), and its new run.json digested the edited file, so
    verify, which had said NOT intact, said intact, and the limits the first session asked with were lost."""
    with Lab(tmp_path, n=6, latency_s=1.0) as lab:
        _, run_dir = _failed_fast(lab, tmp_path)
        config = run_dir / "config.yaml"
        config.write_text(config.read_text().replace("timeout_s: 0.3\n", "timeout_s: 30\n"))
        before = _files(run_dir)
        refused = lab.call("resume", str(run_dir), module="benchrun.audit")
        verified = lab.call("verify", str(run_dir), module="benchrun.audit")
    assert (refused.returncode, refused.stderr) == (EXIT["archive"], (
        f"benchrun: error: in '{run_dir}': config.yaml: changed since the run ended: a resume asks with it and would "
        "digest it as the run's own; put it back (to ask the rest with other limits: --set runner.KEY=VALUE)\n"))
    assert _files(run_dir) == before
    assert verified.returncode == EXIT["not_intact"]
    assert "\nFAIL  config.yaml: changed since the run finished: sha256 " in verified.stdout


def test_a_retry_asks_the_failed_samples_again_with_a_longer_limit(tmp_path):
    with Lab(tmp_path, n=4, latency_s=1.0) as lab:
        done, parent = _failed_fast(lab, tmp_path, "runner.max_consecutive_failures=10")
        retried = lab.call("retry", str(parent), "--set", "runner.timeout_s=5", "--into", str(tmp_path / "r"),
                           module="benchrun.audit")
    assert (done.returncode, retried.returncode, retried.stderr) == (EXIT["ok"], EXIT["ok"], "")
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    assert (info["status"], info["counts"]["responses"], info["runner"]["timeout_s"]) == ("completed", 4, 5.0)
    assert [r["error"] for r in read_jsonl(tmp_path / "r" / "responses.jsonl")] == [None] * 4


def test_a_judge_that_failed_fast_on_timeouts_is_given_longer_by_resume(tmp_path):
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=answer) as model, \
            FakeOllama(models=["qwen2.5"], responder=answer, latency_s=1.0) as judge:
        result = call_benchrun(*impatient_judge(model.url, judge.url, tmp_path / 'outputs'), cwd=tmp_path)
        [run_dir] = [info.parent for info in (tmp_path / "outputs").glob("*/*/run.json")]
        resumed = call_benchrun("resume", str(run_dir), "--set", "judge.timeout_s=5", cwd=tmp_path,
                                module="benchrun.audit")
    assert result.returncode == EXIT["runner"]
    assert result.stderr.endswith(_slow_advice(run_dir, "judge.timeout_s=0.6"))
    assert (resumed.returncode, resumed.stderr, judge_grades(run_dir)) == (EXIT["ok"], "", sorted(GRADES))
    info = json.loads((run_dir / "run.json").read_text())
    assert (info["judge"]["runner"]["timeout_s"], info["history"][-1]["set"]) == (5.0, {"judge.timeout_s": 5})


def _openai(url: str, tmp_path, *more: str):
    return call_benchrun("runner=openai", f"runner.base_url={url}", "runner.model=qwen", "runner.retries=0",
                         "runner.structured=json_schema", "cache=false", *more, cwd=tmp_path)


def test_a_resume_onto_other_weights_under_the_served_name_is_refused_and_a_forced_one_says_so(tmp_path):
    """An OpenAI-compatible server (vLLM) restarted on the AWQ weights under the served name: a resume went on with
    them unsaid (no digest to compare), and the run's answers came from two models as one's."""
    with Served(FULL, responder=Breaks(6)) as first:
        done = _openai(first.url, tmp_path, f"outputs={tmp_path / 'o'}")
    [run_dir] = (tmp_path / "o").glob("*/*")
    with Served(AWQ) as other:
        refused = call_benchrun("resume", str(run_dir), "--host", other.url, cwd=tmp_path, module="benchrun.audit")
        forced = call_benchrun("resume", str(run_dir), "--host", other.url, "--force", cwd=tmp_path,
                               module="benchrun.audit")
    shown = call_benchrun("show", str(run_dir), cwd=tmp_path, module="benchrun.audit")
    assert done.returncode == EXIT["runner"]
    assert (refused.returncode, refused.stderr) == (EXIT["archive"], (
        f"benchrun: error: model qwen is now root \"{AWQ}\", the run used root \"{FULL}\"; resume with --force to "
        "continue with it anyway (recorded in run.json)\n"))
    assert (forced.returncode, json.loads((run_dir / "run.json").read_text())["status"]) == (EXIT["ok"], "completed")
    assert f"answers from 2 models: 6 by root \"{FULL}\", 12 by root \"{AWQ}\"" in shown.stdout


def test_shards_asked_of_other_weights_under_one_served_name_are_not_merged(tmp_path):
    runs = []
    for shard, root in enumerate((FULL, AWQ), start=1):
        with Served(root) as server:
            done = _openai(server.url, tmp_path, f"shard={shard}/2", f"outputs={tmp_path / str(shard)}")
        assert done.returncode == EXIT["ok"], done.stderr
        runs.append(run_dir_of(done.stdout))
    merged = call_benchrun("merge", *map(str, runs), "--into", str(tmp_path / "m"), cwd=tmp_path,
                           module="benchrun.audit")
    ids = [json.loads((run / "run.json").read_text())["run_id"] for run in runs]
    assert (merged.returncode, merged.stderr) == (EXIT["archive"], (
        f"benchrun: error: shard runs {ids[0]} (1/2) and {ids[1]} (2/2) asked different models: root \"{FULL}\" and "
        f"root \"{AWQ}\"\n"))
    assert not (tmp_path / "m").exists()


def test_a_judge_restarted_on_other_weights_while_a_rescore_asks_it_fails_the_rescore(tmp_path):
    """A judge of runner=openai (vLLM) restarted on the AWQ weights under its name after the run's three grades and
    two of the rescore's: the rescore was written with grades of two judges as one's."""
    write_bench(tmp_path, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=answer) as model, Restarted(6, "qwen2.5", answer) as judge:
        run_dir = run_dir_of(call_benchrun(
            f"runner.host={model.url}", "task.path=bench", "judge.runner=openai", f"judge.base_url={judge.url}",
            "judge.model=qwen2.5", "+judge.structured=json_schema", "cache=false", f"outputs={tmp_path / 'o'}",
            cwd=tmp_path).stdout)
        done = call_benchrun("rescore", str(run_dir), "--rejudge", module="benchrun.audit", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["runner"], (
        f"benchrun: error: the judge model qwen2.5 changed on {judge.url} while the rescore asked: root \"{FULL}\" when "
        f"it began, root \"{AWQ}\" as it ended (the server restarted on other weights?); its grades may come from "
        "either model and cannot be told apart: rescore it again\n"))
    assert list((run_dir / "rescores").glob("*")) == []


def test_a_folder_here_named_like_a_run_id_prefix_says_the_run_it_hides(tmp_path):
    """`mkdir 5555`, then `show 5555` meant for run 5555…: the folder won, and the line said only that it is not a run
    directory."""
    with Lab(tmp_path, n=2, latency_s=0) as lab:
        run_dir = run_dir_of(lab.call("task.path=bench", f"runner.host={lab.server.url}", "cache=false",
                                      f"outputs={tmp_path / 'o'}").stdout)
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    (tmp_path / run_id[:4]).mkdir()
    said = [call_benchrun(command, run_id[:4], "--root", str(tmp_path / "o"), cwd=tmp_path, module="benchrun.audit")
            for command in ("show", "verify")]
    hidden = (f"'{run_id[:4]}' also begins run id {run_id} under {tmp_path / 'o'}, which this folder's name hides: "
              f"name that run by its path ({run_dir})\n")
    assert [(done.returncode, done.stderr) for done in said] == [
        (EXIT["archive"], f"benchrun: error: in '{run_id[:4]}': neither a run nor a sweep directory (no run.json in it "
                          f"or the folders directly in it); {hidden}"),
        (EXIT["archive"], f"benchrun: error: in '{run_id[:4]}': not a run directory (no run.json); {hidden}")]


def test_a_number_kept_as_text_given_a_numbers_format_says_why_it_is_text(tmp_path):
    """`{pi:.4f}` of a CSV's 20-digit pi (text since a double cannot hold it as written) said only `Unknown format
    code 'f' for object of type 'str'`."""
    write_bench(tmp_path, {"tasks/pi/template.txt": "round {pi:.4f}", "tasks/pi/values.csv":
                           "pi,reference\n3.14159265358979323846,3.1416\n"})
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'tasks/pi/template.txt': task 'pi': cannot render sample 'pi:pi=3.14159265358979"
        "323846': Unknown format code 'f' for object of type 'str'; a values file's cell that is no number as written "
        "(a leading zero, more digits than a double holds, digits other than 0-9, an integer past 2^53) is text\n"))
