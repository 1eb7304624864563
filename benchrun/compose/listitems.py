"""An override into an item of a list that holds no such item (`runner.options.stop.5=x` of two stops,
`runner.options.stop.x=1`), said naming the list and its items: OmegaConf said `Error merging override ...` with no
reason (an IndexError), or `invalid literal for int()` (a ValueError)."""

from __future__ import annotations

import traceback

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from benchrun.core.errors import ConfigError

APPLYING = "_apply_overrides_to_config"
"""The function of Hydra's that sets each override's value in the composed config."""


def list_item_said(err: BaseException) -> str | None:
    """The line for an override Hydra failed to set into a list's item the list does not hold; None for any other
    error."""
    frame = next((frame for frame, _ in traceback.walk_tb(err.__traceback__)
                  if frame.f_code.co_name == APPLYING and "override" in frame.f_locals), None)
    if frame is None or not isinstance(cfg := frame.f_locals.get("cfg"), DictConfig):
        return None
    key = str(frame.f_locals["override"].key_or_group)
    parts = key.split(".")
    for depth in range(1, len(parts)):
        try:
            node = OmegaConf.select(cfg, ".".join(parts[:depth]), throw_on_missing=False)
        except OmegaConfBaseException:
            return None
        if isinstance(node, ListConfig):
            return _no_item(key, ".".join(parts[:depth]), parts[depth], len(node))
    return None


def _no_item(key: str, listed: str, item: str, size: int) -> str | None:
    """The refusal of `item` of the list `listed` of `size` items, when it is none of them."""
    if (held := holds_no_item(listed, item, size)) is None:
        return None
    return str(ConfigError(f"{held}: give the whole list ({listed}=[...])", file="config", key=key))


def holds_no_item(listed: str, item: str, size: int) -> str | None:
    """That the list `listed` of `size` items holds no `item` (its index, as given), when it is none of them."""
    if item.isdigit() and int(item) < size:
        return None
    items = f"{size} item{'s' * (size != 1)} ({'0' if size == 1 else f'0 to {size - 1}'})" if size else "no items"
    return f"{listed} is a list of {items}, which holds no item {item!r}"
