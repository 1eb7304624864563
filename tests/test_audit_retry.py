"""`retry`: a finished run's failed samples asked again into a new run that names its parent; the parent untouched."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab, half_right
from benchrun.testing.ollama_server import FakeOllama, Reply
from tests.helpers.archives import read_jsonl

pytestmark = pytest.mark.slow
BROKEN = {3, 4, 11}


class Flaky:
    """400 for the prompts of BROKEN until `fixed`."""

    def __init__(self) -> None:
        self.fixed = False

    def __call__(self, req):
        a = int(req.prompt.split()[4])
        if a in BROKEN and not self.fixed:
            return Reply(status=400, error=f"cannot answer {a}")
        return half_right(req)


class Dropping(Flaky):
    """Until `fixed`, goes away at the first chat: drops its connection and stops `server` (a server lost)."""

    server: FakeOllama

    def __call__(self, req):
        if self.fixed:
            return half_right(req)
        threading.Thread(target=self.server.stop).start()
        return Reply(drop=True)


def audit(lab: Lab, *args: str):
    """`benchrun-audit ARGS` in the lab, called in this process."""
    return lab.call(*args, module="benchrun.audit")


def files_of(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file() and p.name != "run.lock"}


def test_retry_asks_only_the_failed_samples_into_a_new_run(tmp_path):
    responder = Flaky()
    with Lab(tmp_path, responder=responder) as lab:
        first = lab.call(*lab.args())
        assert first.returncode == EXIT["ok"], first.stderr
        [parent] = lab.run_dirs()
        before = files_of(parent)
        parent_info = json.loads((parent / "run.json").read_text())
        assert (parent_info["status"], parent_info["counts"]["request_errors"]) == ("completed_with_errors", 3)

        resumed = audit(lab, "resume", str(parent))
        assert (resumed.returncode, resumed.stderr) == (
            EXIT["archive"], f"benchrun: error: in '{parent}': run {parent_info['run_id']} is completed_with_errors; "
                             f"nothing to resume; to ask its failed samples again: benchrun-audit retry {parent}\n")

        responder.fixed = True
        asked_before = len(lab.server.requests)
        result = audit(lab, "retry", str(parent))
        assert result.returncode == EXIT["ok"], result.stderr
        asked = sorted(int(r["messages"][-1]["content"].split()[4]) for r in lab.server.requests[asked_before:]
                       if r["path"] == "/api/chat")
        assert asked == sorted(BROKEN)
        assert f"retry of run {parent_info['run_id']}: 17 answers carried over, 3 samples asked again" in result.stdout

        child = parent.with_name(parent.name + ".retry1")
        assert files_of(parent) == before
        info = json.loads((child / "run.json").read_text())
        assert info["status"] == "completed" and info["run_id"] != parent_info["run_id"]
        assert info["manifest_id"] == parent_info["manifest_id"]
        assert info["parent"] == {"run_id": parent_info["run_id"], "path": str(parent), "carried": 17, "asked": 3}
        assert info["counts"] == {"samples": 20, "responses": 20, "request_errors": 0, "scorer_errors": 0,
                                  "format_invalid": 0, "cached": 0}
        responses = read_jsonl(child / "responses.jsonl")
        assert sorted(r["id"] for r in responses) == sorted(f"times7:a={a}" for a in range(20))
        assert {r["id"] for r in responses if r["carried_from"] == parent_info["run_id"]} == {
            f"times7:a={a}" for a in range(20) if a not in BROKEN}
        assert len(read_jsonl(child / "scores.jsonl")) == 40
        assert audit(lab, "verify", str(child)).returncode == EXIT["ok"]
        assert audit(lab, "verify", str(parent)).returncode == EXIT["ok"]

        listed = audit(lab, "list", "--json")
        lineage = {row["run_id"]: row["parent"] for row in json.loads(listed.stdout)}
        assert lineage == {info["run_id"]: parent_info["run_id"], parent_info["run_id"]: None}
        shown = audit(lab, "show", str(child))
        row = re.search(r"^retry of\s+(\S+)\s+(\S+)\s+\((.*?)\)", shown.stdout, re.M | re.S)
        assert (row[1], row[2], " ".join(row[3].split())) == (parent_info["run_id"], str(parent),
                                                              "17 answers carried over, 3 samples asked again")

        again = audit(lab, "retry", str(child))
        assert (again.returncode, again.stderr) == (
            EXIT["archive"], f"benchrun: error: in '{child}': every sample of run {info['run_id']} has an answer; "
                             "nothing to retry\n")


def test_retry_refuses_a_parent_that_does_not_verify(tmp_path):
    responder = Flaky()
    with Lab(tmp_path, responder=responder) as lab:
        lab.call(*lab.args())
        [parent] = lab.run_dirs()
        lines = (parent / "scores.jsonl").read_text().splitlines(keepends=True)
        (parent / "scores.jsonl").write_text("".join(lines[:-1]))
        result = audit(lab, "retry", str(parent))
        assert result.returncode == EXIT["archive"]
        assert result.stderr.startswith(f"benchrun: error: in '{parent}': scores.jsonl: ")
        assert result.stderr.endswith("; retry with --force to carry its records over anyway (recorded)\n")
        assert not parent.with_name(parent.name + ".retry1").exists()


def test_carried_answers_are_not_counted_as_taken_from_the_cache(tmp_path):
    """The parent took its good answers from the response cache; the retry carries them over and asks none of them."""
    responder = Flaky()
    with Lab(tmp_path, responder=responder) as lab:
        cached = [*lab.args(), "cache=true", f"cache_dir={tmp_path / 'cache'}"]
        assert lab.call(*cached).returncode == EXIT["ok"]
        second = lab.call(*[arg if not arg.startswith("outputs=") else f"outputs={tmp_path / 'second'}"
                           for arg in cached])
        [parent] = lab.run_dirs(tmp_path / "second")
        assert json.loads((parent / "run.json").read_text())["counts"]["cached"] == 17, second.stderr
        responder.fixed = True
        result = audit(lab, "retry", str(parent))
    assert result.returncode == EXIT["ok"], result.stderr
    retry = parent.with_name(parent.name + ".retry1")
    assert json.loads((retry / "run.json").read_text())["counts"]["cached"] == 0
    assert "from the cache" not in result.stdout


def test_a_retry_on_another_host_is_resumed_on_that_host(tmp_path):
    """retry --host asks a second server; when that retry is stopped and resumed without --host, the resume asks the
    server the retry used, not the parent's (which still cannot answer)."""
    second = Dropping()
    with Lab(tmp_path, responder=Flaky()) as lab, FakeOllama(responder=second) as other:
        second.server = other
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [parent] = lab.run_dirs()
        lost = audit(lab, "retry", str(parent), "--host", other.url)
        retry = parent.with_name(parent.name + ".retry1")
        assert (lost.returncode, json.loads((retry / "run.json").read_text())["status"]) == \
            (EXIT["runner"], "interrupted")
        second.fixed = True
        other.start()
        asked_before = len(lab.server.requests)
        resumed = audit(lab, "resume", str(retry))
    assert resumed.returncode == EXIT["ok"], resumed.stderr
    assert len(lab.server.requests) == asked_before
    assert json.loads((retry / "run.json").read_text())["status"] == "completed"
