"""Work a run does once and reuses, or waits on exactly: an import probe's child waited for until the moment it
ends (`core.childwait`), a file probed once while it, its own modules and its folder's Python files are unchanged
(`compiler.importprobe`), the SSL context made once for the same certificates (`transport.ssl_context`)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import certifi
import pytest

from benchrun.compiler import importprobe
from benchrun.compiler.usercode import import_file
from benchrun.core.childwait import waited
from benchrun.core.errors import TaskError
from benchrun.execute.runners.transport import ssl_context


def test_a_child_waited_for_gives_its_exit_code():
    child = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert waited(child, 60) == 3
    assert child.returncode == 3


def test_a_child_past_its_time_is_said_as_popen_says_it_and_left_running():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with pytest.raises(subprocess.TimeoutExpired) as said:
            waited(child, 0.2)
        assert (said.value.timeout, child.poll()) == (0.2, None)
    finally:
        child.kill()
    assert waited(child, 60) == -9


def test_one_ssl_context_serves_the_same_certificates_and_a_new_one_is_made_for_others(tmp_path, monkeypatch):
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    assert ssl_context() is ssl_context()
    bundle = shutil.copy(certifi.where(), tmp_path / "ca.pem")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    made = ssl_context()
    assert made is ssl_context()
    with open(bundle, "a") as more:
        more.write("\n")
    assert ssl_context() is not made


def _probes_counted(monkeypatch) -> list[str]:
    """The files the import probe is started for, from now on."""
    started: list[str] = []
    real = importprobe.probed
    monkeypatch.setattr(importprobe, "probed", lambda path, rel: started.append(rel) or real(path, rel))
    return started


def test_a_file_imported_as_it_was_is_not_probed_again_and_one_changed_is(tmp_path, monkeypatch):
    started = _probes_counted(monkeypatch)
    scorer = tmp_path / "custom_scorer.py"
    scorer.write_text("def one(response):\n    return 1\n")
    assert import_file(scorer, "custom_scorer.py").one("x") == 1
    assert import_file(scorer, "custom_scorer.py").one("x") == 1
    scorer.write_text("import os\nos._exit(4)\n")
    with pytest.raises(TaskError, match=r"cannot import: it ended the process importing it \(os._exit\(4\) or the"):
        import_file(scorer, "custom_scorer.py")
    assert started == ["custom_scorer.py", "custom_scorer.py"]


@pytest.mark.parametrize("beside, scorer_text, changed", [
    ({"helpers.py": "ONE = 1\n"}, "from helpers import ONE\n\ndef one(response):\n    return ONE\n", "helpers.py"),
    ({}, "try:\n    import extra\nexcept ImportError:\n    ONE = 1\n\ndef one(response):\n    return ONE\n",
     "extra.py"),
], ids=["its own module changed", "a module it would import added beside it"])
def test_a_file_whose_folder_changed_since_is_probed_again(tmp_path, monkeypatch, beside, scorer_text, changed):
    started = _probes_counted(monkeypatch)
    for name, text in beside.items():
        (tmp_path / name).write_text(text)
    scorer = tmp_path / "custom_scorer.py"
    scorer.write_text(scorer_text)
    assert import_file(scorer, "custom_scorer.py").one("x") == 1
    (tmp_path / changed).write_text("import os\nos._exit(5)\n")
    with pytest.raises(TaskError, match=r"it ended the process importing it \(os._exit\(5\) or the like\)"):
        import_file(scorer, "custom_scorer.py")
    assert started == ["custom_scorer.py", "custom_scorer.py"]
