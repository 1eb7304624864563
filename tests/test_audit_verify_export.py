"""`verify` (manifest id, file and line digests, benchmark sources) and `export` against real runs."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from benchrun.archive.ledger import Mismatch, read_digests
from benchrun.archive.lookup import expand_runs
from benchrun.archive.reader import load_run
from benchrun.archive.writer import RunWriter, now
from benchrun.audit.export import write_csv, write_jsonl
from benchrun.audit.verify import Finding, verify_run
from benchrun.core.errors import EXIT
from benchrun.core.records import Counts, RunInfo
from benchrun.core.resources import demos_dir
from tests.helpers.answers import BROKEN, broken_answer
from tests.helpers.archives import synthetic_run
from tests.helpers.commands import audit, make_run


@dataclass(frozen=True)
class Runs:
    root: Path
    listbench: Path
    """A listbench run of the benchmark copied to root/bench (task.path=bench, relative)."""
    folderbench: Path
    broken: Path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    root = tmp_path_factory.mktemp("runs")
    shutil.copytree(demos_dir() / "listbench", root / "bench")
    return Runs(root, make_run(root, "task.path=bench"), make_run(root, "task=folderbench"),
                make_run(root, *BROKEN, responder=broken_answer))


@pytest.fixture
def copy(runs, tmp_path) -> Path:
    """A copy of the listbench run, to tamper with."""
    return Path(shutil.copytree(runs.listbench, tmp_path / "run"))


def problems(run_dir: Path, cwd: Path | None = None) -> list[Finding]:
    return verify_run(load_run(run_dir), cwd).problems


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_of(path: Path) -> dict:
    data = path.read_bytes()
    return {"sha256": sha(data), "size": len(data), "lines": data.count(b"\n")}


def reseal(run_dir: Path) -> None:
    """Rewrite the digests above a deliberate edit, as a consistent forger would: config.yaml's in run.json (both, as
    the run's start and end wrote them), then run.json's in the seal (what verify cannot catch without a copy of the
    seal kept elsewhere)."""
    info = json.loads((run_dir / "run.json").read_text())
    info["files"]["config.yaml"] = digest_of(run_dir / "config.yaml")
    if "config_digest" in info:
        info["config_digest"] = info["files"]["config.yaml"]
    (run_dir / "run.json").write_text(json.dumps(info))
    seal = json.loads((run_dir / "seal.json").read_text())
    (run_dir / "seal.json").write_text(json.dumps({**seal, "run_json": digest_of(run_dir / "run.json")}))


# -- verify ---------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_fresh_run_is_intact(runs):
    run_dir = runs.listbench
    verdict = verify_run(load_run(run_dir))
    info = load_run(run_dir).info
    digest = {name: info.files[name].sha256[:12] for name in info.files}
    assert [f.text() for f in verdict.findings] == [
        f"ok    run.json: matches its seal; keep the seal's sha256 elsewhere to prove this run later: "
        f"{sha((run_dir / 'seal.json').read_bytes())}",
        f"ok    manifest.json: hashes to the manifest id {info.manifest_id[:12]}…",
        f"ok    config.yaml: {info.files['config.yaml'].lines} lines as written (sha256 {digest['config.yaml']}…)",
        f"ok    responses.jsonl: 18 lines as written (sha256 {digest['responses.jsonl']}…)",
        f"ok    scores.jsonl: 45 lines as written (sha256 {digest['scores.jsonl']}…)",
        f"ok    records.sha256: 63 lines as written (sha256 {digest['records.sha256']}…)",
        f"ok    summary.json: {info.files['summary.json'].lines} lines as written (sha256 {digest['summary.json']}…)",
        f"ok    sources: 3 files unchanged in {runs.root / 'bench'}",
    ]
    assert verdict.intact


@pytest.mark.slow
def test_records_sha256_has_a_digest_per_record_line(runs):
    """Lean lines, `r|s <128 bits of the line's sha256>`, in each record file's order (35 bytes a record line)."""
    written = (runs.listbench / "records.sha256").read_text().splitlines()
    for tag, name in (("r", "responses.jsonl"), ("s", "scores.jsonl")):
        lines = (runs.listbench / name).read_bytes().splitlines(keepends=True)
        assert [line for line in written if line[0] == tag] == [f"{tag} {sha(line)[:32]}" for line in lines]
    assert len(written) == 63 and (runs.listbench / "records.sha256").stat().st_size == 63 * 35
    info = load_run(runs.listbench).info
    data = (runs.listbench / "summary.json").read_bytes()
    assert info.files["summary.json"].model_dump() == {"sha256": sha(data), "size": len(data),
                                                      "lines": data.count(b"\n")}


