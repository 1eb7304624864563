"""What a resume or retry checks before it asks: that the model (and the judge model) answers as the run's did, by
its digest and by the build of the engine that runs it (`core.enginebuild`), as the run's end checks them."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from benchrun.archive.reader import Run
from benchrun.archive.sessions import changed_while_asked
from benchrun.compiler.plan import Plan
from benchrun.core.enginebuild import builds
from benchrun.core.errors import ArchiveError
from benchrun.core.layout import RUN
from benchrun.core.recordvalues import Served, answered_as, pin_named, pinned_as
from benchrun.core.text import one_line
from benchrun.execute.runners.base import Runner
from benchrun.execute.session import Judged, judge_model

HOST, JUDGE_HOST = "--host", "--judge-host"
"""The options of `resume` and `retry` that give the servers, named in the advice of a server not reached."""


@asynccontextmanager
async def checked_models(run: Run, plan: Plan, config: dict[str, Any], runner: Runner, force: bool,
                         command: str = "resume", asks: bool = True, served: tuple[Served, Served] | None = None,
                         ) -> AsyncIterator[tuple[dict[str, Any], Judged | None]]:
    """The model's identity and the judge model (None without one), each refused (unless `force`) when its digest is
    not the one `run` used, or the name `served` (the model's, the judge's) says its answers gave it; the refusal
    names `command` (resume, retry) to give --force to. A command that `asks` the model nothing (it only grades
    again) takes the identity the run recorded: its server may be gone."""
    said = served or (None, None)
    asked = asks or not run.info.identity
    identity = await runner.identify() if asked else dict(run.info.identity)
    if asked:
        check_model(run, identity, force, command=command, served=said[0])
    async with judge_model(plan, config, identity, (JUDGE_HOST, HOST)) as judged:
        if judged is not None:
            check_model(run, judged[1], force, judge=True, command=command, served=said[1])
        yield identity, judged


def check_unchanged(run: Run, force: bool, command: str = "resume") -> None:
    """Refuse (unless `force`) to take on the answers of a run that failed as its model or its server's build changed
    while it asked (`sessions.changed_while_asked`): which of them came from which cannot be told, and no asking mends
    that; a resume would finish the run with them, a retry carry them into a new one."""
    if (changed := changed_while_asked(run.info)) is not None and not force:
        would = "finish it with those answers" if command == "resume" else "carry those answers over"
        raise ArchiveError(f"run {run.id} failed as it ended: {changed}; a {command} would {would}: {command} with "
                           "--force to do so anyway (recorded in run.json)", file=str(run.path / RUN))


def check_model(run: Run, identity: dict[str, Any], force: bool, judge: bool = False, command: str = "resume",
                served: Served | None = None) -> None:
    """Refuse (unless `force`) a model (or with `judge` the judge model) whose digest is not the one the run used, or
    that another build of its engine runs (`other_build`), naming `command` to give --force to. The name the run's
    answers gave the model (`served`, read with them) pins it as a digest would (`answered_as`)."""
    used = answered_as(run.info.judge.get("identity", {}) if judge else run.info.identity, served or Served(),
                       identity.get("answers_as"))
    before, after = pinned_as(used), pinned_as(identity)
    which = f"judge model {used.get('name', '')}".rstrip() if judge else f"model {run.info.model}"
    again = f"{command} with --force to continue with it anyway (recorded in run.json)"
    if before and after != before and not force:
        served = pin_named(after) if after else "without a digest"
        raise ArchiveError(f"{which} is now {served}, the run used {pin_named(before)}; {again}")
    if (other := other_build(used, identity)) is not None and not force:
        raise ArchiveError(f"{which} is now run by {other}; answers of two builds of its engine cannot "
                           f"be told apart: {again}")


def other_build(used: dict[str, Any], identity: dict[str, Any]) -> str | None:
    """What `identity` (the model as asked now) says of its engine's build that `used` (as the run recorded it) does
    not: a server upgraded since (Ollama's version), as the run's end would refuse it; None where they agree, or
    either names none."""
    recorded, now = builds(used), builds(identity)
    if not recorded or not now or set(now) <= set(recorded):
        return None
    return f"{one_line(', '.join(now), 160)}, the run's by {one_line(', '.join(recorded), 160)} (upgraded?)"


