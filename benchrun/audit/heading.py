"""What `show RUN` prints first: where, what and who of a run, one line each."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table
from rich.text import Text

from benchrun.archive.answerunit import answer_unit
from benchrun.archive.books import counts_of
from benchrun.archive.clockstep import clock_said
from benchrun.archive.reader import Run, load_run
from benchrun.archive.sessions import JUDGED_AGAIN, RESUMED, limits_set, mixed_judges, mixed_models
from benchrun.archive.writerless import stopped
from benchrun.audit.judged import judge_identity
from benchrun.audit.provenance import server_version
from benchrun.console.visible import shown_name
from benchrun.core.errors import BenchrunError
from benchrun.core.layout import UNFINISHED
from benchrun.core.recordvalues import model_digest, short_digest
from benchrun.core.text import counted

FORCED_FOR = (("parent_problems", "findings against its parent"), ("problems", "records that did not verify"))
"""The findings a forced retry's or resume's history entry says it went past, as `shards forced` counts them."""


def header(run: Run) -> Table:
    """Where, what and who: status, overrides, manifest id, model identity (and, when more than one model answered,
    which answered how many), runner config, counts."""
    info, identity = run.info, run.info.identity
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    rows = {
        "run": f"{info.run_id}  {run.path}",
        "benchmark": info.benchmark,
        "status": status(run),
        "started": f"{info.started_at}  ended {info.ended_at or '-'}{clock_said(info.history)}",
        "overrides": " ".join(info.overrides) or "-",
        "manifest id": info.manifest_id or "- (the run failed before it compiled)",
        "model": f"{info.model}  name {identity.get('name', '-')}  digest {run.model_digest or '-'}  "
                 f"server {server_version(identity)}{_context(identity)}",
        "answered by": mixed_models(run),
        "details": _pairs(identity.get("details") or {}),
        "judge": judge_identity(info.judge),
        "graded by": mixed_judges(run),
        "runner": _pairs(info.runner),
        "limits set": limits_set(info.history),
        "counts": counts_of(run).text(answer_unit(run)),
    }
    rows.update(parts(info, answer_unit(run)))
    for key, value in rows.items():
        if value is not None:
            grid.add_row(key, Text(shown_name(value)))
    return grid


def status(run: Run) -> str:
    """The run's status and `reason`."""
    return with_reason(run.info.status, reason(run))


def with_reason(status: str, why: str | None) -> str:
    """A status and why, as `show` and the report say it (`running: no live process holds run.lock: ...`)."""
    return status + (f": {why}" if why else "")


def reason(run: Run) -> str | None:
    """Why the run ended as it did; of a `running` run no live process writes, why not (`archive.writerless.stopped`):
    run.json, written as it began, says `running` of a run whose writer was killed."""
    return stopped(run) or run.info.reason


def retried(info: Any, unit: str) -> str:
    """What a retry carried over from its parent (and judged again of it), and what it asked again in `unit`s
    (`answer_unit`'s): `5 answers carried over, 1 sample asked again`."""
    judged = next((len(entry[JUDGED_AGAIN]) for entry in info.history if JUDGED_AGAIN in entry), 0)
    asked = counted(info.parent.asked, unit.removesuffix("s"), unit)
    return (counted(info.parent.carried, "answer") + " carried over" + (f" ({judged} judged again)" if judged else "")
            + f", {asked} asked again")


def parts(info: Any, unit: str = "samples") -> dict[str, str]:
    """Where a run's answers came from besides its one server, as `show` and the report say it: a retry's parent (what
    it asked again counted in `unit`, `answer_unit`'s), the servers of a run over a list of them, the part of a shard
    run, the shards of a merged run."""
    rows = {}
    if parent := info.parent:
        rows["retry of"] = (f"{parent.run_id}  {_there(parent.path, parent.run_id)}  ({retried(info, unit)})")
    if hosts := info.identity.get("hosts"):
        rows["servers"] = "  ".join(f"{h['host']} {short_digest(d) if (d := model_digest(h)) else '-'} "
                                    f"{server_version(h)}{_context(h, ' ')}" for h in hosts)
    if info.shard:
        rows["shard"] = f"{info.shard} (samples at manifest positions {info.shard.index - 1} mod {info.shard.count})"
    if info.merged:
        rows["merge of"] = "  ".join(f"{s.shard} {s.run_id} {_there(s.path, s.run_id)}"
                                     for s in info.merged.shards) + _missing(info)
        rows["shards ran on"] = _machines(info.merged.shards)
        if asked := _settings(info.merged.shards):
            rows["shards asked with"] = asked
        if said := _limits_set(info.merged.shards):
            rows["shards' limits set"] = said
        if forced := _forced(info.merged.shards):
            rows["shards forced"] = forced
    return rows