@pytest.mark.slow
def test_an_edited_response_line(copy):
    lines = (copy / "responses.jsonl").read_text().splitlines(keepends=True)
    assert '"text":"{\\"answer\\": 11}"' in lines[1]
    lines[1] = lines[1].replace("11", "12")
    (copy / "responses.jsonl").write_text("".join(lines))
    assert problems(copy) == [Finding(False, "responses.jsonl", "line 2 is not the line written", 2)]

    result = audit(copy.parent, "verify", str(copy))
    assert result.returncode == EXIT["not_intact"], result.stderr
    assert "FAIL  responses.jsonl: line 2 is not the line written\n" in result.stdout
    assert result.stdout.endswith("NOT intact: 1 problem\n")


@pytest.mark.slow
def test_a_truncated_scores_file(copy):
    lines = (copy / "scores.jsonl").read_bytes().splitlines(keepends=True)
    (copy / "scores.jsonl").write_bytes(b"".join(lines[:40]))
    assert problems(copy) == [Finding(False, "scores.jsonl", "truncated: 5 lines of 45 written missing after line 40",
                                      41)]
    (copy / "scores.jsonl").write_bytes(b"".join(lines)[:-10])
    assert problems(copy) == [Finding(False, "scores.jsonl", "truncated: it ends part way through line 45", 45)]


@pytest.mark.slow
def test_lines_added_and_lines_removed(copy):
    path = copy / "responses.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines) + lines[0])
    assert problems(copy) == [Finding(False, "responses.jsonl", "1 line after line 18 not written by the run", 19)]
    path.write_bytes(b"".join(lines[:3] + lines[4:]))
    assert problems(copy) == [
        Finding(False, "responses.jsonl", "line 4 is not the line written (14 lines differ)", 4),
        Finding(False, "responses.jsonl", "1 line of 18 written missing from line 4 on (where the lines begin to "
                                          "differ)", 18)]


@pytest.mark.slow
def test_a_changed_manifest(copy):
    info = load_run(copy).info
    data = (copy / "manifest.json").read_bytes().replace(b"find the product of 2 and 3", b"find the product of 2 and 4")
    (copy / "manifest.json").write_bytes(data)
    assert problems(copy) == [Finding(False, "manifest.json", f"changed: its sha256 {sha(data)[:12]}… is not the "
                                                              f"manifest id {info.manifest_id[:12]}… in run.json")]


@pytest.mark.slow
def test_deleted_files(copy):
    info = load_run(copy).info
    (copy / "scores.jsonl").unlink()
    (copy / "manifest.json").unlink()
    assert problems(copy) == [
        Finding(False, "manifest.json", "missing"),
        Finding(False, "scores.jsonl", f"missing (45 lines, {info.files['scores.jsonl'].size} bytes when the run "
                                       "finished)")]


@pytest.mark.slow
@pytest.mark.parametrize("edit", [{"status": "completed_with_errors"}, {"counts": {"samples": 18, "responses": 17}}])
def test_an_edited_run_json_breaks_its_seal(copy, edit):
    info = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**info, **edit}, indent=2) + "\n")
    [problem] = problems(copy)
    seal = json.loads((copy / "seal.json").read_text())["run_json"]["sha256"]
    assert problem == Finding(False, "run.json", f"changed since the run was sealed: sha256 "
                                                 f"{sha((copy / 'run.json').read_bytes())[:12]}…, the seal has "
                                                 f"{seal[:12]}…")


@pytest.mark.slow
def test_an_edited_config_and_a_missing_seal(copy):
    info = load_run(copy).info
    (copy / "config.yaml").write_text((copy / "config.yaml").read_text().replace("seed: 0", "seed: 1"))
    assert problems(copy) == [Finding(False, "config.yaml", f"changed since the run finished: sha256 "
                                                            f"{sha((copy / 'config.yaml').read_bytes())[:12]}…, "
                                                            f"run.json has {info.files['config.yaml'].sha256[:12]}…")]
    (copy / "seal.json").unlink()
    assert problems(copy)[0] == Finding(False, "seal.json", "missing: the run ended (completed) but nothing covers "
                                                            "run.json")


