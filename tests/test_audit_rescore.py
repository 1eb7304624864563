"""`rescore`: a real run scored again with an edited scorer, with the model server stopped."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from benchrun.archive.reader import load_run
from benchrun.archive.writer import file_digest
from benchrun.audit.rescore import claim_dir, rescore
from benchrun.audit.verify import Finding, verify_run
from benchrun.core.errors import EXIT, BenchrunError, TaskError
from benchrun.core.resources import demos_dir
from tests.helpers.archives import read_jsonl, reseal, summary_of
from tests.helpers.auditcli import audit
from tests.helpers.commands import make_run

ORIGINALS = ("run.json", "manifest.json", "config.yaml", "responses.jsonl", "scores.jsonl", "summary.json")
NEW_JUSTIFY = """def add_justify(response,values):
    response_object = json.loads(response)
    return int('times' in response_object['justification'])
"""
RESCORED_SUMMARY = {  # the run's summary (see test_run) with add_justify now 1 everywhere
    ("product", "calculated_answer"): (3, 2 / 3, 1 / 3, 0),
    ("product", "format_valid"): (3, 1.0, 0.0, 0),
    ("product_combination", "add_justify"): (9, 1.0, 0.0, 0),
    ("product_combination", "calculated_answer"): (9, 8 / 9, 1 / 9, 0),
    ("product_combination", "format_valid"): (9, 1.0, 0.0, 0),
    ("symbol", "contains"): (3, 2 / 3, 1 / 3, 0),
    ("symbol", "format_valid"): (3, 1.0, 0.0, 0),
    ("symbol_dir", "check_name_dir.direction"): (3, 2 / 3, 1 / 3, 0),
    ("symbol_dir", "check_name_dir.name"): (3, 2 / 3, 1 / 3, 0),
    ("symbol_dir", "format_valid"): (3, 1.0, 0.0, 0),
}
FLIPPED = [f"product_combination:a={a},b={b}" for a in (3, 5) for b in (3, 4, 5)]


@pytest.fixture(scope="module")
def archived(tmp_path_factory) -> Path:
    """A listbench run on a copy of the benchmark (a path relative to where the run started); afterwards the
    copy's add_justify checks 'times', not 'add'."""
    root = tmp_path_factory.mktemp("rescore")
    bench = root / "bench"
    shutil.copytree(demos_dir() / "listbench", bench)
    run_dir = make_run(root, "task.path=bench")
    scorer = bench / "custom_scorer.py"
    scorer.write_text(scorer.read_text().replace("'add' in", "'times' in"))
    return run_dir


@pytest.fixture
def run_dir(archived, tmp_path) -> Path:
    """A private copy of the run, so each test numbers its rescores from 001."""
    return Path(shutil.copytree(archived, tmp_path / "run"))


def originals(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in ORIGINALS}


def assert_summary(run_dir: Path, expected: dict[tuple[str, str], tuple]) -> None:
    summary = summary_of(run_dir)
    assert list(summary) == list(expected)
    for key, (n, mean, stderr, errors) in expected.items():
        assert summary[key] == (n, pytest.approx(mean, abs=1e-12), pytest.approx(stderr, abs=1e-12), errors), key


