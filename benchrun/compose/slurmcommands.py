"""Slurm's commands as benchrun runs them (squeue, scontrol, scancel): with only the options benchrun gives. Each
also reads options from variables of its own (`SQUEUE_STATES=RUNNING`, `SCANCEL_STATE=PENDING`, a user's taste in
a shell's profile): a queue listed without the sweep's pending jobs had them taken for lost and cancelled, and an
scancel limited to one state left the others queued after the sweep said they were cancelled."""

from __future__ import annotations

import os
import subprocess

OWN_OPTIONS = ("SQUEUE_", "SCONTROL_", "SCANCEL_")
"""The prefixes of the variables through which squeue, scontrol and scancel take options."""


def slurm(*args: str) -> subprocess.CompletedProcess[str] | None:
    """Slurm command `args` run with no option of its own from the environment, its output as text; None when it
    cannot be run here or does not end in 60 s (a controller that hangs)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(OWN_OPTIONS)}
    try:
        return subprocess.run(list(args), capture_output=True, text=True, timeout=60, check=False, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