@pytest.mark.slow
def test_an_edited_summary(copy):
    info = load_run(copy).info
    data = (copy / "summary.json").read_bytes().replace(b'"mean": 0.6666666666666666', b'"mean": 0.9', 1)
    (copy / "summary.json").write_bytes(data)
    assert problems(copy) == [Finding(False, "summary.json", f"changed since the run finished: sha256 "
                                                             f"{sha(data)[:12]}…, run.json has "
                                                             f"{info.files['summary.json'].sha256[:12]}…")]


@pytest.mark.slow
def test_a_run_without_line_digests_still_names_the_file(copy):
    """Runs written before records.sha256 existed: the file is named, the line cannot be."""
    info = load_run(copy).info
    files = {k: v for k, v in info.files.items() if k != "records.sha256"}
    (copy / "run.json").write_text(info.model_copy(update={"files": files}).model_dump_json())
    reseal(copy)
    (copy / "records.sha256").unlink()
    path = copy / "responses.jsonl"
    data = path.read_bytes()
    path.write_bytes(data + data[:50])
    assert problems(copy) == [Finding(False, "responses.jsonl", f"changed since the run finished: sha256 "
                                                                f"{sha(data + data[:50])[:12]}…, run.json has "
                                                                f"{info.files['responses.jsonl'].sha256[:12]}…")]


def as_written_by_0_2(run_dir: Path) -> None:
    """records.sha256 in the form benchrun 0.2 wrote, `<file> <line number> <sha256>`, with run.json and the seal
    updated to match (as that version sealed them)."""
    lines = []
    for name in ("responses.jsonl", "scores.jsonl"):
        for number, line in enumerate((run_dir / name).read_bytes().splitlines(keepends=True), start=1):
            lines.append(f"{name} {number} {sha(line)}\n")
    (run_dir / "records.sha256").write_text("".join(lines))
    info = json.loads((run_dir / "run.json").read_text())
    info["files"]["records.sha256"] = digest_of(run_dir / "records.sha256")
    (run_dir / "run.json").write_text(json.dumps(info))
    reseal(run_dir)


@pytest.mark.slow
def test_a_run_written_by_0_2_verifies_and_names_the_line(copy):
    as_written_by_0_2(copy)
    assert problems(copy) == []
    lines = (copy / "scores.jsonl").read_text().splitlines(keepends=True)
    lines[6] = lines[6].replace('"scorer"', '"scorer" ', 1)
    (copy / "scores.jsonl").write_text("".join(lines))
    assert [p for p in problems(copy) if p.file == "scores.jsonl"] == [
        Finding(False, "scores.jsonl", "line 7 is not the line written", 7)]


def test_digest_lines_of_either_form_and_of_neither(tmp_path):
    """What resume reads: lean lines and 0.2 lines alike (a resumed 0.2 run goes on in lean lines); a shortened
    digest, an unknown file tag or an upper-case digest is not a digest line."""
    full = sha(b"x\n")
    (tmp_path / "records.sha256").write_text(
        f"responses.jsonl 1 {full}\nr {full[:32]}\ns {full[:32]}\nr {full[:31]}\nq {full[:32]}\n"
        f"scores.jsonl 2 {full.upper()}\ns {full[:32]}")
    found = read_digests(tmp_path)
    assert found.lines == {"responses.jsonl": [full[:32], full[:32]], "scores.jsonl": [full[:32]]}
    assert found.problems == [Mismatch("records.sha256", n, f"line {n} is not a digest line") for n in (4, 5, 6)]


@pytest.mark.slow
def test_changed_benchmark_sources(runs, copy, tmp_path):
    bench = Path(shutil.copytree(runs.root / "bench", tmp_path / "bench"))
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["task"]["path"] = str(bench)
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    reseal(copy)
    assert problems(copy) == []
    before = sha((bench / "tasks.yml").read_bytes())
    text = (bench / "tasks.yml").read_text().replace("find the product of {a} and {b}", "multiply {a} by {b}", 1)
    (bench / "tasks.yml").write_text(text)
    (bench / "custom_response.py").unlink()
    (bench / "tasks" / "extra").mkdir(parents=True)
    (bench / "tasks" / "extra" / "template.txt").write_text("{a}?")
    assert problems(copy) == [
        Finding(False, "sources custom_response.py", f"missing from {bench}"),
        Finding(False, "sources tasks.yml", f"changed since the run (sha256 {before[:12]}… now "
                                            f"{sha(text.encode())[:12]}…)"),
        Finding(False, "sources tasks/extra/template.txt", f"new in {bench}: not part of the run")]


