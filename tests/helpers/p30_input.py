"""A dry run of a small benchmark, and how a refusal ends, for the thirtieth pass of what goes in."""

from __future__ import annotations

from benchrun.core.errors import EXIT

TASK = "- name: t\n  template: say {a}\n  values: {a: [1]}\n  reference: ['1']\n"
"""A list-style tasks.yml of one task of one sample."""


def ended(done) -> tuple[int, str, str]:
    """A command's exit code, stdout and stderr."""
    return done.returncode, done.stdout, done.stderr


def refusal(said: str) -> tuple[int, str, str]:
    """How a run refused in one line ends: exit 2, nothing printed but `said`."""
    return EXIT["usage"], "", f"benchrun: error: {said}\n"