@pytest.mark.slow
def test_rescore_with_the_edited_scorer(archived, run_dir):
    before = originals(run_dir)
    run = load_run(run_dir)
    result = rescore(run)

    out = run_dir / "rescores" / "001"
    assert Path(result.dir) == out and sorted(p.name for p in out.iterdir()) == [
        "rescore.json", "rescore.log", "scores.jsonl", "summary.json"]
    assert originals(run_dir) == before
    assert_summary(out, RESCORED_SUMMARY)
    assert [(c.id, c.metric, c.old, c.new) for c in result.changed] == [(i, "add_justify", 0, 1) for i in FLIPPED]
    justify = next(m for m in result.means if m.metric == "add_justify")
    assert (justify.old, justify.new) == (pytest.approx(1 / 3), 1.0) and justify.delta == pytest.approx(2 / 3)

    scores = read_jsonl(out / "scores.jsonl")
    old_scores = read_jsonl(run_dir / "scores.jsonl")
    assert len(scores) == len(old_scores) == 45
    unchanged = [s for s in old_scores if s["scorer"] != "add_justify"]
    assert [s for s in scores if s["scorer"] != "add_justify"] == unchanged

    info = json.loads((out / "rescore.json").read_text())
    bench = archived.parents[2] / "bench"
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["task"]["path"] == "bench"
    file_sha = hashlib.sha256((bench / "custom_scorer.py").read_bytes()).hexdigest()
    scorers = {s["name"]: s for s in info["scorers"]}
    manifest_sha = {s.name: s.sha256 for t in run.manifest.tasks for s in t.scorers}
    assert scorers["add_justify"] == {
        "name": "add_justify", "origin": str(bench / "custom_scorer.py"), "origin_sha256": file_sha,
        "sha256": hashlib.sha256(NEW_JUSTIFY.encode()).hexdigest(), "run_sha256": manifest_sha["add_justify"],
        "tasks": ["product_combination"]}
    assert scorers["add_justify"]["sha256"] != manifest_sha["add_justify"]
    assert scorers["calculated_answer"]["sha256"] == manifest_sha["calculated_answer"]
    assert scorers["contains"] == {"name": "contains", "origin": "builtin", "origin_sha256": None,
                                   "sha256": manifest_sha["contains"], "run_sha256": manifest_sha["contains"],
                                   "tasks": ["symbol"]}
    assert list(scorers) == ["calculated_answer", "add_justify", "contains", "check_name_dir"]
    assert (info["rescore"], info["run_id"], info["manifest_id"], info["selected"]) == (
        "001", run.id, run.info.manifest_id, None)
    assert info["benchrun"] == run.info.environment["benchrun"]
    assert datetime.fromisoformat(info["created_at"]).tzinfo is not None
    assert info["counts"] == {"samples": 18, "responses": 18, "request_errors": 0, "scorer_errors": 0,
                              "format_invalid": 0, "cached": 0}
    data, summary = (out / "scores.jsonl").read_bytes(), (out / "summary.json").read_bytes()
    assert info["files"] == {"scores.jsonl": {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                                              "lines": 45},
                             "summary.json": {"sha256": hashlib.sha256(summary).hexdigest(), "size": len(summary),
                                              "lines": summary.count(b"\n")}}

    first = {p.name: p.read_bytes() for p in out.iterdir()}
    second = rescore(load_run(run_dir))
    assert Path(second.dir).name == "002"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    assert (out / "scores.jsonl").read_bytes() == (run_dir / "rescores" / "002" / "scores.jsonl").read_bytes()
    assert originals(run_dir) == before


@pytest.mark.slow
def test_cli_rescore_without_server_or_runner_code(run_dir, tmp_path):
    host = urlparse(load_run(run_dir).info.runner["host"])
    with pytest.raises(ConnectionRefusedError):  # the fake server that made the run is gone
        socket.create_connection((host.hostname, host.port), timeout=2).close()
    before = originals(run_dir)

    result = subprocess.run(
        [sys.executable, "-c", "import sys; from benchrun.audit.__main__ import main; code = main(sys.argv[1:]); "
         "print(*sorted(sys.modules), file=sys.stderr); sys.exit(code)", "rescore", str(run_dir)],
        cwd=tmp_path, env={**os.environ, "COLUMNS": "200"}, capture_output=True, text=True)
    assert result.returncode == EXIT["ok"], result.stderr
    imported = set(result.stderr.split())
    assert "benchrun.audit.rescore" in imported
    assert not {m for m in imported if m.split(".")[0] in ("ollama", "httpx", "hydra") or m.startswith("benchrun.execute.runners")}
    assert "│ product_combination │ add_justify              │    0.333 │    1.000 │ +0.667 │" in result.stdout
    assert "│ symbol              │ contains                 │    0.667 │    0.667 │ +0.000 │" in result.stdout
    assert "6 sample values changed\n" + "".join(f"  {i} add_justify: 0 -> 1\n" for i in FLIPPED) in result.stdout
    assert f"rescore 001 written to {run_dir / 'rescores' / '001'}" in result.stdout
    assert originals(run_dir) == before

    result = audit(tmp_path, "rescore", str(run_dir), "--json")
    assert result.returncode == EXIT["ok"], result.stderr
    data = json.loads(result.stdout)
    assert data["info"]["rescore"] == "002" and len(data["changed"]) == 6


