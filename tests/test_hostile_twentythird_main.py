"""Hostile input, twenty-third pass: the lead's own cases (the review of the twenty-second pass's change).

- a benchmark's scorer that binds a Unix socket in its $TMPDIR (as multiprocessing's managers and forkserver do)
  failed with `AF_UNIX path too long` under a $TMPDIR that took 60 characters: the twenty-second pass named each
  scratch folder by its maker (boot, pid namespace, pid, start: about 40 characters more), and Linux holds a socket's
  path to 107. The maker is now said by a file in the folder (`core.scratch.MAKER`), its name back to mkdtemp's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from benchrun.core import scratch
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import write_bench

SOCKET_SCORER = ("import os\nimport socket\nimport tempfile\n\n\n"
                 "def s(response, reference):\n"
                 "    with socket.socket(socket.AF_UNIX) as listener:\n"
                 "        listener.bind(os.path.join(tempfile.gettempdir(), 'scorer.sock'))\n"
                 "    return 1\n")


def test_a_scratch_folder_is_named_by_its_prefix_and_says_its_maker_in_a_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = Path(scratch.scratch_folder())
    assert re.fullmatch(r"benchrun-scratch-[a-z0-9_]{8}", folder.name), folder.name
    machine, pid, start = (folder / scratch.MAKER).read_text().split()
    assert (machine, int(pid), int(start)) == (scratch._machine(), os.getpid(),
                                              scratch.started(os.getpid()))


def test_a_scorer_binding_a_unix_socket_in_its_temporary_folder_is_not_pushed_past_the_path_limit(tmp_path):
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    temp = base / ("p" * (60 - len(str(base)) - 1))
    temp.mkdir()
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                        "  scorer: s\n",
                           "custom_scorer.py": SOCKET_SCORER})
    try:
        with FakeOllama(models=["llama3.2"]) as server:
            done = subprocess.run([sys.executable, "-m", "benchrun", "task.path=bench", f"runner.host={server.url}",
                                   "cache=false", "outputs=outputs"], cwd=tmp_path,
                                  env=child_env({"TMPDIR": str(temp)}), capture_output=True, text=True, timeout=120)
        [scores] = (tmp_path / "outputs").glob("*/*/scores.jsonl")
        assert (done.returncode, done.stderr) == (EXIT["ok"], "")
        assert [(s["scorer"], s["metrics"], s["error"]) for s in map(json.loads, scores.read_text().splitlines())] == [
            ("format_valid", {"format_valid": 1}, None), ("s", {"s": 1}, None)]
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=True)


def test_a_fifo_standing_as_a_folders_maker_file_is_passed_over_not_waited_on(tmp_path):
    folder = tmp_path / f"{scratch.PREFIX}q1w2e3r4"
    folder.mkdir()
    os.mkfifo(folder / scratch.MAKER)
    swept = subprocess.run([sys.executable, "-c", "import sys; from benchrun.core.scratch import remove_orphans; "
                            "remove_orphans(sys.argv[1], 'benchrun-scratch-')", str(tmp_path)],
                           env=child_env(), capture_output=True, text=True, timeout=60)
    assert (swept.returncode, swept.stderr, [path.name for path in tmp_path.iterdir()]) == (0, "", [folder.name])