@pytest.mark.slow
def test_sources_not_found(copy, tmp_path):
    """task.path is relative ('bench'): looked for where the run started (run.json cwd), then in cwd."""
    info = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**info, "cwd": str(tmp_path)}))
    reseal(copy)
    verdict = verify_run(load_run(copy), cwd=tmp_path)
    assert verdict.findings[-1] == Finding(True, "sources", f"task.path: 'bench' is not a directory (looked in "
                                                            f"{tmp_path / 'bench'}): not checked")
    assert verdict.intact


def test_a_run_that_did_not_finish(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1, 0, 1], finish=False)
    verdict = verify_run(load_run(run_dir))
    assert [f.text() for f in verdict.findings[2:]] == [
        "ok    responses.jsonl: 3 lines match records.sha256",
        "ok    scores.jsonl: 6 lines match records.sha256",
        "ok    config.yaml: 1 line as written (sha256 8797aaa88cf3…)",  # as the run wrote it at its start
        f"ok    sources: task.path: 'nowhere' is not a directory (looked in {Path.cwd() / 'nowhere'}): not checked",
    ]
    with open(run_dir / "responses.jsonl", "ab") as handle:
        handle.write(b'{"id": "t:a=3", "tas')
    assert verify_run(load_run(run_dir)).problems[1:] == [
        Finding(False, "responses.jsonl", "1 line after line 3 that records.sha256 does not cover yet: what a writer "
                                          "stopped mid-write (or writing now) leaves; a resume drops it and asks again",
                4)]


def test_a_run_that_failed_before_it_compiled(tmp_path):
    info = RunInfo(run_id="f" * 12, status="running", started_at=now(), benchmark="b", model="m", manifest_id=None,
                   runner={}, environment={}, counts=Counts(samples=0))
    writer = RunWriter.create(tmp_path / "run", info)
    writer.start("task: {path: nowhere}\n")
    writer.finish("failed", "in 'tasks.yml': bad")
    writer.release()
    verdict = verify_run(load_run(tmp_path / "run"))
    assert verdict.intact
    seal = sha((tmp_path / "run" / "seal.json").read_bytes())
    assert [f.text() for f in verdict.findings] == [
        f"ok    run.json: matches its seal; keep the seal's sha256 elsewhere to prove this run later: {seal}",
        "ok    manifest.json: none: the run failed before it compiled (in 'tasks.yml': bad)",
        "ok    config.yaml: 1 line as written (sha256 " + sha(b"task: {path: nowhere}\n")[:12] + "…)"]


@pytest.mark.slow
def test_verify_command(runs, copy):
    result = audit(runs.root, "verify", load_run(runs.listbench).id)
    assert result.returncode == EXIT["ok"], result.stderr
    assert result.stdout.endswith("\nintact\n")

    (copy / "records.sha256").write_text("")
    result = audit(copy.parent, "verify", str(copy), "--json")
    assert result.returncode == EXIT["not_intact"]
    data = json.loads(result.stdout)
    assert data["intact"] is False
    assert [(f["file"], f["ok"]) for f in data["findings"] if not f["ok"]] == [("records.sha256", False)]

    result = audit(runs.root, "verify", "zzz")
    assert (result.returncode, result.stderr) == (
        EXIT["archive"], "benchrun: error: no run directory or run id 'zzz' under outputs\n")


# -- export ---------------------------------------------------------------------------------------------------------


def exported(run_dirs: list[Path]) -> tuple[list[str], list[dict]]:
    out = io.StringIO()
    write_csv([load_run(d) for d in run_dirs], out)
    reader = csv.DictReader(io.StringIO(out.getvalue()))
    return reader.fieldnames, list(reader)