@pytest.mark.slow
def test_scorers_file_and_selected_scorers(run_dir, tmp_path):
    other = tmp_path / "other.py"
    other.write_text("def add_justify(response, values):\n    return 0.5\n\n"
                     "def length(response, values):\n    return len(response)\n")
    run = load_run(run_dir)
    result = rescore(run, ["add_justify"], other)
    out = Path(result.dir)
    assert_summary(out, {
        ("product", "format_valid"): (3, 1.0, 0.0, 0),
        ("product_combination", "add_justify"): (9, 0.5, 0.0, 0),
        ("product_combination", "format_valid"): (9, 1.0, 0.0, 0),
        ("symbol", "format_valid"): (3, 1.0, 0.0, 0),
        ("symbol_dir", "format_valid"): (3, 1.0, 0.0, 0)})
    assert {(c.id, c.old, c.new) for c in result.changed} == {
        (f"product_combination:a={a},b={b}", int(a == 2), 0.5) for a in (2, 3, 5) for b in (3, 4, 5)}
    info = json.loads((out / "rescore.json").read_text())
    assert info["selected"] == ["add_justify"]
    assert info["scorers"] == [{"name": "add_justify", "origin": str(other.resolve()),
                                "origin_sha256": hashlib.sha256(other.read_bytes()).hexdigest(),
                                "sha256": hashlib.sha256(b"def add_justify(response, values):\n    return 0.5\n")
                                .hexdigest(), "run_sha256": run.manifest.task("product_combination").scorers[1].sha256,
                                "tasks": ["product_combination"]}]

    result = rescore(load_run(run_dir), ["length", "contains"], other)
    assert Path(result.dir).name == "002"
    lengths = {}
    for response in read_jsonl(run_dir / "responses.jsonl"):
        lengths.setdefault(response["task"], []).append(len(response["text"]))
    summary = summary_of(Path(result.dir))
    assert {k: v[:2] for k, v in summary.items() if k[1] == "length"} == {
        (task, "length"): (len(values), pytest.approx(sum(values) / len(values))) for task, values in lengths.items()}
    assert summary["symbol", "contains"][:2] == (3, pytest.approx(2 / 3))
    assert ("product", "contains") not in summary
    assert {s["name"]: s["tasks"] for s in json.loads((Path(result.dir) / "rescore.json").read_text())["scorers"]} \
        == {"length": ["product", "product_combination", "symbol", "symbol_dir"], "contains": ["symbol"]}
    assert result.changed == ()


@pytest.mark.slow
def test_a_raising_scorer_is_recorded_as_an_error(run_dir, tmp_path):
    other = tmp_path / "boom.py"
    other.write_text("def boom(response, values):\n    raise ValueError('no good')\n")
    result = rescore(load_run(run_dir), ["boom", "contains"], other)
    records = [s for s in read_jsonl(Path(result.dir) / "scores.jsonl") if s["scorer"] == "boom"]
    assert len(records) == 18
    assert all(r["metrics"] is None and r["error"] == {"type": "ValueError", "message": "no good"} for r in records)
    summary = summary_of(Path(result.dir))
    assert {k: v for k, v in summary.items() if k[1] == "boom"} == {
        ("product", "boom"): (0, None, None, 3), ("product_combination", "boom"): (0, None, None, 9),
        ("symbol", "boom"): (0, None, None, 3), ("symbol_dir", "boom"): (0, None, None, 3)}
    assert result.info.counts.scorer_errors == 18

    other.write_text("def calculated_answer(response, values):\n    raise KeyError('a')\n")
    result = rescore(load_run(run_dir), ["calculated_answer"], other)
    assert len(result.changed) == 12
    first = result.changed[0]
    assert (first.id, first.metric, first.old, first.new, first.new_error) == (
        "product:a=2,b=3", "calculated_answer", 1, None, "KeyError: 'a'")


@pytest.mark.slow
def test_cli_errors_are_one_line_and_leave_nothing(run_dir, tmp_path):
    result = audit(tmp_path, "rescore", str(run_dir), "--scorer", "nope")
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: unknown scorer 'nope' (available: add_justify, calculated_answer, check_name_dir, "
        "contains, exact_match)\n"))
    result = audit(tmp_path, "rescore", str(run_dir), "--scorers", str(tmp_path / "missing.py"))
    assert (result.returncode, result.stderr) == (
        EXIT["usage"], f"benchrun: error: in '{tmp_path / 'missing.py'}': no such scorer file\n")
    result = audit(tmp_path, "rescore", str(tmp_path))
    assert result.returncode == EXIT["archive"] and result.stderr.count("\n") == 1
    assert not (run_dir / "rescores").exists() or not any((run_dir / "rescores").iterdir())


