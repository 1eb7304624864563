"""What a sweep job is called: the values of the overrides that differ between the sweep's jobs.

`python -m benchrun -m runner.model=llama3.2,gemma3 runner.options.temperature=0,0.7` gives four jobs labelled
`llama3.2 temperature=0`, ..., `gemma3 temperature=0.7`, in directories `<n>_gemma3_temperature-0.7`; the label
names the job's column in the sweep table, the report and exports, and run.json keeps the varied settings."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from benchrun.core.layout import MULTIRUN_FILE

MAX_SLUG = 64
"""The longest name a directory's name takes from a model or a benchmark: a run directory's name (the time, the
benchmark's, the model's) stays well within the 255 bytes a file system allows."""
BARE_KEYS = ("runner.model", "runner.model_path", "model", "runner", "task", "task.path")
"""Keys whose value alone says what it is (`gemma3`, not `model=gemma3`)."""
JUDGE = "judge"
"""The judge's settings' key (`judge.model`, `judge.options.temperature`)."""
WHOLE_KEYS = ("shard", "runner.model", "judge.model")
"""Keys whose value has a slash but is no path (`shard=2/8`, a model's name: `hf.co/bartowski/x:Q4`, whose last part
`x:Q4` was another uploader's model's too, so that a sweep of the two was refused): labelled whole."""


def swept_keys(sweep_dir: str | Path) -> frozenset[str]:
    """The keys a Hydra sweep varies (`runner.model=a,b`, `x=range(3)`, hydra.sweeper.params), from its
    multirun.yaml; none when there is no such file (a sweeper that does not write one)."""
    return _swept_keys(str(Path(sweep_dir).absolute()))


@cache
def _swept_keys(sweep_dir: str) -> frozenset[str]:
    path = Path(sweep_dir) / MULTIRUN_FILE
    if not path.is_file():
        return frozenset()
    hydra_cfg = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("hydra") or {}
    params = (hydra_cfg.get("sweeper") or {}).get("params") or {}
    lines = [*(f"{k}={v}" for k, v in params.items()), *((hydra_cfg.get("overrides") or {}).get("task") or [])]
    return frozenset(o.key_or_group for o in _parse(lines) if o.is_sweep_override())


def varied(overrides: Iterable[str], swept: frozenset[str]) -> dict[str, Any]:
    """A job's own values of the swept keys, in override order: dotted key -> value."""
    return {o.key_or_group: o.value() for o in _parse(overrides) if o.key_or_group in swept}


def label(settings: Mapping[str, Any], model: Any, benchmark: str | None = None) -> str:
    """`gemma3 temperature=0.7`: the varied values, bare for the model, runner, model preset and benchmark, else
    `last key=value` (`judge.last key=value` for the judge's; a path by its file name, a shard or a model's name whole:
    `shard=2/8`); the model when nothing varied. A preset (`model=`, `task=`) is bare only when it names what its job
    asked, the `model` or `benchmark`: `-m model=gemma3,llama3.2 runner.model=mistral` asked mistral in both jobs,
    labelled `gemma3` and `llama3.2`, and `-m task=listbench,folderbench task.path=b` asked b in both, labelled
    `listbench` and `folderbench`."""
    asked = {"model": model, "task": benchmark}
    named = Counter(_name(key) for key in settings)
    parts = [_text(value, key in WHOLE_KEYS) if key in BARE_KEYS and asked.get(key) in (None, value)
             else f"{_name(key) if named[_name(key)] == 1 else key}={_text(value, key in WHOLE_KEYS)}"
             for key, value in settings.items()]
    return " ".join(parts) or _text(model, True)


def _name(key: str) -> str:
    """What a label calls a varied key: its last part (`temperature`), the judge's said to be the judge's
    (`judge.model`, `judge.temperature`: `model=qwen2.5` read as the model under test, and `temperature=0.7` beside the
    model's could not be told from it); `label` names whole two varied keys that would be called alike."""
    last = key.rpartition(".")[2]
    return f"{JUDGE}.{last}" if key.startswith(f"{JUDGE}.") else last


def slug(value: Any) -> str:
    """A file-name-safe form of a name, part of a directory's name (no `/`, at most MAX_SLUG characters):
    `hf.co/x:7b` -> `hf.co-x-7b`."""
    return bounded(re.sub(r"[^A-Za-z0-9._-]+", "-", str(value)).strip("-") or "model", MAX_SLUG)


def dir_label(text: str) -> str:
    """A label as the last part of a job directory's name: `gemma3 temperature=0.7` -> `gemma3_temperature-0.7`."""
    return bounded("_".join(slug(part) for part in text.split(" ")) or "job", 2 * MAX_SLUG)


def bounded(text: str, limit: int) -> str:
    """`text`, or when longer than `limit` its start and a digest of the whole (so two long names stay two)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit - 13]}~{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def job_dir_label(sweep_dir: str, overrides: Sequence[str], model: Any, benchmark: str | None = None) -> str:
    """The `${sweep_label:...}` interpolation of conf/config.yaml: a Hydra sweep job's directory label."""
    return dir_label(label(varied(overrides, swept_keys(sweep_dir)), model, benchmark))


def _text(value: Any, whole: bool = False) -> str:
    if isinstance(value, str):
        return Path(value).name or value if "/" in value and not whole else value
    return json.dumps(value, separators=(",", ":"), default=_plain)


def _plain(value: Any) -> Any:
    """An OmegaConf list or mapping in a label as a plain one: `-m runner.options.temperature=0 runner.model=[a,b]`
    labelled its job by the model list, which was `cannot resolve: TypeError ... ListConfig is not JSON serializable`,
    said of hydra.sweep.subdir, before the job could say what is wrong (`sweepsize.one_model_a_job`)."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return list(value)
    raise TypeError(f"{type(value).__name__} in a label")


def _parse(lines: Iterable[str]) -> list[Any]:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_overrides(list(lines))