def _missing(info: Any) -> str:
    """The shards a `--partial` merge did not have, and whether a resume has asked their answers since (`; missing 2/2
    (--partial; its 9 answers asked since by resume)`, or `a resume has not finished asking its 9 answers` while the
    run is unfinished); empty for a merge of every shard."""
    if not info.merged.missing:
        return ""
    since = ""
    if any(RESUMED in entry for entry in info.history):
        missing = info.counts.samples - sum(s.responses for s in info.merged.shards)
        since = (f"; its {counted(missing, 'answer')} asked since by resume" if info.status not in UNFINISHED else
                 f"; a resume has not finished asking its {counted(missing, 'answer')}")
    return f"; missing {', '.join(info.merged.missing)} (--partial{since})"


def _limits_set(shards: Any) -> str | None:
    """The limits each shard's own retry or resumes asked its rest with (`2/2 runner.timeout_s=7 by the retry`): its
    answers before them were asked with others than `shards asked with` says; None when none set any."""
    said = [f"{s.shard} {text}" for s in shards if (text := limits_set(s.history or ()))]
    return "  ".join(said) or None


def _forced(shards: Any) -> str | None:
    """What a shard's own resumes or retry did by `--force` (`2/2 retry --force (changed sources: custom_scorer.py)`),
    which the merged run's history, made fresh, does not say; None when none was forced."""
    said = [f"{s.shard} {'resume' if RESUMED in entry else 'retry'} --force" + _past(entry)
            for s in shards for entry in s.history or () if entry.get("forced") is True]
    return "; ".join(said) or None


def _past(entry: dict[str, Any]) -> str:
    """What a forced entry went past: the sources that changed by name, the findings counted."""
    changed = entry.get("changed_sources") or []
    found = [f"{len(entry[key])} {why}" for key, why in FORCED_FOR if isinstance(entry.get(key), list) and entry[key]]
    return "".join(f" ({text})" for text in [*([f"changed sources: {', '.join(map(str, changed))}"] if changed else []),
                                             *found])


def _settings(shards: Any) -> str | None:
    """The runner settings the shards asked with, and their judge's (`judge.KEY`), where they differ (`1/2 retries=2
    2/2 retries=0`): the merged run's are the first shard's; None when they agree, or for a merge that did not keep
    them (an older benchrun's)."""
    kept = {s.shard: {**s.runner, **{f"judge.{k}": v for k, v in (s.judge_runner or {}).items()}}
            for s in shards if isinstance(s.runner, dict)}
    keys = list(dict.fromkeys(key for settings in kept.values() for key in settings))
    differ = [key for key in keys if len({json.dumps(s.get(key), sort_keys=True) for s in kept.values()}) > 1]
    if not differ:
        return None
    return "  ".join(f"{shard} " + " ".join(f"{key}={_value(settings.get(key, '-'))}" for key in differ)
                     for shard, settings in kept.items())


def _machines(shards: Any) -> str | None:
    """Each shard's host and server version, with every version the shards' environments differ in (`2/2 node2
    server 0.6.1 ollama 0.0.1`); None for a merge that did not keep them (an older benchrun's)."""
    kept = [(s, _versions(s.environment)) for s in shards if s.environment is not None]
    names = sorted({name for _, versions in kept for name in versions})
    differ = [name for name in names if len({versions.get(name) for _, versions in kept}) > 1]
    return "  ".join(f"{s.shard} {s.environment.get('hostname', '-')} server "
                     f"{server_version(s.identity or {})}"
                     + "".join(f" {name} {versions.get(name, '-')}" for name in differ) for s, versions in kept) or None


def _versions(environment: dict[str, Any]) -> dict[str, str]:
    packages = environment.get("packages") or {}
    return {name: str(version) for name, version in {"benchrun": environment.get("benchrun"),
                                                     "python": environment.get("python"), **packages}.items()}


def _there(path: str, run_id: str) -> str:
    """A run directory a derived run recorded (its parent's, a shard's), and when it holds that run no more (moved,
    deleted, replaced), that said: the path is what it was, not where the run is."""
    try:
        found = load_run(path).id
    except (BenchrunError, OSError):
        found = None
    return path if found == run_id else f"{path} (not there now: {f'run {found}' if found else 'no run'} in it)"


def _pairs(data: dict[str, Any]) -> str:
    return "  ".join(f"{k}={_value(v)}" for k, v in data.items()) or "-"


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _context(identity: dict[str, Any], space: str = "  ") -> str:
    """`  context N`: the context the server loaded the model with, where it said (Ollama's /api/ps)."""
    return f"{space}context {identity['context_length']}" if identity.get("context_length") is not None else ""
