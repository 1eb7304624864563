"""The twenty-second hostile pass of issue 19, the items the twenty-first pass noticed and left (closing21.md).

- a sweep's end read each job's whole manifest to compare its `files` (`archive.sweepsources.changed_source`): a job
  of 100,000 samples was ten MB parsed, a quarter second and 37 MiB a job. Now only the manifest's `files`, written
  before its samples, is read (`archive.manifesthead.leading_field`)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchrun.archive.reader
from benchrun.archive import manifesthead
from benchrun.archive.sweepsources import changed_source
from benchrun.core.errors import ArchiveError
from tests.helpers.archives import replace_manifest, synthetic_run


def _job(root: Path, name: str, sha: str) -> Path:
    """A sweep job of the benchmark `root/bench` whose manifest names tasks.yml read with bytes of digest `sha`."""
    (root / "bench").mkdir(exist_ok=True)
    job = synthetic_run(root / "sweep" / name, [1.0] * 3, config=f"task: {{path: {root / 'bench'}}}\n")
    replace_manifest(job, lambda data: data.update(files=[{"path": "tasks.yml", "sha256": sha}]))
    return job


def test_a_sweeps_end_reads_each_jobs_manifest_files_not_the_whole_manifest(tmp_path, monkeypatch):
    jobs = [_job(tmp_path, "0_a", "a" * 64), _job(tmp_path, "1_b", "b" * 64)]
    whole = benchrun.archive.reader.archived

    def archived(path: Path, limit: int | None = None) -> bytes:
        assert path.name != "manifest.json", "a manifest read whole"
        return whole(path, limit)

    monkeypatch.setattr(benchrun.archive.reader, "archived", archived)
    assert changed_source(jobs) == (
        f"jobs 0_a and 1_b read {tmp_path / 'bench' / 'tasks.yml'} with other bytes (sha256 aaaaaaaaaaaa, then "
        "bbbbbbbbbbbb): the benchmark changed while the sweep ran, and the sweep's table compares them as one; run "
        "the sweep again")


def test_a_manifests_files_are_read_without_its_samples(tmp_path, monkeypatch):
    path = tmp_path / "manifest.json"
    files = [{"path": "tasks.yml", "sha256": "c" * 64}]
    head = json.dumps({"benchmark": "b", "config": {"n": 12345}, "files": files}, separators=(",", ":"))[:-1]
    path.write_text(head + ',"samples":[' + ",".join(['{"id":"t:a=1"}'] * 200_000) + "]}")
    monkeypatch.setattr(manifesthead, "FIRST_BYTES", 7)
    read: list[int] = []
    opened = manifesthead.regular_file

    def counted(*args, **kwargs):
        file = opened(*args, **kwargs)
        real = file.read
        file.read = lambda size: (read.append(size), real(size))[1]
        return file

    monkeypatch.setattr(manifesthead, "regular_file", counted)
    assert manifesthead.leading_field(path, "files") == files
    assert sum(read) < 2 * len(head)


@pytest.mark.parametrize(("data", "said"), [
    (b'{"benchmark":"b"}', "not a manifest: no files"),
    (b'{"benchmark":"b","files":[1', "not valid JSON: Expecting ',' delimiter: line 1 column 28 (char 27)"),
    (b'{"benchmark":"b",', "not valid JSON: it ends too soon"),
    (b'{"benchmark":"\xff","files":[]}', "not UTF-8 text (invalid start byte)"),
    (b'[{"files":[]}]', "not valid JSON: expecting '{' at character 0"),
    (b'{"benchmark":"b" "files":[]}', "not valid JSON: expecting ',' at character 17"),
    (b'{"files":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "not valid JSON: nested too deep"),
])
def test_a_manifest_that_is_not_one_is_said_in_one_line(tmp_path, data, said):
    path = tmp_path / "manifest.json"
    path.write_bytes(data)
    with pytest.raises(ArchiveError) as raised:
        manifesthead.leading_field(path, "files")
    assert str(raised.value) == f"in '{path}': {said}"
