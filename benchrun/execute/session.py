"""A run's session of asking: every query asked, graded and recorded, and the run finished with its status; and
what ends a run early, recorded before it is reported. `python -m benchrun`, `resume` and `retry` all ask this way."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Callable, Iterator, Mapping, Sequence

from benchrun.archive.sessions import CHANGED
from benchrun.archive.writer import RunWriter
from benchrun.compiler.plan import Plan
from benchrun.console import output
from benchrun.core.advice import audit_command
from benchrun.core.errors import (
    ArchiveError,
    BenchrunError,
    ConfigError,
    FailFast,
    RunInterrupted,
    RunnerError,
    ServerLost,
    os_error_line,
    refused_by_system,
)
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.layout import LOG, UNFINISHED, Status
from benchrun.core.manifest import Query
from benchrun.core.records import ErrorInfo, JudgementRecord, ResponseRecord
from benchrun.core.recordvalues import (
    SAID,
    model_digest,
    pin_shown,
    pinned_as,
    said_of_weights,
    same_model_name,
    short_digest,
    weights_said,
)
from benchrun.core.settings import RUNNERS
from benchrun.execute.cache import CacheFailed, RunCache, Store, enabled
from benchrun.execute.cachepin import model_pin
from benchrun.execute.executor import Executor
from benchrun.execute.grading import Grader, Grading
from benchrun.execute.hosts import Lost, one_server_among, warned
from benchrun.execute.judging import Judge, Key
from benchrun.execute.runners.base import Runner, ServerChanged
from benchrun.execute.runners.registry import make_judge_runner


@contextmanager
def recording(writer: RunWriter) -> Iterator[None]:
    """Whatever ends a run is in its run.json before it is reported: an error as failed, a lost server or a signal
    as interrupted (with the command that finishes it). The directory's lock is let go last."""
    try:
        yield
    except ServerLost as err:
        writer.finish("interrupted", str(err))
        raise type(err)(f"{err}; {resume_hint(writer, err.when)}") from None
    except FailFast as err:
        writer.finish("failed", str(err))
        raise FailFast(f"{err}; {resume_hint(writer, 'once the setup is mended', err.longer)}") from None
    except CacheFailed as err:
        writer.fail(str(err))
        raise CacheFailed(f"{err}; {resume_hint(writer, '(a resume asks without the cache)')}") from None
    except BenchrunError as err:
        writer.fail(str(err))
        raise
    except (KeyboardInterrupt, asyncio.CancelledError) as err:  # a signal (inside the event loop, a cancellation)
        signal_name = INTERRUPTS.signal_name() or str(err) or "a signal"
        if not writer.finished:
            writer.finish("interrupted", f"interrupted by {signal_name}")
        raise RunInterrupted(f"interrupted by {signal_name}: {resume_hint(writer)}") from None
    except Exception as err:
        writer.fail(f"benchrun failed: {ErrorInfo.of(err)}")
        if refused_by_system(err):  # the system's (too many open files, out of memory, no thread), unnamed nearer
            raise ArchiveError(f"{os_error_line(err)}; {resume_hint(writer)}") from None
        raise
    finally:
        writer.release()


def resume_hint(writer: RunWriter, when: str = "", longer: tuple[str, str] | None = None) -> str:
    """What the run directory now says of the run, and the command that finishes it (none for a run sealed as
    completed before what ended it came: a signal as its seal was written); with `longer` (FailFast's), the one that
    finishes it giving a limit more (a server that is only slow more time)."""
    info, where = writer.info, writer.dir.absolute()
    if info.manifest_id is None:
        return f"nothing was asked; run {info.run_id} is recorded as '{info.status}' in {where}; start it again"
    counts, ungraded = info.counts, writer.ungraded
    graded = f" ({ungraded} not graded yet)" if ungraded else ""
    said = f"run {info.run_id} is recorded as '{info.status}' with {counts.responses} of {counts.samples} samples"
    if info.status not in UNFINISHED:
        return f"{said} in {where}, and sealed: nothing is left to finish"
    slow = f", or, if {longer[0]}, with: {audit_command('resume', where, '--set', longer[1])}" if longer else ""
    finish = f"finish it{' ' + when if when else ''} with: {audit_command('resume', where)}"
    return f"{said}{graded} in {where}; {finish}{slow}"


