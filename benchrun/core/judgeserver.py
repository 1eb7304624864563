"""Where a judge naming no server of its own is asked: at the model's servers, when it is asked with the model's
runner type (README "Judges")."""

from __future__ import annotations

from typing import Any

from benchrun.core.settings import RUNNERS


def models_server(cfg: dict[str, Any]) -> str | None:
    """The server key (`host`, `base_url`) of the model's that the judge asks at, naming no server of its own and
    asked with the model's runner type; None when it asks elsewhere."""
    judge = cfg["judge"]
    server = RUNNERS[judge["runner"]].server_key
    if server is None or judge.get(server) is not None or judge["runner"] != cfg["runner"]["type"]:
        return None
    return server
