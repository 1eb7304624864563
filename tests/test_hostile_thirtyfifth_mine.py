"""The thirty-fifth hostile pass, the lead's side: the process's surroundings.

Fixed:
1. A run onto a FAT disk mounted by fusefat (a USB stick's file system, shared as such) was refused before it asked
   anything: `operation not permitted writing .../run.lock`. Cutting the lock's note to its length, where that
   length is already the file's, is a truncation fusefat refuses (it cannot grow or keep a file's size that way);
   the note is now cut only where the file is longer.
2. A process the system would not start (fork's EAGAIN at `ulimit -u` or a cgroup's pids.max: the scorer process,
   the import probe) was said `resource temporarily unavailable`, where a thread it would not start was said as the
   limit of processes and threads reached. Both are now said as that limit (`core.errors.os_problem`).
3. A preset folder whose name looks like an override (`--config-dir hydra.verbose=5`, `-cd exp=1`) was read as one by
   the checks of the command line: `hydra.verbose: takes true ..., not 5`. The checks now read only the words Hydra
   reads as overrides, not a flag's value (`compose.commandline.override_words`).
4. A model file runner=local cannot read (no permission for this user, a disk's I/O error) was met only once the run
   was made: `permission denied: m.gguf; run ... is recorded as 'failed' ...; finish it with: benchrun-audit resume`,
   which fails the same. It is now said as a missing one is: the runner's line naming the file and the setting, the
   run recorded failed for that reason, no resume advised. And an I/O error was said `i/O error`
   (`core.errors.os_problem` lowered its first letter).
5. `runner.api_key_env=PWD` (or HOME: a folder's path, the system's variable) was refused with a file path's advice,
   `$PWD holds a file's path ...; set PWD to the key itself, the file's contents: export PWD="$(cat PATH)"`. A folder
   is now said as one, and the advice is to name the variable that holds the key (`core.secrets._refuse_path`).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time

import pytest

from benchrun.archive import dirlock
from benchrun.archive.locknote import process
from benchrun.core.errors import EXIT
from benchrun.core.procfs import stat_fields
from benchrun.core.text import host_name
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.auditcli import audit
from tests.helpers.commands import bench_run, call_benchrun, make_run
from tests.helpers.fatdisk import can_mount_fat, fat_disk


def _shrinking_only(fd: int, length: int) -> None:
    """os.ftruncate as fusefat does it: only a file cut shorter."""
    if length >= os.fstat(fd).st_size:
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))
    os.truncate(f"/proc/self/fd/{fd}", length)


def test_a_run_completes_where_the_file_system_only_cuts_files_shorter(tmp_path, monkeypatch):
    monkeypatch.setattr(dirlock.os, "ftruncate", _shrinking_only)
    run_dir = make_run(tmp_path, models=("llama3.2",))
    assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"


@pytest.mark.slow
@pytest.mark.skipif(not can_mount_fat(), reason="a FAT disk is mounted for it (needs root, dosfstools and fusefat)")
def test_a_run_onto_a_fat_disk_completes_and_verifies(tmp_path):
    with fat_disk(tmp_path / "fat") as disk:
        run_dir = make_run(tmp_path, f"outputs={disk}", models=("llama3.2",))
        assert run_dir.parent.parent == disk
        assert audit(tmp_path, "verify", str(run_dir)).stdout.splitlines()[-1] == "intact"


def _no_fork(*args, **kwargs):
    """subprocess's fork as it fails at `ulimit -u` (RLIMIT_NPROC) or a cgroup's pids.max."""
    raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))


def test_a_process_the_system_will_not_start_is_said_as_its_limit_of_processes(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "_fork_exec", _no_fork)
    with FakeOllama(models=["llama3.2"]) as server:
        done = bench_run(tmp_path, server.url, "cache=false")
    run_dir = next((tmp_path / "outputs").glob("*/*"))
    said, where = done.stderr.split("; ", 1)  # then where the run stopped: before its first question, or after
    assert (done.returncode, said) == (EXIT["archive"], (
        "benchrun: error: no process could be started (resource temporarily unavailable): the system's limit of "
        "processes and threads is reached (ulimit -u, a container's or cgroup's pids.max)"))
    assert f"run {json.loads((run_dir / 'run.json').read_text())['run_id']} is recorded as 'failed' " in where


@pytest.mark.parametrize("flag", ["--config-dir", "-cd", "--config-d"])
def test_a_preset_folder_named_like_an_override_is_a_folder(tmp_path, flag):
    (tmp_path / "hydra.verbose=5" / "runner").mkdir(parents=True)
    done = call_benchrun(flag, "hydra.verbose=5", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


def test_a_model_file_that_cannot_be_read_is_said_as_a_missing_one(tmp_path):
    done = call_benchrun("runner=local", "runner.model_path=/proc/self/mem", f"outputs={tmp_path}", cwd=tmp_path)
    said = "model file '/proc/self/mem' cannot be read (I/O error); set runner.model_path to a GGUF file"
    assert (done.returncode, done.stderr) == (EXIT["runner"], f"benchrun: error: {said}\n")
    run = json.loads(next(tmp_path.glob("*/*/run.json")).read_text())
    assert (run["status"], run["reason"]) == ("failed", said)


@pytest.mark.parametrize("variable", ["PWD", "HOME"])
def test_a_variable_holding_a_folder_named_for_the_key_is_said_as_a_folder(tmp_path, monkeypatch, variable):
    monkeypatch.setenv(variable, str(tmp_path))
    done = call_benchrun("runner=openai", f"runner.api_key_env={variable}", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: runner.api_key_env: ${variable} holds a folder's path, not a key (a key is sent as it is, "
        "in an HTTP header); name the variable that holds the key\n"))


def test_a_writer_killed_a_moment_ago_is_not_taken_for_one_writing_elsewhere():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    note = {"pid": child.pid, "host": host_name(), "since": "2026-12-07T05:00:00+00:00", **process(child.pid)}
    assert dirlock.writing_elsewhere(note)
    child.kill()
    while (fields := stat_fields(child.pid)) is not None and fields[0] != "Z":  # ended, not yet collected
        time.sleep(0.01)
    try:
        assert not dirlock.writing_elsewhere(note)
    finally:
        child.wait()