async def execute(plan: Plan, runner: Runner, writer: RunWriter, queries: Sequence[Query],
                  cache: RunCache | None = None, judge: Judge | None = None,
                  regrade: Sequence[ResponseRecord] = ()) -> Status:
    """Ask `queries` (samples' repeats) with an identified runner (answers from `cache` where it has them), record
    each, grade it (with `judge` for a benchmark with judges), and finish the run with its status; the answers
    recorded already in `regrade` are graded first."""
    samples = {sample.id: sample for sample in plan.manifest.samples} if regrade else {}
    with output.progress(len(queries)) as advance:
        async with grader_for(plan, writer, judge) as grader:
            await Executor(plan.manifest, runner, grader, _Recorder(writer, advance), cache).run(
                queries, [(samples[response.id], response) for response in regrade])
    await _as_loaded(runner if queries else None, writer, judge)
    await same_models_to_the_end(runner if queries else None, writer, judge, cache)
    counts = writer.counts
    return writer.finish("completed_with_errors" if counts.request_errors or counts.scorer_errors
                         else "completed").status


async def _as_loaded(runner: Runner | None, writer: RunWriter, judge: Judge | None) -> None:
    """Record what the servers said of the model, and of the judge model, as loaded once they answered
    (`Runner.loaded`: Ollama's context_length), where they said more than the identity holds."""
    if runner is not None and (loaded := await runner.loaded(writer.info.identity)) != writer.info.identity:
        writer.identified(loaded, writer.info.runner)
    judged = writer.info.judge
    if judge is not None and judge.runner is not None and judged and (
            loaded := await judge.runner.loaded(judged["identity"])) != judged["identity"]:
        writer.judged_by(loaded, judged["runner"], judged.get("allow_self", False))


async def same_models_to_the_end(runner: Runner | None, writer: RunWriter, judge: Judge | None,
                                 cache: RunCache | None = None) -> None:
    """RunnerError (the run recorded `failed`, its answers and grades kept) when a server now serves the model, or
    the judge model, by another digest than the run was identified with: re-pulled mid-run, some answers (or grades)
    came from each and which cannot be told, so those the run kept in the response cache are deleted there. A
    server that cannot say (it went away) says nothing; the model of a session that asked it nothing (`runner` None:
    a retry or resume that only grades again) is not asked. run.json's history says so (`sessions.CHANGED`)."""
    try:
        if runner is not None:
            await same_to_the_end(runner, pinned_as(writer.info.identity), f"model {writer.info.model}", "answers",
                                  cache)
        if judge is not None and judge.runner is not None and writer.info.judge:
            await same_to_the_end(judge.runner, pinned_as(writer.info.judge["identity"]),
                                  f"the judge model {judge.runner.config.model}", "grades", judge.cache)
    except RunnerError as err:
        writer.note({CHANGED: str(err)})
        raise


async def same_to_the_end(runner: Runner, before: str | None, model: str, given: str, cache: RunCache | None,
                          asking: str = "the run", again: str = "run it again") -> None:
    """RunnerError when a server of `runner` now serves `model` by another digest than `before` (a `pinned_as`: or
    says other weights are behind its name), or is another build of its engine (`ServerChanged`), the answers
    `asking` (the run, a rescore) kept in `cache` forgotten; `again` is the advice."""
    try:
        now = await runner.digests_now()
    except ServerChanged as err:
        raise RunnerError(f"{err}: {again}{_forgotten(cache)}") from None
    except BenchrunError:
        return
    was = model_digest({"digest": before})  # a GGUF's `sha256:` as a server's digest is read
    changed = [(url, digest) for url, digest in now.items() if before and model_digest({"digest": digest}) != was]
    if changed:
        left = _forgotten(cache)
        url, digest = changed[0]
        served = pin_shown(model_digest({"digest": digest})) if digest else "no digest"
        how = ("the server restarted on other weights?" if before.startswith(SAID) else
               "the file written over?" if before.startswith("sha256:") else "pulled again?")
        raise RunnerError(f"{model} changed on {url} while {asking} asked: {pin_shown(before)} when it began, "
                          f"{served} as it ended ({how}); its {given} may come from either model and cannot be told "
                          f"apart: {again}{left}")


