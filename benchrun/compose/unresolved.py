"""Which key of the job's config holds the interpolation one of Hydra's own keys could not resolve: the run's folder
is named after runner.model and task.name, so `${nope.x}` written in a preset's runner.model was said as
`hydra.run.dir: cannot resolve: ...`, naming neither that key nor where it was written."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from benchrun.core.keys import key_path, leaves


def holding_key(err: OmegaConfBaseException, key: str) -> str | None:
    """The first key outside `hydra` whose value cannot be resolved for the reason `err` gives of Hydra's `key` (one
    it reads, as hydra.run.dir reads runner.model); None if none is."""
    parent = getattr(err, "parent_node", None)
    if not isinstance(parent, DictConfig):
        return None
    up = "." * (key.count(".") + 1)  # from `key`'s parent up to the top of the config, as OmegaConf selects
    try:
        top = OmegaConf.select(parent, up)
    except OmegaConfBaseException:  # Hydra's settings apart from the job's config (as a run reads them)
        return None
    if not isinstance(top, DictConfig):
        return None
    data = OmegaConf.to_container(top, resolve=False)
    said = _first_line(err)
    for parts, _ in leaves({name: value for name, value in data.items() if name != "hydra"}):
        try:
            OmegaConf.select(top, key_path("", parts))
        except (OmegaConfBaseException, RecursionError) as raised:
            if _first_line(raised) == said:
                return key_path("", parts)
    return None


def _first_line(err: Exception) -> str:
    said = str(getattr(err, "msg", None) or err).strip()
    return said.splitlines()[0] if said else type(err).__name__
