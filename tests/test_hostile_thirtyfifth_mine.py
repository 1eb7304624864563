"""The thirty-fifth hostile pass, the lead's side: the process's surroundings.

Fixed:
1. A run onto a FAT disk mounted by fusefat (a USB stick's file system, shared as such) was refused before it asked
   anything: `operation not permitted writing .../run.lock`. Cutting the lock's note to its length, where that
   length is already the file's, is a truncation fusefat refuses (it cannot grow or keep a file's size that way);
   the note is now cut only where the file is longer.
"""

from __future__ import annotations

import errno
import os

import pytest

from benchrun.archive import dirlock
from tests.helpers.auditcli import audit
from tests.helpers.commands import make_run
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