def _forgotten(cache: RunCache | None) -> str:
    """Delete the answers a run kept in `cache` (`RunCache.forget`); where the cache failed to, a note saying so and
    how to delete them, for the run's own line (its model changed) still to say why it ended."""
    try:
        if cache is not None:
            cache.forget()
    except CacheFailed as err:
        return (f"; the answers it kept in the response cache could not be deleted ({err}): delete them with "
                "benchrun-audit cache --clear")
    return ""


def grader_for(plan: Plan, writer: RunWriter, judge: Judge | None = None) -> Grader:
    """The run's grader: its scorers in a process of their own, printing into the run's log file, and its judge."""
    return Grader(plan.manifest, plan.scorers, writer.dir / LOG, plan.scorer_timeout_s, judge)


Judged = tuple[Runner, dict[str, Any]]
"""The judge model's runner, and its identity."""


@asynccontextmanager
async def judge_model(plan: Plan, cfg: dict[str, Any], identity: dict[str, Any],
                      flags: tuple[str, str] | None = None) -> AsyncIterator[Judged | None]:
    """The judge model of a benchmark with judges (None without): identified, refused when it is the model under
    test (`identity`) unless judge.allow_self, closed after; its server and the model's given by `flags`, if named."""
    if plan.manifest.judge is None:
        yield None
        return
    runner = make_judge_runner(cfg, flags)
    try:
        try:
            judge_identity = await runner.identify()
        except BenchrunError as err:
            err.args = (f"the judge model: {err}{_not_at_the_models(cfg)}",)
            raise err from None
        await refuse_self(cfg, identity, judge_identity, runner)
        yield runner, judge_identity
    finally:
        await runner.aclose()


def _not_at_the_models(cfg: dict[str, Any]) -> str:
    """Why a judge naming no server of its own was not asked at the model's (its runner is another type), as a note to
    a refusal at its default server: the model's server is not where the judge looked."""
    judge, model = cfg["judge"]["runner"], cfg["runner"]["type"]
    server, models = RUNNERS[judge].server_key, RUNNERS[model].server_key
    if judge == model or server is None or models is None or cfg["judge"].get(server) is not None:
        return ""
    return (f" (the judge is asked with judge.runner={judge}, at its default server: a judge asks the model's server "
            f"only with the model's runner, {model}; set judge.runner={model} to ask it there)")


async def refuse_self(cfg: dict[str, Any], identity: dict[str, Any], judge_identity: dict[str, Any],
                      judge: Runner) -> None:
    """Refuse a judge that is the model under test (same digest, or the same model of the same server), unless
    judge.allow_self: a model grading its own answers favours them."""
    if not cfg["judge"]["allow_self"] and await same_model(identity, judge_identity, cfg["runner"],
                                                           judge.public_config()):
        raise ConfigError(f"the judge {judge.config.model} is the model under test ({_digest_of(identity)}): a "
                          "model grading its own answers favours them; pick another judge.model, or set "
                          "judge.allow_self=true (recorded)", file="config", key="judge.model")


def make_judge(plan: Plan, judged: Judged | None, cfg: dict[str, Any], writer: RunWriter, store: Store | None,
               archived: Mapping[Key, JudgementRecord] | None = None,
               carried: Mapping[Key, JudgementRecord] | None = None) -> Judge | None:
    """The run's judge, its model recorded beside the model's (calls in `archived`, and a retry's parent's in
    `carried`, read again, not asked; those `carried` written)."""
    if judged is None:
        return None
    runner, identity = judged
    writer.judged_by(identity, runner.public_config(), cfg["judge"]["allow_self"])
    return Judge(plan.manifest, runner, cache_of(store, runner, identity, writer, cfg.get("cache")), archived,
                 lost_to(writer), fail_fast=True, carried=carried)