@pytest.mark.slow
def test_missing_benchmark_or_scorer_suggests_scorers_file(run_dir, tmp_path):
    config = run_dir / "config.yaml"
    config.write_text(config.read_text().replace("path: ", f"path: {tmp_path / 'gone'}  # ", 1))
    reseal(run_dir, "config.yaml")  # a run whose benchmark was where config.yaml says, and is gone
    gone = (f"in '{run_dir}': cannot find the run's benchmark (task.path: '{tmp_path / 'gone'}' is not a directory "
            f"(looked in {tmp_path / 'gone'}))")
    with pytest.raises(BenchrunError) as raised:
        rescore(load_run(run_dir))
    assert str(raised.value) == f"{gone}; give them with --scorers FILE.py --only"
    other = tmp_path / "partial.py"
    other.write_text("def calculated_answer(response, values):\n    return 1\n")
    with pytest.raises(BenchrunError) as raised:
        rescore(load_run(run_dir), scorers_file=other)
    assert str(raised.value) == f"{gone}; add --only to score with FILE.py's alone"
    with pytest.raises(BenchrunError) as raised:
        rescore(load_run(run_dir), scorers_file=other, only=True)
    assert str(raised.value) == (
        "the run's scorers add_justify, check_name_dir are not defined now (available: calculated_answer, contains, "
        f"exact_match); --only scores with '{other}' alone, which does not define them: define them there, "
        "or pick its scorers with --scorer NAME")
    broken = tmp_path / "broken.py"
    broken.write_text("def broken(:\n")
    with pytest.raises(TaskError, match="SyntaxError"):
        rescore(load_run(run_dir), scorers_file=broken)
    result = rescore(load_run(run_dir), ["contains"], other, only=True)
    assert Path(result.dir).name == "001"


def test_claim_dir_numbers_concurrent_claims_uniquely(tmp_path):
    parent = tmp_path / "rescores"
    parent.mkdir()
    (parent / "007").mkdir()
    (parent / "notes").mkdir()
    claimed: list[Path] = []
    threads = [threading.Thread(target=lambda: claimed.append(claim_dir(parent))) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(p.name for p in claimed) == [f"{n:03d}" for n in range(8, 24)]


def rescore_findings(run_dir: Path) -> list[Finding]:
    return [f for f in verify_run(load_run(run_dir)).findings if f.file.startswith("rescores/")]


def test_verify_checks_each_rescore_against_its_rescore_json(run_dir):
    rescore(load_run(run_dir))
    folder = run_dir / "rescores" / "001"
    digests = {name: file_digest(folder / name) for name in ("scores.jsonl", "summary.json")}
    (run_dir / "rescores" / "002").mkdir()  # a rescore killed before it ended
    assert rescore_findings(run_dir) == [
        Finding(True, "rescores/001/rescore.json", "rescore 001 of this run"),
        Finding(True, "rescores/001/scores.jsonl", f"45 lines as written (sha256 {digests['scores.jsonl'].sha256[:12]}…)"),
        Finding(True, "rescores/001/summary.json",
                f"{digests['summary.json'].lines} lines as written (sha256 {digests['summary.json'].sha256[:12]}…)"),
        Finding(True, "rescores/002", "unfinished (no rescore.json: it was stopped): claims nothing, not checked")]

    summary = folder / "summary.json"
    summary.write_text(summary.read_text().replace("1.0", "0.5", 1))
    changed = file_digest(summary).sha256
    assert rescore_findings(run_dir)[2] == Finding(
        False, "rescores/001/summary.json", f"changed since the rescore finished: sha256 {changed[:12]}…, "
                                            f"rescore.json has {digests['summary.json'].sha256[:12]}…")
    assert not verify_run(load_run(run_dir)).intact


@pytest.mark.parametrize("edit, message", [
    (lambda info: {**info, "run_id": "0123456789ab"},
     "is rescore 001 of run 0123456789ab (manifest {manifest}…), not of this run"),
    (lambda info: {**info, "files": {"../run.json": info["files"]["scores.jsonl"]}},
     "names a file outside its folder: '../run.json'"),
    (lambda info: {**info, "counts": "many"}, "unreadable: counts: Input should be an object"),
])
def test_verify_refuses_a_rescore_json_that_claims_what_is_not_so(run_dir, edit, message):
    rescore(load_run(run_dir))
    path = run_dir / "rescores" / "001" / "rescore.json"
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    manifest = load_run(run_dir).info.manifest_id[:12]
    assert rescore_findings(run_dir) == [Finding(False, "rescores/001/rescore.json", message.format(manifest=manifest))]
