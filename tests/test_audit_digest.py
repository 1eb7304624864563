"""One reader of a run's model digest (`Run.model_digest`), and every audit that shows a digest using it: an Ollama
model's digest as the server gives it, an embedded GGUF model's sha256 as `sha256:<hex>`."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.audit.__main__ import main as audit_main
from benchrun.audit.compare import compare
from benchrun.audit.report import write_report
from benchrun.audit.samemodel import check_model
from benchrun.core.errors import EXIT, ArchiveError
from tests.helpers.archives import synthetic_run

GGUF = hashlib.sha256(b"a GGUF file").hexdigest()
OTHER_GGUF = hashlib.sha256(b"another GGUF file").hexdigest()
OLLAMA = hashlib.sha256(b"llama3.2").hexdigest()
LOCAL = {"file": "SmolLM2-135M-Instruct.Q4_1.gguf", "sha256": GGUF, "size": 11, "llama_cpp_version": "0.3.9"}
"""What runner=local recorded before it also wrote `digest`: the file's sha256 alone."""


@pytest.fixture
def local_run(tmp_path) -> Path:
    return synthetic_run(tmp_path / "outputs" / "local", [1, 0], run_id="a" * 12, model="smollm2", identity=LOCAL)


@pytest.mark.parametrize("identity,digest", [
    ({"name": "llama3.2:latest", "digest": OLLAMA}, OLLAMA),
    (LOCAL, f"sha256:{GGUF}"),
    ({**LOCAL, "digest": GGUF}, f"sha256:{GGUF}"),
    ({"name": "qwen", "owned_by": "me", "structured_dialect": "json_schema"}, None),
])
def test_model_digest(tmp_path, identity, digest):
    assert load_run(synthetic_run(tmp_path / "run", [1], identity=identity)).model_digest == digest


def test_show_prints_the_gguf_sha256_as_the_digest(local_run, capsys):
    assert audit_main(["show", str(local_run)]) == EXIT["ok"]
    lines = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert f"model        smollm2  name -  digest sha256:{GGUF}  server -" in lines


def test_list_prints_the_short_digest_and_json_the_whole(local_run, capsys):
    root = str(local_run.parent)
    assert audit_main(["list", root]) == EXIT["ok"]
    row = next(line for line in capsys.readouterr().out.splitlines() if "a" * 12 in line)
    assert f"│ smollm2 @{GGUF[:12]} │" in row
    assert audit_main(["list", root, "--json"]) == EXIT["ok"]
    assert json.loads(capsys.readouterr().out)[0]["digest"] == f"sha256:{GGUF}"


def test_the_report_shows_the_gguf_sha256(local_run):
    html = write_report(str(local_run)).read_text()
    row = re.search(r"<tr><td>model digest</td>(.*?)</tr>", html)[1]
    assert row == f"<td><pre>sha256:{GGUF}</pre></td>"


def test_compare_shows_a_changed_gguf_as_a_changed_digest(local_run, tmp_path):
    other = synthetic_run(tmp_path / "other", [1, 1], run_id="b" * 12, model="smollm2",
                          identity={**LOCAL, "sha256": OTHER_GGUF})
    provenance = compare([load_run(local_run), load_run(other)]).comparisons[0].inputs.provenance
    assert provenance.changed == {"model.digest": (f"sha256:{GGUF}", f"sha256:{OTHER_GGUF}")}


def test_resume_refuses_another_gguf_by_its_digest(local_run):
    run = load_run(local_run)
    check_model(run, {**LOCAL, "digest": GGUF}, force=False)
    with pytest.raises(ArchiveError) as raised:
        check_model(run, {**LOCAL, "sha256": OTHER_GGUF, "digest": OTHER_GGUF}, force=False)
    assert str(raised.value) == (f"model smollm2 is now {OTHER_GGUF[:12]}, the run used {GGUF[:12]}; resume with "
                                 "--force to continue with it anyway (recorded in run.json)")
    check_model(run, {**LOCAL, "sha256": OTHER_GGUF}, force=True)