def _digest_of(identity: dict[str, Any]) -> str:
    digest = model_digest(identity)
    if digest:
        return f"digest {short_digest(digest)}"
    return said_of_weights(identity) if weights_said(identity) else "the same model on the same server"


async def same_model(model: dict[str, Any], judge: dict[str, Any], model_cfg: dict[str, Any],
                     judge_cfg: dict[str, Any]) -> bool:
    """Whether the judge is the model under test: the same digest, or (no digest to tell) the same model (its name
    but for `:latest`) of a server they share, under any of its names (`localhost` and `127.0.0.1`; a list's), and
    through either of its APIs (Ollama's own, and its OpenAI-compatible /v1, which gives no digest), or the name the
    probe's answer gave it (`answers_as`: a gateway serving one model under two names); or, without digests, the same
    weights as their servers say (`weights_said`: one model's loaded under two names)."""
    digests = model_digest(model), model_digest(judge)
    if None not in digests:
        return digests[0] == digests[1]
    if (weights := weights_said(model)) is not None and weights == weights_said(judge):
        return True
    if not any(same_model_name(one, other) for one in _names(model_cfg, model) for other in _names(judge_cfg, judge)):
        return False
    where, judged = (RUNNERS[cfg["type"]].server_key for cfg in (model_cfg, judge_cfg))
    if where is None or judged is None:  # the embedded model: its own, or none of a server
        return model_cfg["type"] == judge_cfg["type"]
    return await one_server_among(_listed(model_cfg[where]), _listed(judge_cfg[judged]),
                                  paths=model_cfg["type"] == judge_cfg["type"])


def _names(cfg: dict[str, Any], identity: dict[str, Any]) -> list[str]:
    """The names a model answers under: the one asked, and the one its answers give where that is another."""
    return [cfg["model"], *([identity["answers_as"]] if identity.get("answers_as") else [])]


def _listed(urls: str | list[str]) -> list[str]:
    return [urls] if isinstance(urls, str) else list(urls)


class _Recorder:
    """The executor's recorder: commits to the run directory and moves the progress bar."""

    def __init__(self, writer: RunWriter, advance: Callable[[bool], None]):
        self.writer, self.advance = writer, advance

    def asking(self) -> None:
        self.writer.asking()

    def response(self, record: ResponseRecord) -> None:
        self.writer.record_response(record)
        self.advance(record.error is not None)

    def graded(self, gradings: list[Grading]) -> None:
        self.writer.record_scores([record for grading in gradings for record in grading.records],
                                  [call for grading in gradings for call in grading.new_judgements])

    def host_lost(self, host: str, why: str, left: int) -> None:
        lost_to(self.writer)(host, why, left)


def lost_to(writer: RunWriter) -> Lost:
    """What is told of a server of a list (the model's or the judge's) lost mid-run: it goes in run.json's history
    and on the console; the run goes on."""
    def lost(host: str, why: str, left: int) -> None:
        writer.host_lost(host, why)
        warned(host, why, left)
    return lost


def cache_of(store: Store | None, runner: Runner, identity: dict[str, Any], writer: RunWriter,
             cache: bool | None) -> RunCache | None:
    """The run's view of the response cache for the model `runner` asks (the model under test, or the judge): None
    when the cache is off for it (`cache`, the setting, as `enabled` reads it for its runner and options: a judge of
    runner=openai beside a model of Ollama is pinned by no digest) or nothing pins the model."""
    on = store is not None and enabled(cache, runner.config.type, runner.config.options)
    pin = model_pin(runner.config.type, identity) if on else None
    if pin is None:
        return None
    return RunCache(store, runner.config.type, pin, runner.request_settings(), runner.config.model,
                    writer.info.run_id, runner.config.max_response_bytes, runner.config.key("max_response_bytes"),
                    runner.format_sent)