@pytest.mark.slow
def test_export_csv_rows(runs):
    info = load_run(runs.folderbench).info
    columns, rows = exported([runs.folderbench])
    assert columns == ["run_id", "label", "model", "manifest_id", "task", "sample_id", "repeat", "scorer", "metric",
                       "value", "error", "value.a", "value.b", "reference"]
    common = {"run_id": info.run_id, "label": "llama3.2", "model": "llama3.2", "manifest_id": info.manifest_id,
              "task": "add", "error": ""}
    expected = []
    for a, b, reference, exact in ((2, 3, 5, 1), (4, 5, 9, 1), (8, 9, 17, 0)):
        sample = {"sample_id": f"add:a={a},b={b}", "repeat": "0", "value.a": str(a), "value.b": str(b),
                  "reference": str(reference)}
        expected += [{**common, **sample, "scorer": "format_valid", "metric": "format_valid", "value": "1"},
                     {**common, **sample, "scorer": "exact_match", "metric": "exact_match", "value": str(exact)}]
    assert rows == expected


@pytest.mark.slow
def test_export_failed_scorers(runs):
    columns, rows = exported([runs.broken])
    assert columns[11:] == ["value.a", "value.b", "value.direction", "value.name", "value.symb", "reference"]
    failed = [(r["sample_id"], r["metric"], r["value"], r["error"]) for r in rows if r["error"]]
    not_json = "JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
    busy = "NoResponse: no response: HTTP 503: server busy"
    less = "symbol_dir:symb=<,name=less,direction=left"
    assert failed == [
        ("product:a=2,b=3", "calculated_answer", "", not_json),
        ("product:a=5,b=5", "format_valid", "", busy), ("product:a=5,b=5", "calculated_answer", "", busy),
        (less, "check_name_dir.name", "", not_json), (less, "check_name_dir.direction", "", not_json)]
    assert len(rows) == 15
    row = next(r for r in rows if r["sample_id"] == less and r["metric"] == "format_valid")
    assert {k: row[k] for k in columns[9:]} == {"value": "0", "error": "", "value.a": "", "value.b": "",
                                               "value.direction": "left", "value.name": "less", "value.symb": "<",
                                               "reference": ""}


@pytest.mark.slow
def test_export_jsonl_and_several_runs(runs):
    out = io.StringIO()
    count = write_jsonl([load_run(runs.folderbench), load_run(runs.broken)], out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert count == len(rows) == 6 + 15
    assert {tuple(r) for r in rows} == {("run_id", "label", "model", "manifest_id", "task", "sample_id", "repeat",
                                         "scorer", "metric", "value", "error", "value.a", "value.b", "value.direction",
                                         "value.name", "value.symb", "reference")}
    assert rows[5] == {**rows[5], "sample_id": "add:a=8,b=9", "value": 0, "value.a": 8, "value.symb": None,
                       "reference": 17}
    assert next(r for r in rows if r["error"])["value"] is None


def test_export_list_reference_as_json(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [0.5], reference=["x", 2])
    _, rows = exported([run_dir])
    assert [(r["metric"], r["value"], r["reference"]) for r in rows] == [("format_valid", "1", '["x", 2]'),
                                                                          ("closeness", "0.5", '["x", 2]')]
    out = io.StringIO()
    write_jsonl([load_run(run_dir)], out)
    assert json.loads(out.getvalue().splitlines()[0])["reference"] == ["x", 2]


@pytest.mark.slow
def test_export_command(runs, tmp_path):
    target = tmp_path / "rows.csv"
    result = audit(runs.root, "export", load_run(runs.folderbench).id, str(runs.broken), "--output", str(target))
    assert (result.returncode, result.stdout, result.stderr) == (EXIT["ok"], "", "")
    expected = io.StringIO()
    write_csv([load_run(runs.folderbench), load_run(runs.broken)], expected)
    assert target.read_bytes() == expected.getvalue().encode()

    result = audit(runs.root, "export", str(runs.folderbench), "--format", "jsonl")
    assert [json.loads(line)["sample_id"] for line in result.stdout.splitlines()][::2] == [
        "add:a=2,b=3", "add:a=4,b=5", "add:a=8,b=9"]


@pytest.mark.slow
def test_export_a_sweep_directory(tmp_path):
    sweep = make_run(tmp_path, "task=folderbench", "runner.model=llama3.2,gemma3", multirun=True)
    runs = expand_runs(str(sweep), tmp_path / "outputs")
    assert [run.info.model for run in runs] == ["llama3.2", "gemma3"]
    out = io.StringIO()
    assert write_csv(runs, out) == 12
