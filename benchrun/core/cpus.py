"""The CPUs this process may use: its affinity (`taskset`, a Slurm job's CPUs, `docker --cpuset-cpus`), the CPU
quota of its cgroup and every cgroup above it (`docker --cpus`, a Kubernetes CPU limit, a systemd slice's CPUQuota)
and a Slurm job's share of its node, not the machine's count."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Mapping

from benchrun.core.procfs import proc_text

PROC = Path("/proc/self")


def usable_cores(proc: Path = PROC, environ: Mapping[str, str] = os.environ) -> int:
    """How many CPUs this process may keep busy at once: the fewer of its affinity's and its cgroups' quota's
    (llama.cpp's threads spin while they wait for each other: two threads on one CPU's time answer at a fraction of
    one thread's speed)."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(affinity, cpu_quota(proc) or affinity, slurm_cpus(environ) or affinity))


def slurm_cpus(environ: Mapping[str, str]) -> int | None:
    """The CPUs Slurm gave this job's task (its `--cpus-per-task`, else the job's CPUs on this node), which a cluster
    that does not pin jobs to their CPUs (TaskPlugin=task/none) leaves the job to keep to; None outside a job."""
    for name in ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE"):
        if (value := environ.get(name, "").strip()).isascii() and value.isdigit() and int(value) > 0:
            return int(value)
    return None


def cpu_quota(proc: Path = PROC) -> int | None:
    """The CPUs the tightest quota of this process's cgroups and their ancestors gives, rounded up (half a CPU is
    one); None where none is set or none can be read."""
    return min(filter(None, map(_quota, _cpu_cgroups(proc))), default=None)


def _cpu_cgroups(proc: Path) -> list[Path]:
    """The folders of this process's cgroup and of each one above it, in each hierarchy that may hold the cpu
    controller (cgroup v2's one; v1's mounted with `cpu`)."""
    try:
        memberships = proc_text(proc / "cgroup").splitlines()
        mounts = [line.split() for line in proc_text(proc / "mountinfo").splitlines()]
    except OSError:
        return []
    folders = []
    for _, controllers, path in (line.split(":", 2) for line in memberships if line.count(":") >= 2):
        for fields in mounts:
            if _mounts_cpu(fields, controllers):
                folders.extend(_upwards(Path(_unescaped(fields[4])), _unescaped(fields[3]), path))
    return folders


def _mounts_cpu(fields: list[str], controllers: str) -> bool:
    """Whether the mountinfo line `fields` mounts the hierarchy of /proc/self/cgroup's `controllers` (empty: v2)."""
    kind = fields[fields.index("-") + 1:] if "-" in fields else []
    if len(kind) < 3:
        return False
    if not controllers:
        return kind[0] == "cgroup2"
    return kind[0] == "cgroup" and "cpu" in controllers.split(",") and "cpu" in kind[2].split(",")


def _upwards(mount_point: Path, mount_root: str, path: str) -> list[Path]:
    """The folder of cgroup `path` under a hierarchy mounted at `mount_point` from its cgroup `mount_root`, and each
    folder above it up to the mount point (a container's own cgroup namespace mounts its root)."""
    root = mount_root.rstrip("/")
    inside = path[len(root):] if path == root or path.startswith(f"{root}/") else ""
    folder = mount_point / inside.lstrip("/")
    return [folder, *(parent for parent in folder.parents if parent.is_relative_to(mount_point))]


def _unescaped(field: str) -> str:
    """A mountinfo path, whose spaces, tabs and backslashes are written as octal escapes (`\\040`)."""
    return re.sub(r"\\([0-7]{3})", lambda found: chr(int(found[1], 8)), field)


def _quota(folder: Path) -> int | None:
    """The CPUs a cgroup's quota gives (v2's `cpu.max`, v1's `cpu.cfs_quota_us` over `cpu.cfs_period_us`), rounded
    up; None for none (`max`, -1) or none readable."""
    try:
        if (folder / "cpu.max").is_file():
            quota, period = (folder / "cpu.max").read_text().split()
        else:
            quota, period = (folder / "cpu.cfs_quota_us").read_text(), (folder / "cpu.cfs_period_us").read_text()
        quota_us, period_us = int(quota), int(period)
    except (OSError, ValueError):
        return None
    return math.ceil(quota_us / period_us) if quota_us > 0 and period_us > 0 else None
