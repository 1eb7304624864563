"""A FAT disk, whose names are found whatever their case (`Run.json` is run.json): an image made by mkfs.vfat and
mounted with fusefat (needs root, `apt-get install dosfstools fusefat`), for the tests of names in other case."""

from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def can_mount_fat() -> bool:
    """Whether this process can make and mount a FAT disk (root, mkfs.vfat, fusefat, /dev/fuse)."""
    return (os.geteuid() == 0 and Path("/dev/fuse").exists()
            and all(shutil.which(tool) for tool in ("mkfs.vfat", "fusefat", "umount")))


@contextmanager
def fat_disk(path: Path, size_mb: int = 16) -> Iterator[Path]:
    """A FAT disk of `size_mb` mounted (read-write) at `path`, its image beside it."""
    image = path.with_name(f"{path.name}.img")
    with open(image, "wb") as handle:
        handle.truncate(size_mb * 2**20)
    subprocess.run(["mkfs.vfat", str(image)], check=True, capture_output=True)
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["fusefat", "-o", "rw+", str(image), str(path)], check=True, capture_output=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
