"""For the thirty-seventh pass of what goes in."""

from __future__ import annotations

from hydra.core.hydra_config import HydraConfig


def unset_hydra(monkeypatch) -> None:
    """Hydra's settings not set, as in a process that has run no job yet: an earlier in-process run left its own,
    which `${hydra:...}` would read."""
    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)
